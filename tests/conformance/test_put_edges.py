"""put_edges() and retract_edges(): one edge per (src, type, dst), a change is a new interval."""
from __future__ import annotations

from agentcontext.model import Edge

from .data import node


def test_edges_idempotent_and_intervals(store):
    store.put_nodes([node(1), node(2), node(3)])
    e = Edge("n1", "depends_on", "n2", namespace="ns:a", weight=0.5)
    assert store.put_edges([e]) == 1
    assert store.put_edges([Edge("n1", "depends_on", "n2", namespace="ns:a", weight=0.5)]) == 0
    store.put_edges([Edge("n1", "depends_on", "n3", namespace="ns:a", position=1)])
    assert [x.dst for x in store.edges(src="n1")] == ["n2", "n3"]
    assert store.adjacency("ns:a", types=["depends_on"]) == [("n1", "n2", "depends_on", 0.5, 0),
                                                               ("n1", "n3", "depends_on", 1.0, 1)]
    assert store.retract_edges([e.id]) == 1
    assert [x.dst for x in store.edges(src="n1")] == ["n3"]
    assert store.count_edges("ns:a") == 1 and store.count_edges_by_type("ns:a") == {"depends_on": 1}
    assert [x.dst for x in store.edges(dst="n3", min_weight=0.9)] == ["n3"]


def test_a_change_closes_the_interval_and_props_round_trip(store):
    store.put_edges([Edge("a", "rel", "b", namespace="ns:a", props={"why": "x", "n": [1, 2]})])
    first = store.edges(src="a")[0]
    assert first.props == {"why": "x", "n": [1, 2]} and first.recorded_at and first.retracted_at is None
    assert store.put_edges([Edge("a", "rel", "b", namespace="ns:a", props={"why": "y"})]) == 0  # not new: changed
    (now,) = store.edges(src="a")
    assert now.props == {"why": "y"}
    history = store.edge_history()
    assert len(history) == 2 and history[0].retracted_at == history[1].recorded_at


def test_many_edges_and_retracting_many(store):
    edges = [Edge(f"s{i}", "rel", f"d{i}", namespace="ns:a") for i in range(2000)]
    assert store.put_edges(edges) == 2000 and store.count_edges() == 2000
    assert store.put_edges(edges) == 0
    assert store.retract_edges([e.id for e in edges[:1500]] + ["nope"]) == 1500
    assert store.count_edges() == 500 and store.retract_edges([e.id for e in edges[:1500]]) == 0


def test_writes_are_logged(store):
    c0 = store.change_counter()
    store.put_edges([Edge("a", "rel", "b", namespace="ns:a"), Edge("a", "rel", "c", namespace="ns:a")], actor="x")
    store.put_edges([Edge("a", "rel", "b", namespace="ns:a")])  # unchanged: nothing to log
    store.retract_edges([Edge("a", "rel", "b").id], actor="y")
    assert [(c.op, c.target, c.actor, c.detail.get("count")) for c in store.changes_since(c0)] == [
        ("edges.put", "ns:a", "x", 2), ("edges.retract", "*", "y", 1)]
