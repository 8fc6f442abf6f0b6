"""``agentcontext migrate``: a whole workspace copied between stores, losslessly. The committed version-1 workspace
(tests/fixtures/workspace_v1: packs with doc versions, memories and chains, a graph, decisions, a policy, a checkpoint,
grants, a token, tombstones, audit) goes SQLite -> PostgreSQL -> SQLite and comes back with equal content digests;
the copies answer as the original does; a copy that fails leaves its destination empty."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess

import numpy as np
import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError, ValidationError
from agentcontext.knowledge.flash import flash
from agentcontext.memory import AgentMemory
from agentcontext.migrate import content_digest, migrate
from agentcontext.store import COPY_TABLES, open_store
from agentcontext.workspace import Workspace

from .conftest import CLI, ROOT

pytestmark = pytest.mark.postgres
FIXTURE = ROOT / "tests" / "fixtures" / "workspace_v1"
HANDLES = json.loads((FIXTURE / "contents.json").read_text())["handles"]


@pytest.fixture
def source(tmp_path):
    """A copy of the version-1 workspace, opened once (upgraded), with a retracted edge and a purged node more."""
    path = tmp_path / "source.db"
    shutil.copy(FIXTURE / "store.db", path)
    store = open_store(path)
    edge = store.edges(namespace="graph:default", limit=1)[0]
    store.retract_edges([edge.id])
    store.purge_nodes([HANDLES["memories_embedded"][0]], reason="test purge")
    store.close()
    return path


def digest(url, precision: type = np.float32) -> dict:
    store = open_store(url)
    try:
        return content_digest(store, precision)
    finally:
        store.close()


def test_sqlite_to_postgres_to_sqlite_keeps_every_row(source, pg_url, tmp_path):
    before, half = digest(source), digest(source, np.float16)  # PostgreSQL holds vectors as float16 (halfvec)
    assert all(before[t]["rows"] for t in COPY_TABLES)  # the fixture holds some of everything
    first = migrate(str(source), pg_url)
    assert first["digests_equal"] and first["digest"] == half
    assert first["rows"] == {t: before[t]["rows"] for t in COPY_TABLES}
    back = tmp_path / "back.db"
    proc = subprocess.run([*CLI, "migrate", pg_url, f"sqlite:///{back}", "--json"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    second = json.loads(proc.stdout)
    assert second["digests_equal"] and second["destination"] == f"sqlite:///{back}"
    # the round trip's content digests are equal: every table as it was, the vectors at the coarser precision
    assert digest(back, np.float16) == half and {t: d for t, d in digest(back).items() if t != "vectors"} == {
        t: d for t, d in before.items() if t != "vectors"}
    with sqlite3.connect(back) as raw:  # the copy kept sequence numbers and the change log as they were
        original = sqlite3.connect(source)
        for table in ("audit", "changes"):
            assert raw.execute(f"SELECT max(seq) FROM {table}").fetchone() == \
                original.execute(f"SELECT max(seq) FROM {table}").fetchone()
        original.close()


def test_the_copies_answer_as_the_original(source, pg_url):
    migrate(str(source), pg_url)
    lite, pg = Workspace.open(url=f"sqlite:///{source}"), Workspace.open(url=pg_url)
    try:
        for ws in (lite, pg):
            assert access.principal_for_token(ws, HANDLES["token"]) == HANDLES["token_principal"]  # hashed as it was
        a, b = flash(lite, "lib:semdag", "invitations"), flash(pg, "lib:semdag", "invitations")
        assert (a.order, a.digest, a.text) == (b.order, b.digest, b.text)
        assert pg.store.tombstone(HANDLES["memories_embedded"][0])["reason"] == "test purge"
        assert pg.store.change_counter() == lite.store.change_counter()
        assert pg.store.check_integrity() == "ok"
        question = "what did we decide"
        ours = AgentMemory(workspace=pg, max_memory_size=None).retrieve(question, max_results=3)
        theirs = AgentMemory(workspace=lite, max_memory_size=None).retrieve(question, max_results=3)
        assert [r["id"] for r in ours] == [r["id"] for r in theirs]
        pg.store.append_audit("owner", "after.copy", "x", "ok")  # the copied sequence goes on from the last number
        assert pg.store.audit()[-1]["seq"] == lite.store.audit()[-1]["seq"] + 1
    finally:
        lite.close()
        pg.close()


def test_the_destination_must_be_another_empty_store(source, pg_url, tmp_path):
    migrate(str(source), pg_url)
    with pytest.raises(ValidationError, match="already holds data"):
        migrate(str(source), pg_url)
    with pytest.raises(ValidationError, match="same store"):
        migrate(str(source), str(source))
    proc = subprocess.run([*CLI, "migrate", str(source), pg_url], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert proc.returncode != 0 and "already holds data" in proc.stderr


def test_a_failed_copy_leaves_the_destination_empty(source, pg_url):
    with sqlite3.connect(source) as raw:  # text PostgreSQL cannot hold, deep in the node table
        raw.execute("UPDATE nodes SET content = 'before' || char(0) || 'after' WHERE rid = (SELECT max(rid) "
                    "FROM nodes)")
    with pytest.raises(ValidationError, match="NUL"):
        migrate(str(source), pg_url)
    store = open_store(pg_url)
    try:
        counts = store.info()["counts"]
        assert not any(counts.values()), counts  # all or nothing
    finally:
        store.close()


def test_only_the_owner_or_an_admin_copies_a_multi_user_workspace(source, pg_url):
    with pytest.raises(AccessDeniedError):
        migrate(str(source), pg_url, principal=HANDLES["token_principal"])
    store = open_store(pg_url)
    try:
        assert store.info()["counts"]["nodes"] == 0
    finally:
        store.close()
    assert migrate(str(source), pg_url, principal="owner")["digests_equal"]


def test_a_copy_carries_every_column_but_what_a_backend_derives(pg_url, tmp_path):
    """A column a migration adds must be added to store/transfer.TABLES too, or this fails (and copies lose it)."""
    from agentcontext.store.transfer import TABLES

    # vectors.searched / pending (PostgreSQL): whether a node's text has the vector and it is in the HNSW index or
    # the delta (store/pg_delta.py), derived from the nodes and the load on import; q8 / q8_scale: a context vector's
    # values held as int8 (store/pg_q8.py), copied as its ``vector``; vid (SQLite, migration 8): the row's key, as rid
    # nodes' conversation_id, created_at, pair_hash, prev, user_id (PostgreSQL, migration 16): props held as columns,
    # copied inside the props (store/pg_props.py); changes.at_text (PostgreSQL, migration 17): a change's time held
    # as its text where a timestamp would not give it back, copied as ``at`` (store/pg_changes.py);
    # nodes.recorded_text (PostgreSQL, migration 18): a node's recorded time where a timestamp would not give it back,
    # copied as ``recorded_at`` (store/pg_recorded.py)
    derived = {"nodes": {"rid", "tag_text", "tsv", "conversation_id", "created_at", "pair_hash", "prev", "user_id",
                         "recorded_text"},
               "edges": {"rid"}, "vectors": {"searched", "pending", "q8", "q8_scale", "vid"},
               "changes": {"at_text"}}
    lite, pg = open_store(tmp_path / "x.db"), open_store(pg_url)
    try:
        for table in COPY_TABLES:
            theirs = {r[1] for r in lite._read(f"PRAGMA table_xinfo({table})")}  # vectors.dim: generated
            ours = {r[0] for r in pg._read("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                           "current_schema() AND table_name = %s", (table,))}
            for columns in (theirs, ours):
                assert columns - derived.get(table, set()) == set(TABLES[table][1]), table
    finally:
        lite.close()
        pg.close()
