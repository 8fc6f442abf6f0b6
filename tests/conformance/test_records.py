"""put_record(), put_records(), get_record(), list_records(), delete_record()."""
from __future__ import annotations

from .data import node


def test_records_audit_changes(store):
    c0 = store.change_counter()
    store.put_record("pack", "lib:x", {"a": 1})
    assert store.get_record("pack", "lib:x") == {"a": 1}
    assert store.list_records("pack", prefix="lib:") == [("lib:x", {"a": 1})]
    assert store.delete_record("pack", "lib:x") and store.get_record("pack", "lib:x") is None
    store.append_audit("alice", "doc.put", "lib:x/a", "ok", {"v": 1})
    store.append_audit("bob", "doc.put", "lib:x/a", "denied")
    assert [a["principal"] for a in store.audit(principal="bob")] == ["bob"]
    store.put_nodes([node(1)])
    changes = store.changes_since(c0)
    assert store.change_counter() > c0 and [c.op for c in changes][-1] == "node.put"
    assert store.check_integrity() == "ok"


def test_records_audit_changes_paging(store):
    for k in ["lib:b", "lib:a", "pkg:c", "lib:a2"]:
        store.put_record("pack", k, {"k": k})
    store.put_record("pack", "lib:a", {"k": "again"})
    assert [k for k, _ in store.list_records("pack")] == ["lib:a", "lib:a2", "lib:b", "pkg:c"]
    assert store.get_record("pack", "lib:a") == {"k": "again"} and not store.delete_record("pack", "nope")
    for i in range(3):
        store.append_audit("alice", "doc.read", f"t{i}", "ok")
    rows = store.audit(principal="alice")
    assert [r["target"] for r in store.audit(limit=2)] == ["t1", "t2"]  # the latest, oldest first
    assert [r["target"] for r in store.audit(since=rows[2]["at"])] == ["t2"]
    c0 = store.change_counter()
    store.put_nodes([node(1), node(2)])
    assert [c.target for c in store.changes_since(c0, limit=1)] == ["n1"]


def test_kinds_are_separate_and_values_keep_their_shape(store):
    value = {"nested": {"list": [1, 2.5, None, "é"]}, "flag": True}
    store.put_record("grant", "bob\x1flib:*", value, actor="alice")
    store.put_record("token", "bob\x1flib:*", {"other": 1})
    assert store.get_record("grant", "bob\x1flib:*") == value
    assert store.list_records("grant") == [("bob\x1flib:*", value)] and store.list_records("nothing") == []
    assert store.list_records("grant", prefix="zzz") == []
    (change,) = [c for c in store.changes_since(0) if c.actor == "alice"]
    assert (change.op, change.target) == ("record.put", "grant/bob\x1flib:*")


def test_put_records_is_put_record_of_each(store):
    store.put_record("head", "a", {"id": "old"})
    c0 = store.change_counter()
    store.put_records("head", {"a": {"id": "x"}, "b\x1fc": {"id": "y", "n": [1, 2]}}, actor="bob")
    assert store.list_records("head") == [("a", {"id": "x"}), ("b\x1fc", {"id": "y", "n": [1, 2]})]
    assert [(c.op, c.target, c.actor, c.detail) for c in store.changes_since(c0)] == [
        ("record.put", "head/a", "bob", {}), ("record.put", "head/b\x1fc", "bob", {})]
    store.put_records("head", {})
    assert store.change_counter() == c0 + 2


def test_erase_records_takes_their_keys_out_of_the_change_log(store):
    """erase_records(): the records go, and the change log's rows about them keep what was done when by whom, not
    the key (a key may name an erased subject: a conversation's head record, memory/chain.py)."""
    store.put_records("head", {"ns\x1fjoe-card-4242": {"id": "m1"}, "ns\x1fother": {"id": "m2"}}, actor="bob")
    store.put_record("head", "ns\x1fjoe-card-4242", {"id": "m3"}, actor="bob")
    c0 = store.change_counter()
    assert store.erase_records("head", ["ns\x1fjoe-card-4242", "ns\x1fnever"], actor="eraser") == 3  # 1 + 2 rows
    assert store.list_records("head") == [("ns\x1fother", {"id": "m2"})]
    changes = store.changes_since(0)
    assert not any("joe-card" in c.target for c in changes)
    assert [(c.op, c.target, c.actor) for c in changes if c.op.startswith("record.")] == [
        ("record.put", "head/(erased)", "bob"), ("record.put", "head/ns\x1fother", "bob"),
        ("record.put", "head/(erased)", "bob"), ("record.erase", "head/(erased)", "eraser")]
    assert store.change_counter() == c0 + 1
    assert store.erase_records("head", ["ns\x1fjoe-card-4242"]) == 0 and store.change_counter() == c0 + 1
