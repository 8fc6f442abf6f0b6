"""edges(), count_edges(), count_edges_by_type(): filters and paging."""
from __future__ import annotations

from agentcontext.model import Edge


def _graph(store):
    store.put_edges([
        Edge("a", "x", "b", namespace="ns:a", weight=0.2, position=1),
        Edge("a", "y", "c", namespace="ns:a", weight=0.8, position=0),
        Edge("b", "x", "c", namespace="ns:b", valid_from="2030-01-01T00:00:00.000000+00:00"),
        Edge("c", "x", "a", namespace="ns:b"),
    ])


def test_filters(store):
    _graph(store)
    assert [(e.src, e.dst) for e in store.edges(src="a")] == [("a", "c"), ("a", "b")]  # by position
    assert [(e.src, e.dst) for e in store.edges(src=["a", "b"], type="x")] == [("a", "b"), ("b", "c")]
    assert [e.src for e in store.edges(dst="c")] == ["a", "b"]
    assert [e.src for e in store.edges(type=["y"], namespace="ns:a")] == ["a"]
    assert [e.dst for e in store.edges(namespace=["ns:b"])] == ["c", "a"]
    assert [e.dst for e in store.edges(min_weight=0.5)] == ["c", "c", "a"]
    assert [e.src for e in store.edges(valid_at="2020-01-01T00:00:00.000000+00:00")] == ["a", "a", "c"]
    assert store.edges(src="nobody") == []


def test_paging(store):
    _graph(store)
    everything = store.edges()
    assert [e.id for e in store.edges(limit=2)] == [e.id for e in everything[:2]]
    assert [e.id for e in store.edges(offset=1, limit=2)] == [e.id for e in everything[1:3]]
    assert [e.id for e in store.edges(offset=3)] == [e.id for e in everything[3:]]


def test_counts(store):
    _graph(store)
    store.retract_edges([Edge("c", "x", "a").id])
    assert store.count_edges() == 3 and store.count_edges("ns:b") == 1 and store.count_edges(type="x") == 2
    assert store.count_edges_by_type() == {"x": 2, "y": 1} and store.count_edges_by_type(["ns:a"]) == {"x": 1, "y": 1}
    assert [e.src for e in store.edges(dst="a")] == []
    assert [e.src for e in store.edges(dst="a", include_retracted=True)] == ["c"]  # what an erasure must reach
    assert len(store.edges(include_retracted=True)) == 4


def test_more_ids_than_one_statement_takes(store):
    store.put_edges([Edge(f"s{i:04d}", "rel", "hub", namespace="ns:a") for i in range(1500)])
    srcs = [f"s{i:04d}" for i in range(1500)]
    found = store.edges(src=srcs)
    assert len(found) == 1500 and [e.src for e in found] == srcs
    assert [e.src for e in store.edges(src=srcs, offset=1000, limit=3)] == srcs[1000:1003]
    assert len(store.edges(src=srcs, dst=["hub"])) == 1500 and len(store.edges(src=["s0001"], dst=srcs)) == 0
