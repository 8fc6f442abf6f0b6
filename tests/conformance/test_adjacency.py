"""The bulk edge reads engines use: adjacency(), edge_columns(), edges_touching(), timed_edges(), edge_history()."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Edge

from .data import node


def test_edge_columns_and_edges_touching(store):
    store.put_nodes([node(1), node(2), node(3)])
    store.put_edges([Edge("n1", "b", "n3", namespace="ns:a", position=1, weight=0.2),
                     Edge("n1", "a", "n2", namespace="ns:a", position=2, valid_until="2030"),
                     Edge("n2", "a", "n3", namespace="ns:b"),
                     Edge("n3", "a", "n1", namespace="ns:a")])
    store.retract_edges([Edge("n3", "a", "n1").id])
    assert sorted(store.edge_columns("ns:a")) == [("n1", "n2", "a", 1.0, 2, None, "2030"),
                                                  ("n1", "n3", "b", 0.2, 1, None, None)]
    assert len(store.edge_columns()) == 3
    assert store.edges_touching(["n1", "n2"]) == [("n1", "n3", "b", 0.2, "ns:a", None, None),
                                                  ("n1", "n2", "a", 1.0, "ns:a", None, "2030"),
                                                  ("n2", "n3", "a", 1.0, "ns:b", None, None)]
    assert [r[0] for r in store.edges_touching(["n3"], side="dst", types=["a"])] == ["n2"]
    assert store.edges_touching(["n1"], min_weight=0.5) == [("n1", "n2", "a", 1.0, "ns:a", None, "2030")]
    with pytest.raises(ValidationError):
        store.edges_touching(["n1"], side="both")


def test_adjacency_now_and_then(store):
    store.put_edges([Edge("a", "x", "b", namespace="ns:a", weight=0.5), Edge("a", "y", "c", namespace="ns:a",
                                                                            position=1)])
    then = store.edges(src="a")[0].recorded_at
    store.retract_edges([Edge("a", "x", "b").id])
    store.put_edges([Edge("b", "x", "c", namespace="ns:b", valid_until="2001-01-01T00:00:00.000000+00:00")])
    assert store.adjacency() == [("a", "c", "y", 1.0, 1), ("b", "c", "x", 1.0, 0)]
    assert store.adjacency(as_of=then) == [("a", "b", "x", 0.5, 0), ("a", "c", "y", 1.0, 1)]
    assert store.adjacency("ns:a", types=["x"], as_of=then) == [("a", "b", "x", 0.5, 0)]
    assert store.adjacency(valid_at="2005-01-01T00:00:00.000000+00:00") == [("a", "c", "y", 1.0, 1)]
    assert store.timed_edges() == [("b", "c", "x", None, "2001-01-01T00:00:00.000000+00:00")]
    assert store.timed_edges("ns:a") == []


def test_edge_history_keeps_every_interval_in_order(store):
    store.put_edges([Edge("a", "x", "b", namespace="ns:a", weight=0.1)])
    store.put_edges([Edge("a", "x", "b", namespace="ns:a", weight=0.2)])
    store.put_edges([Edge("c", "x", "d", namespace="ns:b")])
    store.retract_edges([Edge("c", "x", "d").id])
    history = store.edge_history()
    assert [(e.src, e.weight, e.retracted_at is not None) for e in history] == [
        ("a", 0.1, True), ("a", 0.2, False), ("c", 1.0, True)]
    assert [e.src for e in store.edge_history(["ns:b"])] == ["c"]


def test_frontier_of_many_ids(store):
    store.put_edges([Edge(f"s{i:04d}", "rel", f"d{i % 7}", namespace="ns:a", position=i % 3) for i in range(1500)])
    rows = store.edges_touching([f"s{i:04d}" for i in range(1500)])
    assert len(rows) == 1500 and rows == sorted(rows, key=lambda r: (r[0], r[1]))
    assert len(store.edges_touching([f"d{i}" for i in range(7)], side="dst")) == 1500
