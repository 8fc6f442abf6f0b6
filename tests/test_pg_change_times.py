"""The change log's time held as a timestamp on PostgreSQL (migration 17, store/pg_changes.py, issue 23 s2):
``changes.at`` a ``timestamptz`` for the text ``utcnow`` writes, ``changes.at_text`` the text only where a timestamp
would not give it back exactly, so the API is unchanged: an upgrade from the step before keeps every change's text
(``changes_since``, export), a crash mid-upgrade leaves the step before whole, every write path lands the times in
the new columns, and ``migrate``'s digests still hold between a store at 17 and one copied from it."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node
from agentcontext.store import open_store, transfer
from agentcontext.store.pg_changes import AT_SQL, canonical

from .test_pg_node_hash_bytes import unit
from .copy_round_trip import copies_keep
from .upgrade_crash import crash_keeps_the_step_before, step_number, store_before

pytestmark = pytest.mark.postgres
# texts a copy may bring (another store's rows, an old export): each must come back byte for byte
ODD = ["2024-12-31T00:00:00Z", "2024-12-31T00:00:00+00:00", "2024-02-30T00:00:00.000000+00:00",
       "2024-12-31T23:59:60.000000+00:00", "2024-12-31T10:00:00.000000+02:00", "0000-01-01T00:00:00.000000+00:00",
       "not a time", "", "2024-12-31 00:00:00.000000+00:00", "2024-12-31T24:00:00.000000+00:00"]
GOOD = ["2024-12-31T00:00:00.000000+00:00", "0005-01-01T00:00:00.000001+00:00", "2024-02-29T23:59:59.999999+00:00",
        "9999-12-31T23:59:59.999999+00:00", "1970-01-01T00:00:00.000000+00:00"]


def mine() -> int:
    """This step's number (17 when it was written)."""
    return step_number("change_times")


def before_store(url):
    """A store pinned to the step before this one (16 when it was written)."""
    return store_before(url, "change_times")


def write_everything(store, rng) -> None:
    """A change of every kind the store logs: node puts (rows), a retraction, records, vectors, a purge."""
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", content=f"turn {i}") for i in range(6)])
    store.put_nodes([Node(id="n1", kind="memory", namespace="ns", content="turn 1 again")])
    store.retract_nodes(["n2"])
    store.put_records("cfg", {"a": {"x": 1}, "b": {"y": 2}})
    store.delete_record("cfg", "b")
    store.put_vectors({"h1": unit(rng, 1, 8)[0]}, "m")
    store.purge_nodes(["n3"], reason="test")


def odd_rows(store) -> None:
    """Change rows whose time is not the form ``utcnow`` writes (what a copy from elsewhere may hold)."""
    with store.transaction():
        store._execmany("INSERT INTO changes(at, actor, op, target, namespace, detail) VALUES (%s, 'x', 'odd', %s, "
                        "'', '{}')" if not store._ct else
                        "INSERT INTO changes(at, at_text, actor, op, target, namespace, detail) VALUES (NULL, %s, 'x', "
                        "'odd', %s, '', '{}')", [(t, f"t{i}") for i, t in enumerate(ODD)])
        store._execmany("INSERT INTO changes(at, actor, op, target, namespace, detail) VALUES (%s" +
                        ("::timestamptz" if store._ct else "") + ", 'x', 'good', %s, '', '{}')",
                        [(t, f"g{i}") for i, t in enumerate(GOOD)])


def log(store) -> dict:
    """The change log as the API gives it: changes_since (whole and paged) and the export's pages."""
    return {"since": store.changes_since(0), "paged": store.changes_since(3, limit=4),
            "export": [r for page in transfer.pages(store, "changes", 5) for r in page]}


def held(store) -> dict:
    """How each row holds its time: (timestamp or not, the text kept)."""
    return {r[0]: (r[1], r[2]) for r in store._read("SELECT target, at IS NOT NULL, at_text FROM changes")}


def test_the_client_and_the_migration_agree_on_which_texts_a_timestamp_gives_back(pg_url):
    store = open_store(pg_url)
    store._db.execute(AT_SQL)
    for text in ODD + GOOD:
        ts, = store._read("SELECT actx_at(%s) IS NOT NULL", [text])[0]
        assert ts == canonical(text) == (text in GOOD), text
    store.close()


def test_an_upgrade_from_the_step_before_keeps_every_change(pg_url):
    old = before_store(pg_url)
    assert old.schema_version() == mine() - 1 and not old._ct
    write_everything(old, np.random.default_rng(31))
    odd_rows(old)
    before = log(old)
    assert len(before["since"]) > len(ODD) + len(GOOD) + 8
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= mine() and store._ct
    assert log(store) == before
    store._db.execute("SET TimeZone = 'Asia/Kolkata'")  # a session's time zone plays no part (renders in UTC)
    assert log(store) == before
    kept = held(store)
    assert all(kept[f"t{i}"] == (False, t) for i, t in enumerate(ODD))
    assert all(kept[f"g{i}"] == (True, None) for i in range(len(GOOD)))
    assert kept["n0"] == (True, None) and kept["n3"] == (True, None)
    assert store._read("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                       "'changes'::regclass AND attname = 'at'") == [("timestamp with time zone",)]
    store.put_nodes([Node(id="after", kind="memory", namespace="ns", content="written at 17")])
    last = store.changes_since(0)[-1]
    assert last.target == "after" and canonical(last.at) and held(store)["after"] == (True, None)
    store.close()


def test_a_crash_mid_upgrade_leaves_the_step_before(pg_url, tmp_path):
    def fill(store) -> None:
        write_everything(store, np.random.default_rng(32))
        odd_rows(store)

    crash_keeps_the_step_before(pg_url, tmp_path, "change_times", fill, log, ("changes", "at"), "_ct")


def test_every_write_path_lands_the_time_in_the_new_columns(pg_url, pg_server, tmp_path):
    from agentcontext import AgentMemory
    from agentcontext.workspace import Workspace

    rng = np.random.default_rng(33)
    store = open_store(pg_url)
    assert store._ct
    write_everything(store, rng)  # rows (COPY), the row-at-a-time log, records, vectors, a purge
    ws = Workspace(store)
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    memory.batch_store([{"id": f"b{i}", "content": f"fact {i}", "vector": unit(rng, 1, 384)[0]} for i in range(4)])
    ops = {c.op for c in store.changes_since(0)}
    assert {"node.put", "node.retract", "record.put", "record.delete", "vectors.put", "node.purge"} <= ops
    assert store._read("SELECT count(*) FROM changes WHERE at IS NULL OR at_text IS NOT NULL") == [(0,)]
    assert all(canonical(c.at) for c in store.changes_since(0))
    odd_rows(store)
    # export and import (COPY into the new columns), then out to SQLite, where the time stays text
    copies_keep(pg_url, store, pg_server.url(), tmp_path / "copy.db", log, held)
    ws.close()
