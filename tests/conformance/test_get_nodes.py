"""get_node(), get_nodes(), get_contents(), node_briefs()."""
from __future__ import annotations

from .data import node


def test_missing_retracted_and_included(store):
    store.put_nodes([node(1), node(2)])
    store.retract_nodes(["n2"])
    assert store.get_node("zz") is None and store.get_node("n2") is None
    assert store.get_node("n2", include_retracted=True).retracted_at is not None
    assert sorted(store.get_nodes(["n1", "n2", "zz", "n1"])) == ["n1"]
    both = store.get_nodes(["n1", "n2", "zz"], include_retracted=True)
    assert sorted(both) == ["n1", "n2"] and both["n2"].retracted_at is not None and both["n1"].retracted_at is None
    assert store.get_nodes([]) == {} and store.get_contents([]) == {} and store.node_briefs([]) == {}


def test_many_ids_at_once(store):
    store.put_nodes([node(i) for i in range(2000)])
    ids = [f"n{i}" for i in range(2000)] + ["missing"]
    assert len(store.get_nodes(ids)) == 2000
    contents = store.get_contents(ids)
    assert len(contents) == 2000 and contents["n1999"] == "body 1999"
    assert len(store.node_briefs(ids)) == 2000


def test_briefs(store):
    store.put_nodes([node(1, props={"a": 1}), node(2)])
    assert store.node_briefs(["n1", "n2", "zz"]) == {"n1": ("doc", "body 1", {"a": 1}), "n2": ("doc", "body 2", {})}
    store.retract_nodes(["n2"])
    assert list(store.node_briefs(["n1", "n2"])) == ["n1"]


def test_get_as_of(store):
    store.put_nodes([node(1)])
    then = store.get_node("n1").recorded_at
    store.put_nodes([node(1, content="later")])
    assert store.get_nodes(["n1"], as_of=then)["n1"].content == "body 1"
    assert store.get_contents(["n1"], as_of=then) == {"n1": "body 1"}
    assert store.get_nodes(["n1"], as_of="2000-01-01T00:00:00.000000+00:00") == {}
