"""A PostgreSQL retrieve's independent reads at the same time (issue 23 s3): the dense pool, the named speakers'
nearest and the keyword counts start on the store's second connection (store/pg_parallel.py) on a guess of the names
the query holds (memory/server_gather.py) while the text search runs; the hits, their order, scores and signals are
those of the sequential chain. The second connection reads outside transactions only, closes with the store, and a
failure on it is our StoreError."""
from __future__ import annotations

import json
import time

import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError, StoreError
from agentcontext.eval_locomo import turn_text, turns
from agentcontext.memory import AgentMemory, server_gather, server_search
from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

from .test_locomo import DEV

pytestmark = pytest.mark.postgres
TURNS = 60


@pytest.fixture(scope="module")
def memory(pg_server):
    """A PostgreSQL memory holding 60 turns of LoCoMo conv-30 (two speakers), and the questions about them."""
    sample = next(s for s in json.loads(DEV.read_text()) if s["sample_id"] == "conv-30")
    items = [{"content": turn_text(t), "user_id": t.get("speaker"), "created_at": t["created_at"],
              "metadata": {"speaker": t.get("speaker", "")}} for t in turns(sample)[:TURNS]]
    ws = Workspace(open_store(pg_server.url("read_ahead")))
    mem = AgentMemory(workspace=ws, max_memory_size=None)
    mem.batch_store(items)
    questions = [q["question"] for q in sample["qa"] if q.get("category") != 5][:24]
    yield mem, questions
    ws.close()


def answers(mem: AgentMemory, questions: list[str]) -> list[list[tuple]]:
    return [[(r["id"], r["score"], json.dumps(r["signals"], sort_keys=True)) for r in mem.retrieve(q, max_results=10)]
            for q in questions]


def test_the_concurrent_ranking_is_the_sequential_one(memory, monkeypatch):
    mem, questions = memory
    store = mem.workspace.store
    named = [q for q in questions if any(n in q for n in ("Jon", "Gina"))]
    assert len(named) >= 5 and len(named) < len(questions)  # both kinds of query
    mem.workspace._held.pop("memory:speakers", None)  # no speaker heard yet: the first named query's guess misses
    concurrent = answers(mem, questions)
    assert store._ahead.opened  # the reads ran on the second connection
    assert {"Jon", "Gina"} <= mem.workspace.held("memory:speakers", dict)[mem.namespace]
    again = answers(mem, questions)  # now every guess holds the speakers
    monkeypatch.setattr(store, "READ_AHEAD", False)  # the sequential chain, on the one connection
    sequential = answers(mem, questions)
    assert concurrent == sequential and again == sequential
    assert all(len(a) == 10 for a in sequential)


def test_the_text_hits_inner_products_read_during_the_walk_change_no_hit_or_score(memory, monkeypatch):
    mem, questions = memory
    store = mem.workspace.store
    early = []
    during_walk = server_search._Query._sims_early
    monkeypatch.setattr(server_search._Query, "_sims_early", lambda self: early.append(1) or during_walk(self))
    monkeypatch.setattr(server_gather.Reads, "running", lambda self, label: label in self._started)  # walk in flight
    read_early = answers(mem, questions)
    assert len(early) >= len(questions)  # a round of each query read them during the walk
    monkeypatch.setattr(server_search, "EARLY_SIMS", False)
    monkeypatch.setattr(store, "READ_AHEAD", False)  # the sequential chain: every inner product after the walk
    assert answers(mem, questions) == read_early


def test_reads_ahead_go_to_the_second_connection_and_see_what_is_committed(memory):
    mem, _ = memory
    store = mem.workspace.store
    node = Node(id="ahead-1", kind="note", namespace="ahead", key="k1", content="committed before the read")
    store.put_nodes([node])
    pid = store._read("SELECT pg_backend_pid()")[0][0]
    assert store.read_ahead(lambda s: s._read("SELECT pg_backend_pid()")).result()[0][0] != pid
    found = store.read_ahead(lambda s: s.get_nodes(["ahead-1"])).result()
    assert found["ahead-1"].content == "committed before the read"


def test_inside_a_transaction_a_read_ahead_sees_the_uncommitted_writes(memory):
    mem, _ = memory
    store = mem.workspace.store
    with store.transaction():
        store.put_nodes([Node(id="ahead-2", kind="note", namespace="ahead", key="k2", content="not committed yet")])
        pid = store._read("SELECT pg_backend_pid()")[0][0]
        here = store.read_ahead(lambda s: s._read("SELECT pg_backend_pid()")).result()
        assert here[0][0] == pid  # the main connection
        assert store.read_ahead(lambda s: s.get_nodes(["ahead-2"])).result()["ahead-2"].content == "not committed yet"
    assert "ahead-2" in store.read_ahead(lambda s: s.get_nodes(["ahead-2"])).result()


def test_a_failure_on_the_second_connection_is_a_store_error_and_it_reads_on(memory):
    mem, _ = memory
    store = mem.workspace.store
    failed = store.read_ahead(lambda s: s._read("SELECT no_such_column FROM nodes"))
    with pytest.raises(StoreError, match="second connection"):
        failed.result()
    assert store.read_ahead(lambda s: s.count_nodes("ahead")).result() >= 1


def test_closing_the_store_closes_both_connections(pg_server):
    store = open_store(pg_server.url("read_ahead_close"))
    assert store.read_ahead(lambda s: s.count_nodes()).result() == 0
    second = store._ahead._store
    assert second is not None and not second._db.closed
    store.close()
    assert store._db.closed and second._db.closed
    with pytest.raises(StoreError, match="closed"):
        store.read_ahead(lambda s: s.count_nodes())


def test_a_read_queued_when_the_store_closes_is_a_store_error(pg_server):
    store = open_store(pg_server.url("read_ahead_close"))
    store.read_ahead(lambda s: s.count_nodes()).result()  # the second connection open
    running = store.read_ahead(lambda s: s._read("SELECT pg_sleep(0.5), 1"))
    queued = store.read_ahead(lambda s: s.count_nodes())
    time.sleep(0.1)  # the first read under way
    store.close()  # waits for the running read, drops the queued one
    assert running.result()[0][1] == 1
    with pytest.raises(StoreError, match="closed before this read ran"):
        queued.result()


def test_a_principal_without_read_is_refused_before_any_read(memory):
    mem, questions = memory
    ws = mem.workspace
    access.grant(ws, "writer-only", "memory:other", "write")  # the workspace is multi-user from here
    try:
        stranger = AgentMemory(workspace=ws, max_memory_size=None, principal="writer-only")
        with pytest.raises(AccessDeniedError):
            stranger.retrieve(questions[0], max_results=5)
    finally:
        access.revoke(ws, "writer-only", "memory:other")


def test_a_store_that_warms_up_opens_its_second_connection_at_open_warmed_too(pg_server):
    from agentcontext.store.postgres import PostgresStore

    store = PostgresStore(pg_server.url("read_ahead_warm"), warm_up=True)
    try:
        second = store.read_ahead(lambda s: s).result()  # opened at open, in the background
        assert second is not store and second.warmed.started is not None  # its backend warmed like the main one
        assert not second.READ_AHEAD and not second._ahead.opened  # and it opens no connection of its own
    finally:
        store.close()
    cold = PostgresStore(pg_server.url("read_ahead_warm"), warm_up=False)
    try:
        assert not cold._ahead.opened  # no warm-up: opened at the first read ahead
    finally:
        cold.close()
