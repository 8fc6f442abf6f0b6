"""SQLite migration 8 (vectors keyed by their row, found by hash through the two tiers of ``vector_keys``): a schema-7
workspace (tests/fixtures/workspace_v7, written by the code of schema 7, with 48 turns of a real conversation) upgrades
in one transaction keeping every vector byte for byte, and ``retrieve`` answers as it did before the upgrade; new keys
land in the fresh tier and merge into the settled one in key order; every path that finds a vector by its hash (the
held check of a write, reads, joins with nodes, export pages, deletes) finds it in either tier; and a batch of new
vectors leaves the settled tier's pages as they were."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node, content_hash
from agentcontext.store import SQLiteStore, sqlite_vectors
from agentcontext.store.migrations import Migration
from tests.fixtures.make_workspace_v1 import dump
from tests.fixtures.make_workspace_v6 import searches
from tests.fixtures.make_workspace_v7 import NAMESPACE, ranked, raw_vectors

from .conftest import ROOT

FIXTURE_V7 = ROOT / "tests" / "fixtures" / "workspace_v7"  # schema 7, before migration 8 (make_workspace_v7.py)
CONTENTS_V7 = json.loads((FIXTURE_V7 / "contents.json").read_text())
LATEST = SQLiteStore.MIGRATIONS.latest


@pytest.fixture
def old_v7(tmp_path) -> Path:
    """A private copy of the version-7 workspace file (opening it upgrades it)."""
    shutil.copy(FIXTURE_V7 / "store.db", tmp_path / "store.db")
    return tmp_path / "store.db"


def _raw(path: Path, sql: str, params=()) -> list[tuple]:
    """Read without agentcontext; the committed fixture only immutably (a WAL reader would leave -wal/-shm there)."""
    uri = f"file:{path}?immutable=1" if path.parent == FIXTURE_V7 else f"file:{path}"
    db = sqlite3.connect(uri, uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def _names(path: Path) -> set[str]:
    return {r[0] for r in _raw(path, "SELECT name FROM sqlite_master")}


def test_the_v7_fixture_is_a_version_7_workspace():
    steps = _raw(FIXTURE_V7 / "store.db", "SELECT version FROM schema_migrations ORDER BY version")
    assert [v for (v,) in steps] == [1, 2, 3, 4, 5, 6, 7] and CONTENTS_V7["schema_version"] == 7
    assert "vectors_hash8" in _names(FIXTURE_V7 / "store.db") and "vector_keys" not in _names(FIXTURE_V7 / "store.db")
    assert len(CONTENTS_V7["raw_vectors"]) == len(CONTENTS_V7["vectors"]) > 100  # own and context vectors of turns
    assert len(CONTENTS_V7["retrievals"]) == 24 and all(len(r) == 10 for r in CONTENTS_V7["retrievals"].values())
    assert (FIXTURE_V7 / "store.db").stat().st_size < 600_000
    assert sorted(p.name for p in FIXTURE_V7.iterdir()) == ["contents.json", "store.db"]  # never opened in place


def test_the_upgrade_keeps_every_vector_byte_for_byte_and_every_record(old_v7):
    store = SQLiteStore(old_v7)
    try:
        assert store.schema_version() == LATEST >= 8
        held = json.loads(json.dumps(dump(SimpleNamespace(store=store)), sort_keys=True, default=str))
        for key, value in held.items():  # every node with every version, edges, vectors (by digest), records, audit
            assert value == CONTENTS_V7[key], f"{key} differs from what the version-7 workspace held"
        assert searches(store) == CONTENTS_V7["searches"]
        assert store.check_integrity() == "ok" and store.change_counter() == CONTENTS_V7["change_counter"]
    finally:
        store.close()
    assert raw_vectors(old_v7) == CONTENTS_V7["raw_vectors"]  # each row's hash, model, dim and bytes, read raw
    names = _names(old_v7)
    assert "vector_keys" in names and "vectors_hash8" not in names
    assert [(r[1], r[5]) for r in _raw(old_v7, "PRAGMA table_info(vectors)")][0] == ("vid", 1)  # the row is the key
    # every row keyed once, in the settled tier, by its hash's first 8 characters
    count = len(CONTENTS_V7["raw_vectors"])
    assert _raw(old_v7, "SELECT tier, count(*) FROM vector_keys GROUP BY tier") == [(0, count)]
    assert _raw(old_v7, "SELECT count(*) FROM vector_keys x JOIN vectors v ON v.vid = x.vid "
                "AND x.k = substr(v.hash, 1, 8)")[0][0] == count


def test_retrieve_answers_as_before_the_upgrade_on_a_real_conversation(old_v7):
    from agentcontext import AgentMemory
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=f"sqlite:///{old_v7}")
    try:
        assert ws.model_name == CONTENTS_V7["model"] and ws.store.schema_version() == LATEST
        memory = AgentMemory(workspace=ws, namespace=NAMESPACE, max_memory_size=None)
        got = ranked(memory, list(CONTENTS_V7["retrievals"]))  # the in-process index built from the upgraded file
        for question, before in CONTENTS_V7["retrievals"].items():
            assert got[question] == before, question
    finally:
        ws.close()


def test_the_upgrade_to_8_is_one_transaction(old_v7):
    class Failing(SQLiteStore):
        MIGRATIONS = SQLiteStore.MIGRATIONS.plus(Migration(LATEST + 1, "breaks halfway", lambda db: (
            db.execute("CREATE TABLE half_done (x)"), db.execute("SELECT * FROM no_such_table"))))

    with pytest.raises(StoreError):
        Failing(old_v7)
    assert [v for (v,) in _raw(old_v7, "SELECT version FROM schema_migrations ORDER BY version")] == list(range(1, 8))
    names = _names(old_v7)
    assert "vectors_hash8" in names and "vector_keys" not in names and "half_done" not in names
    assert raw_vectors(old_v7) == CONTENTS_V7["raw_vectors"]


def _tiers(store) -> dict[int, int]:
    return dict(store._read("SELECT tier, count(*) FROM vector_keys GROUP BY tier"))


def test_new_keys_land_in_the_fresh_tier_and_every_path_finds_them_in_either(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_vectors, "FRESH_MIN", 50)
    store = SQLiteStore(tmp_path / "s.db")
    texts = [f"text number {i}" for i in range(120)]
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="m", content=t, embed_text=t)
                     for i, t in enumerate(texts)])
    hashes = [content_hash(t) for t in texts]
    twin = hashes[0][:8] + "0" * 56  # the same 8-character key as a held hash, another hash
    store.put_vectors({h: np.full(4, i, dtype=np.float32) for i, h in enumerate(hashes[:40])}, "m")
    assert _tiers(store) == {1: 40}  # below FRESH_MIN: fresh
    store.put_vectors({h: np.full(4, i, dtype=np.float32) for i, h in enumerate(hashes[40:80], 40)}, "m")
    assert _tiers(store) == {0: 80}  # merged, in key order
    assert store._read("SELECT k FROM vector_keys WHERE tier = 0") == sorted(
        store._read("SELECT substr(hash, 1, 8) FROM vectors"))
    store.put_vectors({twin: np.zeros(4)} | {h: np.full(4, i, dtype=np.float32) for i, h in
                                             enumerate(hashes[80:100], 80)}, "m")
    assert _tiers(store) == {0: 80, 1: 21}
    # replaced wherever its key lies (settled or fresh), not added; another model has its own row
    store.put_vectors({hashes[0]: np.full(4, -1.0), hashes[90]: np.full(4, -2.0)}, "m")
    store.put_vectors({hashes[0]: np.full(4, 7.0)}, "other")
    assert store._read("SELECT count(*) FROM vectors")[0][0] == 102 and _tiers(store) == {0: 80, 1: 22}
    got = store.get_vectors([*hashes, twin, "f" * 64], "m")
    assert set(got) == {*hashes[:100], twin} and got[hashes[0]][0] == -1.0 and got[hashes[90]][0] == -2.0
    assert got[hashes[55]][0] == 55.0 and got[twin][0] == 0.0 and store.get_vectors([hashes[0]], "other")
    assert store.count_vectors("m") == 100 and {h for h, _ in store.missing_vectors("m")} == set(hashes[100:])
    ids, matrix = store.load_vectors("m", "m")
    assert ids == [f"n{i}" for i in range(100)] and matrix[0, 0] == -1.0 and matrix[99, 0] == 99.0
    pages, after = [], None
    while True:  # export pages in (hash, model) order, the two tiers merged
        rows, after = store.export_rows("vectors", after, limit=7)
        pages += [(r["hash"], r["model"]) for r in rows]
        if after is None:
            break
    assert pages == sorted(store._read("SELECT hash, model FROM vectors")) and len(pages) == 102
    copy = SQLiteStore(tmp_path / "copy.db")
    assert copy.import_rows("vectors", [store.export_rows("vectors", None, 1000)[0]]) == 102
    assert _tiers(copy) == {0: 102} and copy.get_vectors([twin], "m")[twin][0] == 0.0  # an import is settled too
    copy.close()
    store.purge_nodes(["n0"])  # n0's vector goes for both models, its key with it; the twin stays
    assert set(store.get_vectors([hashes[0], twin], "m")) == {twin} and not store.get_vectors([hashes[0]], "other")
    assert store.delete_vectors([twin, hashes[90]]) == 2
    assert store._read("SELECT count(*) FROM vector_keys")[0][0] == store._read("SELECT count(*) FROM vectors")[0][0]
    assert store.check_integrity() == "ok"
    store.close()


def _pages(store, name: str) -> dict[int, bytes]:
    return dict(store._read("SELECT p.pgno, p.data FROM sqlite_dbpage p JOIN dbstat d ON d.pageno = p.pgno "
                            "WHERE d.name = ?", (name,)))


def test_a_batch_of_new_vectors_leaves_the_settled_tier_s_pages_as_they_were(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_vectors, "FRESH_MIN", 10_000)
    store = SQLiteStore(tmp_path / "s.db")
    for start in (0, 10_000, 20_000):  # each batch merged: 30,000 keys settled
        store.put_vectors({content_hash(str(i)): np.ones(4) for i in range(start, start + 10_000)}, "m")
    assert _tiers(store) == {0: 30_000}
    before = _pages(store, "vector_keys")
    store.put_vectors({content_hash(str(i)): np.ones(4) for i in range(30_000, 32_000)}, "m")  # random hashes
    assert _tiers(store) == {0: 30_000, 1: 2_000}
    after = _pages(store, "vector_keys")
    changed = {p for p in after if before.get(p) != after[p]}
    # the fresh tier's few leaves and the path to them; the old index dirtied nearly every leaf with such a batch
    assert len(before) >= 20 and len(changed) <= 6, (len(before), len(changed))
    store.close()


def test_a_vector_whose_bytes_are_not_its_dim_refuses_the_upgrade_and_names_it(old_v7):
    h, model = _raw(old_v7, "SELECT hash, model FROM vectors ORDER BY rowid LIMIT 1")[0]
    db = sqlite3.connect(old_v7)
    db.execute("UPDATE vectors SET dim = dim + 1 WHERE hash = ? AND model = ?", (h, model))
    db.commit()
    db.close()
    with pytest.raises(StoreError) as info:
        SQLiteStore(old_v7)
    assert h in str(info.value) and "nothing was changed" in str(info.value)
    assert "vector_keys" not in _names(old_v7)


def test_vacuum_keeps_each_vector_s_row_so_its_key_still_finds_it(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    hashes = [content_hash(f"v{i}") for i in range(300)]
    store.put_vectors({h: np.full(4, i, dtype=np.float32) for i, h in enumerate(hashes)}, "m")
    assert store.delete_vectors(hashes[::3]) == 100  # gaps in the vids, which a VACUUM renumbers in a rowid table
    store._db.execute("VACUUM")
    got = store.get_vectors(hashes, "m")
    assert set(got) == set(hashes) - set(hashes[::3]) and all(got[h][0] == i for i, h in enumerate(hashes) if i % 3)
    store.close()
