"""An import into an empty PostgreSQL table (``Store.import_rows``: a whole store copied, the 1,000,000-memory
build of benchmarks/postgres_scale.py) drops the table's indexes and builds each once after the rows
(store/pg_bulk.drop_indexes, issue 23 s1): the same indexes come back, the same rows and answers as an import that
inserts into kept indexes, an import into a table that holds rows keeps its indexes, and a client killed mid-import
leaves nothing of it and every index in place."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

from .conftest import ROOT

pytestmark = pytest.mark.postgres


def _indexes(store, table: str) -> dict[str, tuple[int, str]]:
    """name: (oid, definition) of every index of ``table``."""
    return {name: (oid, definition) for name, oid, definition in store._read(
        "SELECT c.relname, c.oid::bigint, pg_get_indexdef(c.oid) FROM pg_index i JOIN pg_class c ON "
        "c.oid = i.indexrelid WHERE i.indrelid = %s::regclass", (table,))}


@pytest.fixture(scope="module")
def source(pg_server):
    """A store of 300 memories in conversations (batch_store: nodes, versions, changes, vectors)."""
    ws = Workspace(open_store(pg_server.url("import_source")))
    mem = AgentMemory(workspace=ws, max_memory_size=None)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    mem.batch_store([{"id": f"m{i:04d}", "content": f"turn {i} about {['tea', 'rain', 'chess'][i % 3]} and more",
                      "conversation_id": f"c{i // 20}", "vector": vectors[i] / np.linalg.norm(vectors[i])}
                     for i in range(300)])
    mem.batch_store([{"id": "m0001", "content": "turn 1 about tea, said again", "conversation_id": "c0"}])
    yield ws.store, ws.model_name
    ws.close()


def _copy(src, dst, tables=("nodes", "node_versions", "changes", "vectors")) -> None:
    for table in tables:
        pages = [src.export_rows(table, None, 100_000)[0]]
        dst.import_rows(table, [pages[0][:120], pages[0][120:]])  # two batches: one drop, one build


def test_an_import_into_an_empty_table_builds_its_indexes_once_after_the_rows(source, pg_server):
    src, model = source
    dst = open_store(pg_server.url("import_empty"))
    before = {t: _indexes(dst, t) for t in ("nodes", "vectors")}
    _copy(src, dst)
    after = {t: _indexes(dst, t) for t in ("nodes", "vectors")}
    for table in ("nodes", "vectors"):
        assert {k: v[1] for k, v in after[table].items() if not k.startswith("vectors_ann")} == {
            k: v[1] for k, v in before[table].items()}  # the same indexes, as defined
    rebuilt = {k for k in before["nodes"] if after["nodes"][k][0] != before["nodes"][k][0]}
    assert {"nodes_tsv", "nodes_tags", "nodes_props", "nodes_embed", "nodes_prev"} <= rebuilt
    assert {"nodes_pkey", "nodes_id_key"}.isdisjoint(rebuilt)  # keys stay: the load's lookups use them
    # the vectors' key is built after the rows (a new index), not kept through the load and REINDEXed (same oid)
    assert after["vectors"]["vectors_pkey"][0] != before["vectors"]["vectors_pkey"][0]
    assert dst._read("SELECT contype FROM pg_constraint WHERE conname = 'vectors_pkey' AND conrelid = "
                     "'vectors'::regclass") == [("p",)]
    assert dst._read("SELECT reltuples FROM pg_class WHERE relname = 'nodes' AND relnamespace = "
                     "current_schema()::regnamespace")[0][0] == 300  # analyzed: the planner last saw it empty
    keep = "id, kind, namespace, title, content, props, tags, version, embed_hash, tsv::text"
    assert dst._read(f"SELECT {keep} FROM nodes ORDER BY id") == src._read(f"SELECT {keep} FROM nodes ORDER BY id")
    for query in ("tea", "chess rain", "said again"):
        assert dst.text_search(query, limit=20) == src.text_search(query, limit=20)
    probe = src.export_rows("vectors", None, 1)[0][0]["vector"]
    assert dst.nearest(probe, model, 10) == src.nearest(probe, model, 10)
    dst.close()


def test_a_copy_holding_a_vector_twice_is_refused_whole_and_leaves_the_key(source, pg_server):
    """The vectors' key built after the rows still refuses a row held twice (by its build: the whole import goes),
    and the table keeps its key and indexes."""
    src, _ = source
    dst = open_store(pg_server.url("import_twice"))
    held = _indexes(dst, "vectors")
    rows = src.export_rows("vectors", None, 100_000)[0]
    with pytest.raises(Exception, match="vectors_pkey"):
        dst.import_rows("vectors", [rows[:300], rows[299:]])
    assert _indexes(dst, "vectors") == held and dst._read("SELECT count(*) FROM vectors") == [(0,)]
    dst.import_rows("vectors", [rows[:300], rows[300:]])
    assert dst._read("SELECT count(*) FROM vectors") == [(len(rows),)]
    assert set(_indexes(dst, "vectors")) >= set(held)
    dst.close()


def test_an_import_into_a_table_that_holds_rows_keeps_its_indexes(source, pg_server):
    src, _ = source
    dst = open_store(pg_server.url("import_held"))
    rows = src.export_rows("nodes", None, 100_000)[0]
    dst.import_rows("nodes", [rows[:1]])  # one row: the table is no longer empty
    held = _indexes(dst, "nodes")
    dst.import_rows("nodes", [rows[1:]])
    assert _indexes(dst, "nodes") == held
    assert dst.count_nodes() == len(rows)
    dst.close()


def test_a_refused_import_into_an_empty_table_leaves_its_indexes(source, pg_server):
    src, _ = source
    dst = open_store(pg_server.url("import_refused"))
    held = _indexes(dst, "nodes")
    rows = src.export_rows("nodes", None, 100_000)[0]
    bad = [dict(r) for r in rows[120:]]
    bad[5]["content"] = "a NUL \x00 here"
    with pytest.raises(ValidationError, match=bad[5]["id"]):
        dst.import_rows("nodes", [rows[:120], bad])
    assert _indexes(dst, "nodes") == held and dst.count_nodes() == 0
    dst.import_rows("nodes", [rows])  # the store works on: the next import drops and builds again
    assert dst.count_nodes() == len(rows) and set(_indexes(dst, "nodes")) == set(held)
    dst.close()


KILLED = """
import sys
from agentcontext.store import open_store
src, dst = open_store(sys.argv[1]), open_store(sys.argv[2])
rows = src.export_rows("nodes", None, 100_000)[0]
def batches():
    for i in range(10 ** 6):  # the same rows again and again under new ids: the import never ends by itself
        yield [{**r, "id": f"{r['id']}-{i}"} for r in rows]
        print(i, flush=True)
dst.import_rows("nodes", batches())
"""


def test_a_client_killed_mid_import_leaves_nothing_and_every_index(source, pg_server):
    dst_url = pg_server.url("import_killed")
    dst = open_store(dst_url)
    held = _indexes(dst, "nodes")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, pg_server.url("import_source"), dst_url],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stdout.readline().strip() == "0"  # the indexes dropped (before the first row), a batch in
    assert proc.stdout.readline().strip() == "1"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    dst.close()
    dst = open_store(dst_url)
    assert dst.count_nodes() == 0 and _indexes(dst, "nodes") == held
    # BM25's counts: none of the killed load's rows, and their triggers enabled (the load had disabled them)
    assert dst._read("SELECT count(*) FROM text_counts") == [(0,)]
    assert dst._read("SELECT DISTINCT tgenabled FROM pg_trigger WHERE tgrelid = 'nodes'::regclass AND "
                     "starts_with(tgname, 'actx_text_counts')") == [("O",)]
    dst.close()
