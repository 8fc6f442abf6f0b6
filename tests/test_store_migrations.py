"""Numbered schema migrations: a workspace written before they existed (tests/fixtures/workspace_v1, made by the code
of that time) opens upgraded with every record intact; an upgrade is one transaction; a newer store is refused
untouched; adding a step is one function; processes upgrading one old store at once do it once."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentcontext.errors import SchemaVersionError, StoreError
from agentcontext.model import Edge, Node
from agentcontext.store import SQLiteStore, open_store
from agentcontext.store.migrations import Migration, Migrations
from tests.fixtures.make_workspace_v1 import dump

from .conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "workspace_v1"
CONTENTS = json.loads((FIXTURE / "contents.json").read_text())
FIXTURE_V4 = ROOT / "tests" / "fixtures" / "workspace_v4"  # today's schema before migration 5 (make_workspace_v4.py)
CONTENTS_V4 = json.loads((FIXTURE_V4 / "contents.json").read_text())
FIXTURE_V5 = ROOT / "tests" / "fixtures" / "workspace_v5"  # schema 5, before migration 6 (make_workspace_v5.py)
CONTENTS_V5 = json.loads((FIXTURE_V5 / "contents.json").read_text())
SQLITE_STEPS = ["initial schema", "edges.rowid is named rid, as on PostgreSQL",
                "FTS5 secure-delete: a deleted or replaced row leaves no term in the text index",
                "tombstones name the erasure that made them (no import brings an erased id back)",
                "text held once, hashes indexed by a prefix: a contentless text index, no embed_text equal to "
                "content, no nodes_embed index, 16-character hash indexes on vectors and versions",
                "a node's current version is held once: node_versions keeps the superseded versions, the live row is "
                "the current one (the view versions reads both); hashes indexed by 8 characters",
                "live rows' hashes indexed by 256 buckets in row order: nodes_hash2 replaces nodes_hash8",
                "vectors keyed by their row: vid INTEGER PRIMARY KEY, found by hash through vector_keys (two tiers: "
                "new keys in a small fresh tier, merged in key order into the settled one) instead of "
                "vectors_hash8"]
LATEST = len(SQLITE_STEPS)


@pytest.fixture
def old(tmp_path) -> Path:
    """A private copy of the version-1 workspace file (opening it upgrades it)."""
    shutil.copy(FIXTURE / "store.db", tmp_path / "store.db")
    return tmp_path / "store.db"


@pytest.fixture
def old_v4(tmp_path) -> Path:
    """A private copy of the version-4 workspace file."""
    (tmp_path / "v4").mkdir()
    shutil.copy(FIXTURE_V4 / "store.db", tmp_path / "v4" / "store.db")
    return tmp_path / "v4" / "store.db"


@pytest.fixture
def old_v5(tmp_path) -> Path:
    """A private copy of the version-5 workspace file."""
    (tmp_path / "v5").mkdir()
    shutil.copy(FIXTURE_V5 / "store.db", tmp_path / "v5" / "store.db")
    return tmp_path / "v5" / "store.db"


def _raw(path: Path, sql: str, params=()) -> list[tuple]:
    """Read without agentcontext; the committed fixture only immutably (a WAL reader would leave -wal/-shm there)."""
    uri = f"file:{path}?immutable=1" if path.parent in (FIXTURE, FIXTURE_V4, FIXTURE_V5) else f"file:{path}"
    db = sqlite3.connect(uri, uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def _schema(path: Path) -> tuple[list, list]:
    """(recorded migrations or None, the edges table's columns), read without agentcontext."""
    tables = {r[0] for r in _raw(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    steps = _raw(path, "SELECT version, name FROM schema_migrations ORDER BY version") if (
        "schema_migrations" in tables) else None
    return steps, [r[1] for r in _raw(path, "PRAGMA table_info(edges)")]


def _same_as_fixture(store) -> None:
    held = json.loads(json.dumps(dump(SimpleNamespace(store=store)), sort_keys=True, default=str))
    assert all(t.pop("erasure") is None for t in held["tombstones"])  # migration 4's column, empty on old ones
    for key, value in held.items():
        assert value == CONTENTS[key], f"{key} differs from what the version-1 workspace held"


def test_the_fixture_is_a_version_1_workspace():
    steps, edge_cols = _schema(FIXTURE / "store.db")
    assert steps is None and edge_cols[0] == "rowid"  # written before migrations were numbered
    assert (FIXTURE / "store.db").stat().st_size < 400_000
    assert sorted(p.name for p in FIXTURE.iterdir()) == ["contents.json", "store.db"]  # nobody opened it in place


def test_opening_it_upgrades_and_every_record_reads_back(old):
    store = SQLiteStore(old)
    try:
        assert store.schema_version() == SQLiteStore.MIGRATIONS.latest == len(SQLITE_STEPS)
        assert [m["name"] for m in store.info()["migrations"]] == SQLITE_STEPS
        _same_as_fixture(store)  # nodes with every version, edge intervals, vectors, tombstones, records, audit
        assert store.check_integrity() == "ok"
        assert store.change_counter() == CONTENTS["change_counter"]  # the upgrade is not a change to the data
        store.put_edges([Edge("graph:default/web", "depends_on", "graph:default/queue", namespace="graph:default")])
        store.put_nodes([Node(id="after", kind="doc", namespace="ns")])
        assert store.edge_history("graph:default")[-1].dst == "graph:default/queue"
    finally:
        store.close()
    steps, edge_cols = _schema(old)
    assert steps == list(enumerate(SQLITE_STEPS, 1))
    assert edge_cols[0] == "rid"
    again = SQLiteStore(old)  # a current store opens with one read: nothing more to apply
    assert again.schema_version() == LATEST and again.get_node("after") is not None
    again.close()


@pytest.mark.parametrize("fixture", ["v1", "v4", "v5"])
def test_the_services_read_the_upgraded_workspace(fixture, old, old_v4, old_v5):
    from agentcontext import AgentContext, AgentMemory, PolicyEngine, VectorStore, access
    from agentcontext.graph.context_graph import ContextGraph
    from agentcontext.knowledge.flash import flash
    from agentcontext.knowledge.history import history
    from agentcontext.knowledge.tools import read_knowledge_doc
    from agentcontext.workspace import Workspace

    handles = {"v1": CONTENTS, "v4": CONTENTS_V4, "v5": CONTENTS_V5}[fixture]["handles"]
    ws = Workspace.open(url=f"sqlite:///{ {'v1': old, 'v4': old_v4, 'v5': old_v5}[fixture] }")
    try:
        assert flash(ws, "lib:semdag", "invitations").order == ["identity", "account", "membership", "invitations"]
        assert [v["version"] for v in history(ws, "lib:notes", "deploy")] == [1, 2, 3]
        assert "smoke test" not in read_knowledge_doc(ws, "lib:notes", "deploy", version=1)["content"]
        assert access.principal_for_token(ws, handles["token"]) == handles["token_principal"]
        assert {(g["principal"], g["pattern"]) for g in access.grants(ws)} == {("bob", "lib:notes"), ("carol", "lib:*")}
        assert ("doc.put", "denied") in {(a["action"], a["outcome"]) for a in access.audit_log(ws)}

        memory = AgentMemory(vector_store=VectorStore(workspace=ws), max_memory_size=1000)
        for mid in handles["memories_embedded"] + handles["memories_supplied"] + handles["memories_chained"]:
            assert memory.get_memory(mid) is not None
        assert memory.get_memory(handles["memory_forgotten"]) is None
        assert [m["id"] for m in memory.conversation("conv-a")] == handles["memories_chained"][:3]
        top = memory.retrieve("window seat on a long flight", max_results=1)
        assert top[0]["id"] == handles["memories_embedded"][0]  # the stored vectors still rank

        graph = ContextGraph(workspace=ws)
        assert graph.find_node("web") is not None and graph.find_node("legacy") is None
        assert {n["id"] for n in graph.get_neighbors("web", hops=1)} >= {"db", "cache"}
        assert "graph:default/secret-project" in {t["id"] for t in graph.tombstones()}
        ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
        first, second = handles["decisions"]
        assert ctx.get_decision(second).outcome == "replica_added"
        assert [d.decision_id for d in ctx.get_causal_chain(second)] == [first]
        assert PolicyEngine(graph_store=graph).get_policy("scale").rules == {"min_confidence": 0.8}
        assert handles["checkpoint"] in ctx.list_checkpoints()
        assert ctx.diff_checkpoints(handles["checkpoint"], handles["checkpoint"])["summary"]["decisions_added"] == 0
    finally:
        ws.close()


def test_the_v4_fixture_is_a_version_4_workspace():
    steps, edge_cols = _schema(FIXTURE_V4 / "store.db")
    assert [v for v, _ in steps] == [1, 2, 3, 4] and edge_cols[0] == "rid" and CONTENTS_V4["schema_version"] == 4
    assert _raw(FIXTURE_V4 / "store.db", "SELECT count(*) FROM fts_content")[0][0] > 0  # the text index's own copy
    assert (FIXTURE_V4 / "store.db").stat().st_size < 400_000
    assert sorted(p.name for p in FIXTURE_V4.iterdir()) == ["contents.json", "store.db"]  # never opened in place


def test_a_version_4_workspace_upgrades_and_every_record_reads_back(old_v4):
    from tests.fixtures.make_workspace_v4 import searches

    store = SQLiteStore(old_v4)
    try:
        assert store.schema_version() == LATEST
        assert [m["name"] for m in store.info()["migrations"]] == SQLITE_STEPS
        held = json.loads(json.dumps(dump(SimpleNamespace(store=store)), sort_keys=True, default=str))
        for key, value in held.items():  # every node with every version, edges, vectors, tombstones, records, audit
            assert value == CONTENTS_V4[key], f"{key} differs from what the version-4 workspace held"
        assert searches(store) == CONTENTS_V4["searches"]  # the text index ranks as it did (same bm25 scores)
        names = {r[0] for r in _raw(old_v4, "SELECT name FROM sqlite_master")}
        assert "fts_content" not in names and "nodes_embed" not in names  # migration 5: the text once in the file
        assert store.check_integrity() == "ok"
        assert store.change_counter() == CONTENTS_V4["change_counter"]
        # and it keeps working: a rewritten doc, a purge, a search
        doc = store.get_node("lib:notes/deploy")
        doc.content = "Build the image and ship it."
        store.put_nodes([doc])
        assert store.text_search("smoke test") == [] and store.text_search("ship")[0][0] == "lib:notes/deploy"
        assert [v.version for v in store.node_versions("lib:notes/deploy")] == [1, 2, 3, 4]
        store.purge_nodes(["lib:notes/runbook"])
        assert store.text_search("who to page") == [] and store.check_integrity() == "ok"
    finally:
        store.close()


def test_the_v5_fixture_is_a_version_5_workspace():
    steps, _ = _schema(FIXTURE_V5 / "store.db")
    assert [v for v, _ in steps] == [1, 2, 3, 4, 5] and CONTENTS_V5["schema_version"] == 5
    names = {r[0] for r in _raw(FIXTURE_V5 / "store.db", "SELECT name FROM sqlite_master")}
    assert {"versions_hash16", "vectors_hash16"} <= names  # the 16-character text prefix indexes of migration 5
    live = _raw(FIXTURE_V5 / "store.db", "SELECT count(*) FROM nodes n JOIN node_versions v ON v.id = n.id "
                "AND v.version = n.version")[0][0]
    assert live == len(CONTENTS_V5["nodes"]) > 0  # every current version written twice (live row and version row)
    assert (FIXTURE_V5 / "store.db").stat().st_size < 400_000
    assert sorted(p.name for p in FIXTURE_V5.iterdir()) == ["contents.json", "store.db"]  # never opened in place


def test_a_version_5_workspace_upgrades_and_every_record_reads_back(old_v5):
    from tests.fixtures.make_workspace_v4 import searches

    store = SQLiteStore(old_v5)
    try:
        assert store.schema_version() == LATEST
        assert [m["name"] for m in store.info()["migrations"]] == SQLITE_STEPS
        held = json.loads(json.dumps(dump(SimpleNamespace(store=store)), sort_keys=True, default=str))
        for key, value in held.items():  # every node with every version, edges, vectors, tombstones, records, audit
            assert value == CONTENTS_V5[key], f"{key} differs from what the version-5 workspace held"
        assert searches(store) == CONTENTS_V5["searches"]  # the text index ranks as it did (same bm25 scores)
        assert store.check_integrity() == "ok"
        assert store.change_counter() == CONTENTS_V5["change_counter"]
        # migration 6: the current versions are no longer version rows, and every version still counts
        assert _raw(old_v5, "SELECT count(*) FROM nodes n JOIN node_versions v ON v.id = n.id "
                    "AND v.version = n.version")[0][0] == 0
        assert store.info()["counts"]["node_versions"] == sum(len(v) for v in CONTENTS_V5["nodes"].values())
        names = {r[0] for r in _raw(old_v5, "SELECT name FROM sqlite_master")}
        assert {"versions", "vector_keys", "versions_hash8"} <= names  # and migration 7's nodes_hash2:
        assert "nodes_hash2" in names and "nodes_hash8" not in names
        assert not names & {"vectors_hash16", "versions_hash16"}
        doc = store.get_node("lib:notes/deploy")
        doc.content = "Build the image and ship it."
        store.put_nodes([doc])
        assert store.text_search("smoke test") == [] and store.text_search("ship")[0][0] == "lib:notes/deploy"
        assert [v.version for v in store.node_versions("lib:notes/deploy")] == [1, 2, 3, 4]
        assert "smoke test" in store.node_version("lib:notes/deploy", 3).content
        store.purge_nodes(["lib:notes/runbook"])
        assert store.text_search("who to page") == [] and store.check_integrity() == "ok"
    finally:
        store.close()


class FailingStore(SQLiteStore):
    MIGRATIONS = SQLiteStore.MIGRATIONS.plus(Migration(LATEST + 1, "breaks halfway", lambda db: (
        db.execute("CREATE TABLE half_done (x)"), db.execute("SELECT * FROM no_such_table"))))


def test_an_upgrade_is_one_transaction(old):
    with pytest.raises(StoreError) as info:
        FailingStore(old)
    assert f"schema version {LATEST + 1} (breaks halfway) failed" in str(info.value)
    assert "nothing was changed" in str(info.value)
    steps, edge_cols = _schema(old)
    assert steps is None and edge_cols[0] == "rowid"  # the shipped steps went with the failing one
    assert not _raw(old, "SELECT 1 FROM sqlite_master WHERE name = 'half_done'")
    store = SQLiteStore(old)  # the shipped steps still apply
    _same_as_fixture(store)
    store.close()


def test_a_newer_store_is_refused_untouched(old, tmp_path):
    SQLiteStore(old).close()
    db = sqlite3.connect(old)
    with db:
        db.execute("INSERT INTO schema_migrations VALUES (?, 'from a newer agentcontext', '2030-01-01')",
                   (LATEST + 1,))
    db.close()
    before = old.read_bytes()
    with pytest.raises(SchemaVersionError) as info:
        open_store(f"sqlite:///{old}")
    message = str(info.value)
    assert f"schema version {LATEST + 1}" in message and f"({LATEST} for sqlite)" in message
    assert "Upgrade agentcontext" in message
    assert isinstance(info.value, StoreError) and info.value.data["store_version"] == LATEST + 1
    assert old.read_bytes() == before
    from agentcontext.workspace import Workspace

    with pytest.raises(SchemaVersionError):
        Workspace.open(url=f"sqlite:///{old}")


def test_adding_a_step_is_one_function(old):
    steps = SQLiteStore.MIGRATIONS.plus()

    @steps.step(LATEST + 1, "an index on audit times")
    def audit_at(db) -> None:
        db.execute("CREATE INDEX audit_at ON audit(at)")

    class Next(SQLiteStore):
        MIGRATIONS = steps

    store = Next(old)
    assert store.schema_version() == LATEST + 1
    assert store.info()["migrations"][-1]["name"] == "an index on audit times"
    assert _raw(old, "SELECT 1 FROM sqlite_master WHERE name = 'audit_at'")
    store.close()
    with pytest.raises(SchemaVersionError):  # the shipped code does not know the new step
        SQLiteStore(old)
    assert SQLiteStore.MIGRATIONS.latest == LATEST  # plus() copied; the shipped list is unchanged


def test_steps_are_numbered_without_gaps_or_repeats():
    steps = Migrations("test")
    steps.step(1, "one")(lambda db: None)
    with pytest.raises(ValueError):
        steps.step(1, "one again")(lambda db: None)
    with pytest.raises(ValueError):
        steps.step(3, "skips two")(lambda db: None)
    assert steps.latest == 1 and [m.name for m in steps] == ["one"] and steps.pending(0) and not steps.pending(1)


UPGRADER = """
import sys
from agentcontext.model import Node
from agentcontext.store import open_store
store = open_store(sys.argv[1])
store.put_nodes([Node(id=sys.argv[2], kind="doc", namespace="ns")])
print(store.schema_version())
store.close()
"""


def test_processes_upgrading_one_old_workspace_at_once(old):
    procs = [subprocess.Popen([sys.executable, "-c", UPGRADER, str(old), f"p{i}"], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for i in range(3)]
    outputs = [p.communicate()[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0] and outputs == [str(LATEST)] * 3
    assert _schema(old)[0] == list(enumerate(SQLITE_STEPS, 1))
    store = SQLiteStore(old)
    assert store.count_nodes("ns") == 3 and store.check_integrity() == "ok"
    store.close()


def test_a_file_that_is_not_a_store_is_a_store_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as info:
        SQLiteStore(junk)
    assert str(junk) in str(info.value)


@pytest.mark.postgres
def test_postgres_adopts_a_schema_from_before_numbered_migrations_and_refuses_a_newer_one(pg_url):
    from agentcontext.store.postgres import PostgresStore

    store = open_store(pg_url)
    store.put_nodes([Node(id="a", kind="doc", namespace="ns", content="kept")])
    store._db.execute("DROP TABLE schema_migrations")  # the schema as today's code wrote it before versions
    store.close()
    again = open_store(pg_url)
    assert again.schema_version() == PostgresStore.MIGRATIONS.latest and again.get_node("a").content == "kept"
    again._db.execute("INSERT INTO schema_migrations VALUES (%s, 'from a newer agentcontext', '2030')",
                      (PostgresStore.MIGRATIONS.latest + 1,))
    again.close()
    with pytest.raises(SchemaVersionError) as info:
        open_store(pg_url)
    assert "for postgresql" in str(info.value) and info.value.data["url"] == pg_url


@pytest.mark.postgres
def test_postgres_upgrade_is_one_transaction(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Failing(PostgresStore):
        MIGRATIONS = PostgresStore.MIGRATIONS.plus(Migration(PostgresStore.MIGRATIONS.latest + 1, "breaks", lambda db: (
            db.execute("CREATE TABLE half_done (x int)"), db.execute("SELECT * FROM no_such_table"))))

    with pytest.raises(StoreError):
        Failing(pg_url)
    store = open_store(pg_url)  # nothing of the failed upgrade is left; the shipped steps apply
    assert store.schema_version() == PostgresStore.MIGRATIONS.latest
    assert store._db.execute("SELECT to_regclass('half_done')").fetchone()[0] is None
    store.close()
