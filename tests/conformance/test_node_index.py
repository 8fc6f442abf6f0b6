"""node_index(): light rows by key, now and as of a moment."""
from __future__ import annotations

from .data import node


def test_node_index_and_contents(store):
    store.put_nodes([node(2, tokens=7), node(1)])
    rows = store.node_index("ns:a")
    assert [r[0] for r in rows] == ["n1", "n2"] and rows[1][7] == 7
    old = store.node_versions("n1")[0].recorded_at
    store.put_nodes([node(1, content="changed")])
    assert store.get_contents(["n1", "n2"]) == {"n1": "changed", "n2": "body 2"}
    assert store.get_contents(["n1"], as_of=old) == {"n1": "body 1"}


def test_row_shape_and_retracted(store):
    store.put_nodes([node(1, summary="S", tokens=3), node(2, ns="ns:b"), node(3)])
    store.retract_nodes(["n3"])
    (row,) = store.node_index("ns:a")
    got = store.get_node("n1")
    assert row == ("n1", "k1", "doc", "Title 1", "S", 1, got.content_hash, 3)
    assert [r[0] for r in store.node_index(["ns:a", "ns:b"])] == ["n1", "n2"]
