"""transaction(): all or nothing, nested calls join the outer one, one moment per transaction."""
from __future__ import annotations

import pytest

from agentcontext.model import Edge
from agentcontext.store import Capability

from . import needs
from .data import node


def test_all_or_nothing(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_nodes([node(1)])
            store.put_edges([Edge("n1", "rel", "n9", namespace="ns:a")])
            raise RuntimeError("boom")
    assert store.get_node("n1") is None and store.edges(src="n1") == []


def test_same_transaction_same_moment(store):
    with store.transaction():
        store.put_nodes([node(1)])
        store.put_edges([Edge("n1", "rel", "n1", namespace="ns:a")])
    assert store.get_node("n1").recorded_at == store.edges(src="n1")[0].recorded_at


def test_nested_transaction_joins_the_outer_one(store):
    with store.transaction():
        store.put_nodes([node(1)])
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.put_nodes([node(2)])
                raise RuntimeError("inner")
        store.put_nodes([node(3)])
    assert sorted(store.get_nodes(["n1", "n2", "n3"])) == ["n1", "n2", "n3"]  # no savepoint: the outer decides
    assert len({store.get_node(i).recorded_at for i in ["n1", "n2", "n3"]}) == 1
    with pytest.raises(RuntimeError):
        with store.transaction():
            with store.transaction():
                store.put_nodes([node(4)])
            raise RuntimeError("outer")
    assert store.get_node("n4") is None


def test_records_and_audit_roll_back_too(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_record("pack", "lib:x", {"a": 1})
            store.append_audit("alice", "doc.put", "lib:x/a", "ok")
            raise RuntimeError("boom")
    assert store.get_record("pack", "lib:x") is None and store.audit() == [] and store.change_counter() == 0


@needs(Capability.SHARED)
def test_outermost_transaction_commits_and_others_see_nothing_before(store, store_factory):
    other = store_factory()
    try:
        with store.transaction():
            store.put_nodes([node(1)])
            with store.transaction():  # joins the outer one
                store.put_edges([Edge("n1", "rel", "n1", namespace="ns:a")])
            assert other.get_node("n1") is None and other.edges(src="n1") == []
        assert other.get_node("n1").version == 1 and len(other.edges(src="n1")) == 1
        assert other.get_node("n1").recorded_at == other.edges(src="n1")[0].recorded_at
    finally:
        other.close()
