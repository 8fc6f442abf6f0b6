"""purge_nodes(), tombstone(), tombstones(), put_tombstones()."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Edge, content_hash

from .data import node


def test_purge_leaves_tombstone_and_nothing_else(store):
    store.put_nodes([node(1, content="secret text", embed_text="secret text"), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a")])
    store.put_vectors({content_hash("secret text"): np.ones(3, dtype=np.float32)}, "m")
    out = store.purge_nodes(["n1"], reason="gdpr")
    assert out["nodes"] == 1 and out["versions"] == 1 and out["edges"] == 1 and out["vectors"] == 1
    assert store.get_node("n1", include_retracted=True) is None and store.node_versions("n1") == []
    assert store.text_search("secret") == [] and store.get_vectors([content_hash("secret text")], "m") == {}
    assert store.tombstone("n1")["reason"] == "gdpr"
    assert [t["id"] for t in store.tombstones("ns:a")] == ["n1"]


def test_briefs_tombstones_and_integrity(store):
    store.put_nodes([node(1, props={"a": 1}), node(2)])
    assert store.node_briefs(["n1", "n2", "zz"]) == {"n1": ("doc", "body 1", {"a": 1}), "n2": ("doc", "body 2", {})}
    store.put_tombstones([{"id": "old", "namespace": "ns:a", "kind": "doc", "purged_at": "2020", "reason": "r"}])
    store.purge_nodes(["n2"], reason="erase", actor="bob")
    assert [t["id"] for t in store.tombstones("ns:a")] == ["old", "n2"]
    assert store.tombstone("n2")["actor"] == "bob" and store.tombstone("n1") is None
    assert store.check_integrity() == "ok"


def test_purge_takes_every_version_and_a_retracted_node(store):
    store.put_nodes([node(1, tags=["t"])])
    store.put_nodes([node(1, content="v2", tags=["t"])])
    store.retract_nodes(["n1"])
    out = store.purge_nodes(["n1", "missing"], actor="alice")
    assert out == {"nodes": 1, "versions": 3, "edges": 0, "vectors": 0}
    assert store.find_nodes(tags=["t"]) == [] and store.tombstone("missing") is None
    assert store.tombstone("n1") == {"id": "n1", "namespace": "ns:a", "kind": "doc",
                                     "purged_at": store.tombstone("n1")["purged_at"], "reason": "", "actor": "alice",
                                     "erasure": None}
    store.put_nodes([node(1)])  # an id may be used again; its tombstone stays
    assert store.get_node("n1").version == 1 and store.tombstone("n1") is not None


def test_put_tombstones_replaces_and_filters(store):
    assert store.put_tombstones([{"id": "a", "namespace": "ns:a", "kind": "doc", "purged_at": "2020-01-01",
                                  "reason": "first", "actor": "x"},
                                 {"id": "b", "namespace": "ns:b", "purged_at": "2021-01-01"}]) == 2
    store.put_tombstones([{"id": "a", "namespace": "ns:a", "kind": "doc", "purged_at": "2022-01-01",
                           "reason": "again", "actor": "y"}])
    assert [(t["id"], t["reason"]) for t in store.tombstones()] == [("b", None), ("a", "again")]
    assert [t["id"] for t in store.tombstones(["ns:a", "ns:b"], ids=["a"])] == ["a"]
    assert store.put_tombstones([]) == 0
