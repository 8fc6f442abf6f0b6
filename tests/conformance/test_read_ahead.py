"""READ_AHEAD: read_ahead(), a read started on a second connection while the caller goes on."""
from __future__ import annotations

import pytest

from agentcontext.errors import StoreError
from agentcontext.store import Capability

from . import needs
from .data import node


@needs(Capability.READ_AHEAD)
def test_read_ahead_answers_what_the_store_answers_and_sees_committed_writes(store):
    store.put_nodes([node(i, content=f"invoice {i}") for i in range(5)])
    pending = store.read_ahead(lambda s: sorted(s.get_nodes(["n1", "n3", "nope"])))
    assert pending.result() == ["n1", "n3"]
    again = store.read_ahead(lambda s: s.text_search("invoice", namespace="ns:a", limit=10))
    assert sorted(i for i, _ in again.result()) == sorted(i for i, _ in store.text_search("invoice", namespace="ns:a",
                                                                                        limit=10))


@needs(Capability.READ_AHEAD)
def test_a_read_ahead_inside_a_transaction_sees_its_uncommitted_writes(store):
    with store.transaction():
        store.put_nodes([node(7, content="draft")])
        assert store.read_ahead(lambda s: sorted(s.get_nodes(["n7"]))).result() == ["n7"]


@needs(Capability.READ_AHEAD)
def test_a_failing_read_ahead_raises_its_error_when_asked(store):
    def bad(s):
        raise StoreError("the read failed")

    with pytest.raises(StoreError):
        store.read_ahead(bad).result()
    assert store.read_ahead(lambda s: s.get_nodes([])).result() == {}  # and reads go on
