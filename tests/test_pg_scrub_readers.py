"""A strict erasure on PostgreSQL while another transaction can still see the erased rows.

VACUUM FULL keeps a dead row that an older snapshot may see, so a session that began before the erasure (a long
report, ``idle in transaction``, an ANALYZE at that moment) would keep the erased bytes in the new files while the
receipt said clean. The scrub waits for such readers, and when one outlasts the wait the receipt says ``held``
(incomplete) and who holds; erasing again after it ends cleans the files.
"""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from .bytescan import folder_files, hits, new_secret

pytestmark = pytest.mark.postgres


def _open(pg_url: str):
    from agentcontext import AgentMemory, ContextGraph, VectorStore
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    ContextGraph(workspace=ws).add_node("customer-9", "customer", content=f"Ann, card {secret}")
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    memory.store(f"Ann paid with card {secret}", metadata={"entities": ["customer-9"]})
    memory.store("an unrelated note")
    return ws, secret


def _reader(pg_server) -> psycopg.Connection:
    """Another client whose snapshot is taken now (before the erasure) and held open."""
    conn = psycopg.connect(pg_server.url().split("?")[0])
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT count(*) FROM pg_class")
    return conn


def _erase(ws):
    from agentcontext.erasure import erase_workspace_entity

    return erase_workspace_entity(ws, "customer-9", reason="GDPR", erase_mentions=True).to_dict()


def _found(ws, pg_server, secret: str) -> dict[str, int]:
    """The server's files that hold the secret, after a CHECKPOINT (so the old files of a rewrite are gone)."""
    ws.store._db.execute("CHECKPOINT")
    return hits(folder_files(pg_server.data / "base"), secret)


def _assert_clean(receipt: dict) -> None:
    assert receipt["complete"] is True and receipt["physical"]["status"] == "clean", receipt["physical"]


def test_a_reader_older_than_the_erasure_is_waited_for_then_the_files_come_out_clean(pg_url, pg_server):
    ws, secret = _open(pg_url)
    assert _found(ws, pg_server, secret), "the secret is in the heap before the erasure"
    reader = _reader(pg_server)
    ended = threading.Timer(1.5, reader.rollback)
    ended.start()
    started = time.monotonic()
    receipt = _erase(ws)
    waited = time.monotonic() - started
    ended.join()
    reader.close()
    _assert_clean(receipt)
    assert waited >= 1.4  # it waited for the reader rather than rewriting while the rows were still visible
    assert _found(ws, pg_server, secret) == {}
    ws.close()


def test_a_reader_that_outlasts_the_wait_makes_the_receipt_say_held_and_a_second_erasure_cleans(pg_url, pg_server):
    ws, secret = _open(pg_url)
    ws.store.SCRUB_WAIT_S = 0.3
    reader = _reader(pg_server)
    pid = reader.info.backend_pid
    receipt = _erase(ws)
    physical = receipt["physical"]
    assert receipt["complete"] is False and "physical" in receipt["incomplete_stores"]
    assert physical["status"] == "held"
    assert [r["who"] for r in physical["held_by"]] == [str(pid)]
    assert physical["held_by"][0]["state"] == "idle in transaction"
    assert "older than the erasure" in physical["may_remain"][0] and str(pid) in physical["may_remain"][0]
    assert secret not in str(receipt)
    assert _found(ws, pg_server, secret), "the receipt is right: VACUUM FULL kept the rows the reader could see"

    reader.rollback()
    reader.close()
    _assert_clean(_erase(ws))
    assert _found(ws, pg_server, secret) == {}
    ws.close()


def test_a_reader_that_began_after_the_erasure_does_not_hold_it(pg_url, pg_server):
    """Only snapshots older than the erasure can see its rows: a newer one is neither waited for nor named."""
    ws, _ = _open(pg_url)
    ws.store.SCRUB_WAIT_S = 20.0
    ws.store._db.execute("DELETE FROM nodes WHERE kind = 'memory'")
    reader = _reader(pg_server)
    started = time.monotonic()
    out = ws.store.scrub()
    took = time.monotonic() - started
    reader.rollback()
    reader.close()
    assert out["status"] == "clean" and "held_by" not in out
    assert took < 10  # not the 20 s wait
    ws.close()
