"""node_versions(), node_version() and the graph as it stood (as_of)."""
from __future__ import annotations

from agentcontext.model import Edge

from .data import node


def test_as_of_sees_old_versions_and_intervals(store):
    store.put_nodes([node(1, tags=["x", "y"]), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", weight=0.5)])
    t1 = store.edges(src="n1")[0].recorded_at
    store.put_nodes([node(1, title="Second", tags=["x"])])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", weight=0.9)])  # same edge, new interval
    assert store.get_node("n1", as_of=t1).title == "Title 1" and store.get_node("n1").title == "Second"
    assert [n.id for n in store.find_nodes(tags=["x", "y"])] == []
    assert [e.weight for e in store.edges(src="n1", as_of=t1)] == [0.5]
    assert [e.weight for e in store.edges(src="n1")] == [0.9]
    history = store.edge_history("ns:a")
    assert [(e.weight, e.retracted_at is None) for e in history] == [(0.5, False), (0.9, True)]
    assert store.node_index("ns:a", as_of=t1)[0][3] == "Title 1"
    assert store.get_node("n3", as_of=t1) is None


def test_every_version_is_kept_with_its_fields(store):
    store.put_nodes([node(1, tags=["a"])], actor="alice")
    store.put_nodes([node(1, content="two", tags=["b"])], actor="bob")
    store.retract_nodes(["n1"], actor="carol")
    versions = store.node_versions("n1")
    assert [(v.version, v.content, v.tags) for v in versions] == [(1, "body 1", ["a"]), (2, "two", ["b"]),
                                                                   (3, "two", ["b"])]
    assert versions[2].retracted_at is not None and versions[0].retracted_at is None
    assert store.node_version("n1", 2).content == "two" and store.node_version("n1", 9) is None
    assert store.node_versions("missing") == []
