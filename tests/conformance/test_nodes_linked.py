"""VECTOR_SEARCH: nodes_linked() and nodes_linked_scored(), the neighbourhood a ranking in the store reads around
its candidates (with their vectors' inner products with a query)."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import content_hash
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


@needs(Capability.VECTOR_SEARCH)
def test_nodes_linked_scored_brings_the_inner_products_similarities_gives(store):
    """``nodes_linked_scored``: ``nodes_linked``'s two parts (with ``fields``) and, in the same read, the inner
    products of the query with each node's own vector and the vectors its ``scored`` props name, by hash, equal to
    ``similarities``' (NaN for a hash no vector of that model and dimension has)."""
    rng = np.random.default_rng(5)
    store.put_nodes([node(1, kind="memory", embed_text="t1", props={"pair_hash": "p1"}),
                     node(2, kind="memory", embed_text="t2", props={"prev": "n1", "pair_hash": "p2"}),
                     node(3, kind="memory", embed_text="t3", props={"prev": "n2", "pair_hash": "gone"}),
                     node(4, kind="memory", props={"prev": "n3", "pair_hash": "p4"})])
    values = rng.standard_normal((6, 8)).astype(np.float32)
    store.put_vectors({content_hash("t1"): values[0], content_hash("t2"): values[1], content_hash("t3"): values[2],
                       "p1": values[3], "p2": values[4], "p4": values[5]}, "m")
    store.put_vectors({content_hash("t3"): np.ones(4, dtype=np.float32)}, "m4")  # another model: not scored
    query = rng.standard_normal(8).astype(np.float32)
    fields = ["pair_hash", "created_at"]
    named, followers, scores = store.nodes_linked_scored(query, "m", ["n2"], "prev", "ns:a", "memory", fields,
                                                         ["pair_hash"])
    assert (named, followers) == store.nodes_linked(["n2"], "prev", "ns:a", "memory", fields=fields)
    hashes = [content_hash(f"t{i}") for i in (1, 2, 3)] + ["p1", "p2", "p4", "gone"]
    assert sorted(scores) == sorted(hashes)
    expected = store.similarities(query, "m", hashes)
    assert {h: s for h, s in scores.items() if s == s} == expected and np.isnan(scores["gone"])
    assert store.nodes_linked_scored(query, "m", [], "prev", "ns:a", "memory", fields) == ({}, [], {})
    _, _, other = store.nodes_linked_scored(query, "m4", ["n2"], "prev", "ns:a", "memory", fields, ["pair_hash"])
    assert other.keys() == scores.keys() and all(s != s for s in other.values())  # another dimension: none
    with pytest.raises(ValidationError):
        store.nodes_linked_scored(np.ones((2, 8), dtype=np.float32), "m", ["n2"], "prev", "ns:a", "memory", fields)
    with pytest.raises(ValidationError):
        store.nodes_linked_scored(query, "m", ["n2"], "prev", "ns:a", "memory", fields, ["x') OR 1=1 --"])
