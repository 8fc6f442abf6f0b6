"""schema_version(), info() and the declared capabilities."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Edge, content_hash
from agentcontext.store import Capability, Store

from .data import node


def test_a_new_store_is_at_the_latest_schema_version(store):
    assert isinstance(store, Store)
    assert store.schema_version() == type(store).MIGRATIONS.latest >= 1
    steps = store.info()["migrations"]
    assert [m["version"] for m in steps] == list(range(1, store.schema_version() + 1))
    assert all(m["name"] and m["applied_at"] for m in steps)


def test_capabilities_are_declared_members(store):
    assert isinstance(store.capabilities, frozenset)
    assert all(isinstance(c, Capability) for c in store.capabilities)
    assert store.info()["capabilities"] == sorted(c.value for c in store.capabilities)


def test_info_counts_what_the_store_holds(store):
    store.put_nodes([node(1, embed_text="alpha"), node(2), node(3, ns="ns:b")])
    store.put_nodes([node(1, title="changed", embed_text="alpha")])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a"), Edge("n2", "rel", "n3", namespace="ns:a")])
    store.retract_edges([Edge("n2", "rel", "n3").id])
    store.retract_nodes(["n2"], edges="outbound")
    store.purge_nodes(["n3"], reason="gdpr")
    store.put_vectors({content_hash("alpha"): np.ones(4, dtype=np.float32)}, "m")
    store.put_record("pack", "lib:x", {"a": 1})
    store.append_audit("alice", "doc.put", "lib:x/a", "ok")
    info = store.info()
    assert info["url"] == store.url and info["backend"] == store.backend in ("sqlite", "postgresql")
    assert info["schema_version"] == info["latest_schema_version"] == store.schema_version()
    assert info["counts"] == {"nodes": 1, "retracted_nodes": 1, "node_versions": 4, "edges": 1, "edge_intervals": 1,
                              "vectors": 1, "tombstones": 1, "records": 1, "audit": 1,
                              "changes": len(store.changes_since(0))}
    assert info["namespaces"] == {"ns:a": 1} and info["change_counter"] == store.change_counter()
    sizes = info["sizes"]
    assert sizes["total"] > 0 and sizes["tables"]["nodes"] > 0 and "schema_migrations" in sizes["tables"]
