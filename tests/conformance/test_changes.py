"""change_counter() and changes_since(): every write, in commit order."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Edge, content_hash

from .data import node


def test_every_kind_of_write_moves_the_counter(store):
    seen = [store.change_counter()]
    store.put_nodes([node(1, embed_text="x")], actor="alice")
    store.put_edges([Edge("n1", "rel", "n1", namespace="ns:a")])
    store.put_vectors({content_hash("x"): np.ones(2, dtype=np.float32)}, "m")
    store.put_record("k", "a", {})
    store.delete_record("k", "a")
    store.retract_edges([Edge("n1", "rel", "n1").id])
    store.retract_nodes(["n1"])
    store.purge_nodes(["n1"], reason="r")
    store.put_tombstones([{"id": "t"}])
    store.delete_vectors([content_hash("x")])
    changes = store.changes_since(seen[0])
    assert [c.op for c in changes] == ["node.put", "edges.put", "vectors.put", "record.put", "record.delete",
                                       "edges.retract", "node.retract", "node.purge", "tombstones.put"]
    assert [c.seq for c in changes] == sorted(c.seq for c in changes) and store.change_counter() == changes[-1].seq
    put = changes[0]
    assert (put.actor, put.target, put.namespace, put.detail) == ("alice", "n1", "ns:a", {"version": 1, "kind": "doc"})
    assert changes[7].detail == {"reason": "r"}


def test_unchanged_writes_log_nothing_and_paging(store):
    store.put_nodes([node(i) for i in range(5)])
    c0 = store.change_counter()
    store.put_nodes([node(i) for i in range(5)])
    assert store.change_counter() == c0 and store.changes_since(c0) == []
    all_changes = store.changes_since(0)
    assert [c.target for c in store.changes_since(all_changes[1].seq, limit=2)] == ["n2", "n3"]
