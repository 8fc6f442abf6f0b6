"""retract_nodes(): history stays, edges go (both directions or outbound only), a retracted node can come back."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Edge

from .data import node


def test_retract_keeps_history_and_as_of(store):
    store.put_nodes([node(1), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a")])
    before = store.edges(src="n1")[0].recorded_at
    assert store.retract_nodes(["n1"]) == 1
    assert store.get_node("n1") is None
    assert store.get_node("n1", include_retracted=True).retracted_at
    assert store.edges(src="n1") == []
    assert [n.id for n in store.find_nodes(namespace="ns:a", as_of=before)] == ["n1", "n2"]
    assert len(store.edges(src="n1", as_of=before)) == 1
    store.put_nodes([node(1)])  # revive
    assert store.get_node("n1").version == 3


def test_retract_outbound_only_and_revive(store):
    store.put_nodes([node(1), node(2), node(3)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a"), Edge("n3", "rel", "n1", namespace="ns:a")])
    assert store.retract_nodes(["n1", "missing"], edges="outbound") == 1
    assert store.retract_nodes(["n1"]) == 0  # already withdrawn
    assert store.edges(src="n1") == [] and [e.src for e in store.edges(dst="n1")] == ["n3"]
    assert store.node_ids("ns:a") == ["n2", "n3"] and store.node_ids("ns:a", include_retracted=True) == [
        "n1", "n2", "n3"]
    assert store.namespaces() == ["ns:a"] and store.count_nodes() == 2


def test_retracted_text_leaves_the_index_and_the_log_says_so(store):
    store.put_nodes([node(1, content="zebra crossing")])
    c0 = store.change_counter()
    store.retract_nodes(["n1"], actor="alice")
    assert store.text_search("zebra") == []
    (change,) = store.changes_since(c0)
    assert (change.op, change.target, change.namespace, change.actor) == ("node.retract", "n1", "ns:a", "alice")


def test_many_at_once_and_an_unknown_direction(store):
    store.put_nodes([node(i) for i in range(1200)])
    store.put_edges([Edge(f"n{i}", "rel", f"n{i + 1}", namespace="ns:a") for i in range(1199)])
    assert store.retract_nodes([f"n{i}" for i in range(0, 1200, 2)]) == 600
    assert store.count_nodes() == 600 and store.count_edges() == 0
    with pytest.raises(ValidationError):
        store.retract_nodes(["n1"], edges="sideways")
    assert store.get_node("n1") is not None
