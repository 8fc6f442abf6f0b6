"""Capabilities: PERSISTENT (closing and opening again finds everything) and SHARED (several handles at once)."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Edge, content_hash
from agentcontext.store import Capability

from . import needs
from .data import node


@needs(Capability.PERSISTENT)
def test_everything_committed_is_there_after_reopening(store, store_factory):
    store.put_nodes([node(1, embed_text="alpha", tags=["t"]), node(2)])
    store.put_nodes([node(1, content="v2", embed_text="alpha", tags=["t"])])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", weight=0.3)])
    store.put_vectors({content_hash("alpha"): np.arange(3, dtype=np.float32)}, "m")
    store.purge_nodes(["n2"], reason="gdpr")
    store.put_record("pack", "lib:x", {"a": 1})
    store.append_audit("alice", "doc.put", "lib:x/a", "ok")
    before = (store.info()["counts"], store.change_counter(), store.schema_version())
    store.close()
    again = store_factory()
    try:
        assert (again.info()["counts"], again.change_counter(), again.schema_version()) == before
        assert [v.content for v in again.node_versions("n1")] == ["body 1", "v2"]
        assert again.load_vectors("m")[1].tolist() == [[0.0, 1.0, 2.0]] and again.tombstone("n2")["reason"] == "gdpr"
        assert again.get_record("pack", "lib:x") == {"a": 1} and again.audit()[0]["principal"] == "alice"
        assert [n.id for n in again.find_nodes(tags=["t"])] == ["n1"] and again.text_search("v2")[0][0] == "n1"
        assert again.check_integrity() == "ok"
    finally:
        again.close()


@needs(Capability.SHARED)
def test_two_handles_see_each_others_commits(store, store_factory):
    other = store_factory()
    try:
        store.put_nodes([node(1)])
        other.put_nodes([node(2)])
        assert sorted(store.get_nodes(["n1", "n2"])) == sorted(other.get_nodes(["n1", "n2"])) == ["n1", "n2"]
        assert store.change_counter() == other.change_counter() == 2
        other.put_nodes([node(1, title="from the other")])
        assert store.get_node("n1").title == "from the other" and store.get_node("n1").version == 2
    finally:
        other.close()
