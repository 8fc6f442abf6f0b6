"""count_nodes(), count_by_kind(), node_ids(), namespaces()."""
from __future__ import annotations

from .data import node


def test_counts_skip_retracted(store):
    store.put_nodes([node(1, kind="a"), node(2, kind="b"), node(3, kind="b", ns="ns:b"), node(4, ns="ns:c")])
    store.retract_nodes(["n4"])
    assert store.count_nodes() == 3 and store.count_nodes(["ns:a", "ns:b"], kind="b") == 2
    assert store.count_by_kind() == {"a": 1, "b": 2} and store.count_by_kind("ns:b") == {"b": 1}
    assert store.namespaces() == ["ns:a", "ns:b"]  # ns:c holds only a retracted node


def test_node_ids_in_insertion_order(store):
    store.put_nodes([node(3), node(1)])
    store.put_nodes([node(2, ns="ns:b")])
    store.put_nodes([node(3, title="newer")])  # a new version keeps its place
    assert store.node_ids() == ["n3", "n1", "n2"] and store.node_ids(["ns:a"]) == ["n3", "n1"]
    store.retract_nodes(["n1"])
    assert store.node_ids("ns:a") == ["n3"] and store.node_ids("ns:a", include_retracted=True) == ["n3", "n1"]
