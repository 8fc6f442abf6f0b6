"""SQLite migration 7 (the live rows' hashes indexed by 256 buckets in row order): a schema-6 workspace
(tests/fixtures/workspace_v6, written by the code of schema 6) upgrades in one transaction with every record intact,
and a purge after the upgrade still drops exactly the vectors no version of any node uses, through the new index."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node
from agentcontext.store import SQLiteStore
from agentcontext.store.migrations import Migration
from tests.fixtures.make_workspace_v1 import dump

from .conftest import ROOT

FIXTURE_V6 = ROOT / "tests" / "fixtures" / "workspace_v6"  # schema 6, before migration 7 (make_workspace_v6.py)
CONTENTS_V6 = json.loads((FIXTURE_V6 / "contents.json").read_text())
LATEST = SQLiteStore.MIGRATIONS.latest


@pytest.fixture
def old_v6(tmp_path) -> Path:
    """A private copy of the version-6 workspace file (opening it upgrades it)."""
    shutil.copy(FIXTURE_V6 / "store.db", tmp_path / "store.db")
    return tmp_path / "store.db"


def _raw(path: Path, sql: str, params=()) -> list[tuple]:
    """Read without agentcontext; the committed fixture only immutably (a WAL reader would leave -wal/-shm there)."""
    uri = f"file:{path}?immutable=1" if path.parent == FIXTURE_V6 else f"file:{path}"
    db = sqlite3.connect(uri, uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def _indexes(path: Path) -> set[str]:
    return {r[0] for r in _raw(path, "SELECT name FROM sqlite_master WHERE type = 'index'")}


def _held(store) -> dict:
    return json.loads(json.dumps(dump(SimpleNamespace(store=store)), sort_keys=True, default=str))


def test_the_v6_fixture_is_a_version_6_workspace():
    steps = _raw(FIXTURE_V6 / "store.db", "SELECT version FROM schema_migrations ORDER BY version")
    assert [v for (v,) in steps] == [1, 2, 3, 4, 5, 6] and CONTENTS_V6["schema_version"] == 6
    assert "nodes_hash8" in _indexes(FIXTURE_V6 / "store.db") and "nodes_hash2" not in _indexes(FIXTURE_V6 / "store.db")
    assert (FIXTURE_V6 / "store.db").stat().st_size < 400_000
    assert sorted(p.name for p in FIXTURE_V6.iterdir()) == ["contents.json", "store.db"]  # never opened in place


def test_a_version_6_workspace_upgrades_and_every_record_reads_back(old_v6):
    from tests.fixtures.make_workspace_v4 import searches

    store = SQLiteStore(old_v6)
    try:
        assert store.schema_version() == LATEST >= 7
        for key, value in _held(store).items():  # every node with every version, edges, vectors, records, audit
            assert value == CONTENTS_V6[key], f"{key} differs from what the version-6 workspace held"
        assert searches(store) == CONTENTS_V6["searches"]
        assert store.check_integrity() == "ok" and store.change_counter() == CONTENTS_V6["change_counter"]
        names = _indexes(old_v6)
        assert "nodes_hash2" in names and "nodes_hash8" not in names
        assert {"versions_hash8", "versions_ns"} <= names and "vectors_hash8" not in names  # migration 8
        # the new index holds every live row that has a hash, in (bucket, rid) order
        live = _raw(old_v6, "SELECT count(*) FROM nodes WHERE embed_hash IS NOT NULL")[0][0]
        assert _raw(old_v6, "SELECT count(*) FROM nodes INDEXED BY nodes_hash2 "
                    "WHERE substr(embed_hash, 1, 2) IS NOT NULL")[0][0] == live > 0
    finally:
        store.close()


def test_the_upgrade_to_7_is_one_transaction(old_v6):
    class Failing(SQLiteStore):
        MIGRATIONS = SQLiteStore.MIGRATIONS.plus(Migration(LATEST + 1, "breaks halfway", lambda db: (
            db.execute("CREATE TABLE half_done (x)"), db.execute("SELECT * FROM no_such_table"))))

    with pytest.raises(StoreError):
        Failing(old_v6)
    assert [v for (v,) in _raw(old_v6, "SELECT version FROM schema_migrations ORDER BY version")] == [1, 2, 3, 4, 5, 6]
    names = _indexes(old_v6)
    assert "nodes_hash8" in names and "nodes_hash2" not in names  # step 7 went with the failing one


def _used(store) -> set[str]:
    """The hashes some version of some node uses (the superseded ones and the live rows), read row by row."""
    return {h for (h,) in store._read("SELECT embed_hash FROM versions WHERE embed_hash IS NOT NULL")}


def _vector_keys(store) -> set[tuple[str, str]]:
    return set(store._read("SELECT hash, model FROM vectors"))


def test_a_purge_after_the_upgrade_drops_exactly_the_unused_vectors(old_v6):
    store = SQLiteStore(old_v6)
    try:
        ids = store.node_ids(include_retracted=True)
        # two new nodes share the text (so the vector) of a live fixture node: purging it must keep that vector
        twin = next(n for i in ids if (n := store.get_node(i)) and n.embed_hash and _raw(
            old_v6, "SELECT 1 FROM vectors WHERE hash = ?", (n.embed_hash,)))
        text = store._read("SELECT coalesce(embed_text, content) FROM nodes WHERE id = ?", (twin.id,))[0][0]
        store.put_nodes([Node(id=f"twin{i}", kind=twin.kind, namespace=twin.namespace, key=f"twin{i}",
                              content=text, embed_text=text) for i in range(2)])
        assert {store.get_node(f"twin{i}").embed_hash for i in range(2)} == {twin.embed_hash}
        order = [twin.id] + [i for i in ids if i != twin.id] + ["twin0", "twin1"]
        unused_before = {k for k in _vector_keys(store) if k[0] not in _used(store)}
        for group in (order[:1], order[1:4], order[4:-1], order[-1:]):  # one node, a few, most, the last twin
            before, used_before = _vector_keys(store), _used(store)
            store.purge_nodes(group)
            gone = before - _vector_keys(store)
            used_after = _used(store)
            # exactly the vectors of hashes the purged nodes used and no remaining version uses
            assert gone == {k for k in before if k[0] in used_before - used_after}, group
            assert all(k[0] in used_after for k in _vector_keys(store) - unused_before), group
            if group == order[:1]:
                assert twin.embed_hash in used_after and any(k[0] == twin.embed_hash for k in _vector_keys(store))
        assert not store.node_ids(include_retracted=True)
        assert _vector_keys(store) == unused_before  # only what no version used before the purges is left
        assert store.check_integrity() == "ok"
    finally:
        store.close()


def test_purge_history_after_the_upgrade_drops_exactly_the_unused_vectors(old_v6):
    store = SQLiteStore(old_v6)
    try:
        ids = store.node_ids(include_retracted=True)
        before, used_before = _vector_keys(store), _used(store)
        store.purge_history(ids)
        gone, used_after = before - _vector_keys(store), _used(store)
        assert gone == {k for k in before if k[0] in used_before - used_after}
        assert all(len(store.node_versions(i)) == 1 for i in ids) and store.check_integrity() == "ok"
    finally:
        store.close()


def test_the_purge_reads_the_bucket_index_not_the_table(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="m", key=f"k{i}", content=f"text {i}",
                          embed_text=f"text {i}")
                     for i in range(50)])
    hashes = [store.get_node(f"n{i}").embed_hash for i in range(3)]
    clause, params = store._hash_in("hash", hashes)
    plan = " ".join(r[3] for r in store._read(
        f"EXPLAIN QUERY PLAN DELETE FROM vectors WHERE {clause} AND {store._vectors_unused()}", params))
    assert "COVERING INDEX nodes_hash2" in plan and "SCAN nodes" not in plan and "SCAN node_versions" not in plan, plan
    # new rows append to their bucket: rids ascend within one bucket of the index
    rows = store._read("SELECT substr(embed_hash, 1, 2), rid FROM nodes INDEXED BY nodes_hash2 "
                       "WHERE substr(embed_hash, 1, 2) IS NOT NULL")
    assert rows == sorted(rows) and len(rows) == 50
    store.close()
