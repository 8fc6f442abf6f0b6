"""erased(), purge_history(), redact_audit(), scrub(), forget_statistics() and the erasure mark on tombstones."""
from __future__ import annotations

import numpy as np

from agentcontext.model import content_hash

from .data import node


def test_an_erasure_marks_its_tombstones_and_erased_says_which(store):
    store.put_nodes([node(1), node(2), node(3)])
    store.purge_nodes(["n1"], reason="gdpr", erasure="customer-9")
    store.purge_nodes(["n2"], reason="forget")  # not an erasure: an import may bring it back
    assert store.tombstone("n1")["erasure"] == "customer-9" and store.tombstone("n2")["erasure"] is None
    assert store.erased(["n1", "n2", "n3", "customer-9", "nobody"]) == {"n1", "customer-9"}
    assert store.erased([]) == set()
    store.put_tombstones([{"id": "n1", "namespace": "ns:a", "purged_at": "2030", "reason": "graph.clear"}])
    assert store.tombstone("n1")["erasure"] == "customer-9"  # a later purge keeps the erasure's mark
    store.put_tombstones([{"id": "x", "namespace": "ns:a", "purged_at": "2030", "erasure": "e"}])
    assert store.erased(["x"]) == {"x"}


def test_purge_history_keeps_only_the_live_version(store):
    store.put_nodes([node(1, content="first secret", embed_text="first secret")])
    store.put_nodes([node(1, content="second", embed_text="second")])
    store.put_nodes([node(2, content="first secret", embed_text="first secret")])  # shares the old vector
    store.put_nodes([node(3, content="only", embed_text="only")])
    store.put_vectors({content_hash(t): np.ones(3, dtype=np.float32) for t in ("first secret", "second", "only")},
                      "m")
    out = store.purge_history(["n1", "n3", "missing"])
    assert out == {"versions": 1, "vectors": 0}  # n2 still uses the old text's vector
    assert [v.version for v in store.node_versions("n1")] == [2] and store.get_node("n1").content == "second"
    assert [v.version for v in store.node_versions("n3")] == [1]
    store.put_nodes([node(2, content="other", embed_text="other")])
    assert store.purge_history(["n2"]) == {"versions": 1, "vectors": 1}
    assert store.get_vectors([content_hash("first secret")], "m") == {}
    assert store.check_integrity() == "ok"


def test_redact_audit_keeps_who_what_when_but_not_the_detail(store):
    store.append_audit("alice", "policy.check", "dec_1", "violation", {"reasoning": "private words"})
    store.append_audit("alice", "erase_entity", "dec_1", "complete", {"entity_id": "dec_1"})
    store.append_audit("bob", "doc.put", "lib:a/x", "ok", {"version": 2})
    assert store.redact_audit(["dec_1", "nobody"], {"redacted": "erasure"}) == 1
    rows = {(r["action"], r["target"]): r for r in store.audit()}
    assert rows[("policy.check", "dec_1")]["detail"] == {"redacted": "erasure"}
    assert rows[("policy.check", "dec_1")]["principal"] == "alice" and rows[("policy.check", "dec_1")]["at"]
    assert rows[("erase_entity", "dec_1")]["detail"] == {"entity_id": "dec_1"}  # receipts stay
    assert rows[("doc.put", "lib:a/x")]["detail"] == {"version": 2}


def test_scrub_says_what_it_did_and_what_may_remain(store):
    store.put_nodes([node(1, content="gone soon")])
    store.purge_nodes(["n1"])
    out = store.scrub(["nodes", "node_versions"])
    assert out["backend"] == store.backend and out["status"] == "clean"
    assert out["may_remain"] and all(isinstance(x, str) for x in out["may_remain"])
    assert store.get_node("n1") is None and store.check_integrity() == "ok"
    stats = store.forget_statistics(["nodes", "node_versions"])  # the planner's samples (PostgreSQL's ANALYZE)
    assert isinstance(stats["statistics"], str) and all(isinstance(x, str) for x in stats["may_remain"])
    assert stats["held"] is False  # no reader older than the step
    assert store.count_nodes() == 0 and store.check_integrity() == "ok"


def test_find_by_props_matches_a_value_or_a_list_element(store):
    store.put_nodes([node(1, props={"metadata": {"entities": ["c-1", "c-2"]}}),
                     node(2, props={"metadata": {"entity_id": "c-1"}}),
                     node(3, props={"metadata": {"entities": "c-1"}}),
                     node(4, ns="ns:b", kind="memory", props={"metadata": {"entities": ["c-1"]}}),
                     node(5, props={"metadata": {"entities": ["c-10"]}, "other": "c-1"}), node(6)])
    assert store.find_by_props(["metadata", "entities"], "c-1") == ["n1", "n3", "n4"]
    assert store.find_by_props(["metadata", "entity_id"], "c-1") == ["n2"]
    assert store.find_by_props(["metadata", "entities"], "c-1", namespace="ns:b", kind="memory") == ["n4"]
    assert store.find_by_props(["metadata", "entities"], "c-1", kind="doc", namespace="ns:a") == ["n1", "n3"]
    store.retract_nodes(["n1"])
    assert store.find_by_props(["metadata", "entities"], "c-1") == ["n3", "n4"]
    assert store.find_by_props(["metadata", "entities"], "c-1", include_retracted=True) == ["n1", "n3", "n4"]
    import pytest

    from agentcontext.errors import ValidationError

    with pytest.raises(ValidationError):
        store.find_by_props(["metadata", "x') OR 1=1 --"], "c-1")


def test_nodes_holding_scans_every_version_live_or_retracted_and_props(store):
    store.put_nodes([node(1, content="Jane   Roe called"), node(2, content="nothing here"),
                     node(3, props={"metadata": {"customer_name": "JANE ROE"}}), node(4, content="Roe, Jane")])
    store.put_nodes([node(2, content="now about Jane Roe")])
    store.put_nodes([node(2, content="nothing again")])  # only a superseded version names her
    store.put_nodes([node(5, content="jane roe was here")])
    store.retract_nodes(["n5"])
    assert store.nodes_holding(["jane roe"]) == ["n1", "n3", "n2", "n5"]  # by the first version holding one
    assert store.nodes_holding(["Jane Roe", "roe jane"]) == ["n1", "n3", "n4", "n2", "n5"]
    assert store.nodes_holding(["x' OR 1=1 --"]) == [] and store.nodes_holding([" "]) == []
    store.purge_nodes(["n2"])
    assert store.nodes_holding(["jane roe"]) == ["n1", "n3", "n5"]
