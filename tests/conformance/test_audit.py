"""append_audit() and audit()."""
from __future__ import annotations


def test_audit_limit_keeps_the_latest(store):
    for i in range(5):
        store.append_audit("alice", f"act{i}", "t", "ok")
    assert [a["action"] for a in store.audit(limit=2)] == ["act3", "act4"]
    assert len(store.audit()) == 5


def test_entries_carry_everything_and_filter_together(store):
    store.append_audit("alice", "doc.put", "lib:x/a", "ok", {"version": 2, "why": ["a", "b"]})
    store.append_audit("bob", "doc.read", "lib:x/a", "denied")
    store.append_audit("alice", "doc.read", "lib:x/b", "ok")
    first, second, third = store.audit()
    assert first["seq"] < second["seq"] < third["seq"] and first["at"] <= second["at"] <= third["at"]
    assert (first["principal"], first["action"], first["target"], first["outcome"], first["detail"]) == (
        "alice", "doc.put", "lib:x/a", "ok", {"version": 2, "why": ["a", "b"]})
    assert second["detail"] == {}
    assert [a["target"] for a in store.audit(principal="alice", limit=1)] == ["lib:x/b"]
    assert store.audit(principal="carol") == [] and store.change_counter() == 0  # audit is not a change
