"""VECTOR_SEARCH: nodes_linked(), the neighbourhood a ranking in the store reads around its candidates."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError
from agentcontext.store import Capability

from . import needs
from .data import node


@needs(Capability.VECTOR_SEARCH)
def test_nodes_linked_reads_the_named_nodes_and_two_levels_of_followers(store):
    # a chain n1 <- n2 <- n3 <- n4 <- n5 (each names the one before in prev), n6 a second follower of n2,
    # n7 in another namespace naming n2, n8 a doc naming n2, n9 retracted naming n3
    store.put_nodes([node(1, kind="memory"), node(2, kind="memory", props={"prev": "n1"}),
                     node(3, kind="memory", props={"prev": "n2"}), node(4, kind="memory", props={"prev": "n3"}),
                     node(5, kind="memory", props={"prev": "n4"}), node(6, kind="memory", props={"prev": "n2"}),
                     node(7, ns="ns:b", kind="memory", props={"prev": "n2"}), node(8, props={"prev": "n2"}),
                     node(9, kind="memory", props={"prev": "n3"})])
    store.retract_nodes(["n9"])
    named, followers = store.nodes_linked(["n3", "n3", "nope", "n7", "n8"], "prev", "ns:a", "memory")
    assert sorted(named) == ["n2", "n3"]  # n3 and the turn it names, nothing of another namespace or kind
    assert named["n3"].content == "body 3" and named["n2"].props == {"prev": "n1"}
    # followers of n2 and n3 (n3, n6, n4), then of those (n4 again, n5), once each, in insertion order
    assert [n.id for n in followers] == ["n3", "n4", "n5", "n6"] and all(n.content == "" for n in followers)
    assert store.nodes_linked([], "prev", "ns:a", "memory") == ({}, [])
    named, followers = store.nodes_linked(["n5"], "prev", "ns:a", "memory")
    assert sorted(named) == ["n4", "n5"] and [n.id for n in followers] == ["n5"]  # nothing follows the last turn
    with pytest.raises(ValidationError):
        store.nodes_linked(["n1"], "prev') OR 1=1 --", "ns:a", "memory")


@needs(Capability.VECTOR_SEARCH)
def test_nodes_linked_brings_only_the_props_asked_for(store):
    """``fields``: each node's props hold only the props the caller reads (set ones), so no other JSON is decoded;
    a value that is neither a string nor null (a number, a list) brings the node's props whole, so nothing the
    caller reads changes type."""
    store.put_nodes([node(1, kind="memory", props={"created_at": "2024-01-01", "metadata": {"a": 1}}),
                     node(2, kind="memory", props={"prev": "n1", "pair_hash": "h2", "user_id": None,
                                                    "metadata": {"b": [1, 2]}}),
                     node(3, kind="memory", props={"prev": "n2", "conversation_id": 7, "metadata": {"c": 3}}),
                     node(4, kind="memory", props={"prev": "n3", "pair_hash": "h4"})])
    fields = ["pair_hash", "created_at", "conversation_id", "user_id"]
    named, followers = store.nodes_linked(["n2", "n4"], "prev", "ns:a", "memory", fields=fields)
    assert sorted(named) == ["n1", "n2", "n3", "n4"]
    assert named["n1"].props == {"created_at": "2024-01-01"} and named["n1"].content == "body 1"
    whole = store.get_node("n1")  # the columns a ranking reads, the others left empty
    assert [(n.id, n.kind, n.namespace, n.key, n.title, n.summary, n.embed_hash) for n in [named["n1"], whole]] == [
        (whole.id, whole.kind, whole.namespace, whole.key, whole.title, whole.summary, whole.embed_hash)] * 2
    assert (named["n1"].recorded_at, named["n1"].content_hash, named["n1"].tags) == (None, None, [])
    assert named["n2"].props == {"prev": "n1", "pair_hash": "h2"}
    assert named["n3"].props == {"prev": "n2", "conversation_id": 7, "metadata": {"c": 3}}  # a number: whole
    assert named["n4"].props == {"prev": "n3", "pair_hash": "h4"}
    assert [n.id for n in followers] == ["n2", "n3", "n4"] and all(n.content == "" for n in followers)
    assert {n.id: n.props for n in followers} == {i: named[i].props for i in ("n2", "n3", "n4")}
    _, light = store.nodes_linked(["n1"], "prev", "ns:a", "memory", fields=["pair_hash"])  # followers read anew
    assert [(n.id, n.props) for n in light] == [("n2", {"prev": "n1", "pair_hash": "h2"}), ("n3", {"prev": "n2"})]
    assert store.nodes_linked(["n2"], "prev", "ns:a", "memory", fields=["metadata"])[0]["n2"].props == {
        "prev": "n1", "pair_hash": "h2", "user_id": None, "metadata": {"b": [1, 2]}}
    with pytest.raises(ValidationError):
        store.nodes_linked(["n1"], "prev", "ns:a", "memory", fields=["x') OR 1=1 --"])
