"""The PostgreSQL bulk write path (store/pg_bulk.py, issue 23 s1-2) on the real server: a batch is all or nothing (one
bad row refuses it, naming the row; a client killed mid-load leaves each batch whole or absent), a large load builds
the HNSW index after its rows while a small one goes into it, the bulk path and the row-at-a-time path store the
same, and migration 4 moves a store of step 3 to the compact layout (the index over searched vectors, the current
version held once)."""
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
from agentcontext.model import Node, content_hash
from agentcontext.store import open_store
from agentcontext.store.migrations import Migrations
from agentcontext.store.pg_bulk import REBUILD_MIN, REBUILD_RATIO
from agentcontext.store.pg_vectors import ann_index_name
from agentcontext.workspace import Workspace

from .conftest import ROOT

pytestmark = pytest.mark.postgres
DIM = 8  # vectors put directly
MEMORY_DIM = 384  # memories: the workspace embedder's dimension (it embeds the questions)


def unit(rng, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def items(rng, start: int, n: int, dim: int = MEMORY_DIM, conv_every: int = 10) -> list[dict]:
    vectors, contexts = unit(rng, n, dim), unit(rng, n, dim)
    return [{"id": f"m{start + i:06d}", "content": f"turn {start + i} on topic {(start + i) % 7}",
             "conversation_id": f"c{(start + i) // conv_every}", "created_at": "2024-01-01T00:00:00+00:00",
             "vector": vectors[i], "context_vector": contexts[i]} for i in range(n)]


@pytest.fixture
def memory(pg_url, tmp_path):
    ws = Workspace(open_store(pg_url))
    mem = AgentMemory(workspace=ws, max_memory_size=None)
    yield mem
    ws.close()


def _counts(store) -> tuple[int, int]:
    return (store.count_nodes(kind="memory"), store._read("SELECT count(*) FROM vectors")[0][0])


def _index_oid(store, model: str, dim: int) -> int | None:
    row = store._read("SELECT to_regclass(%s)::oid", (ann_index_name(model, dim),))[0][0]
    return row


def test_one_bad_vector_refuses_the_batch_naming_it(pg_url):
    store = open_store(pg_url)
    rng = np.random.default_rng(1)
    good = {content_hash(f"t{i}"): v for i, v in enumerate(unit(rng, 50))}
    bad = dict(good)
    bad[content_hash("nan")] = np.full(DIM, np.nan, dtype=np.float32)
    with pytest.raises(ValidationError, match=content_hash("nan")):
        store.put_vectors(bad, "m")
    huge = dict(good)
    huge[content_hash("inf")] = np.full(DIM, np.inf, dtype=np.float32)
    with pytest.raises(ValidationError, match=content_hash("inf")):
        store.put_vectors(huge, "m")
    assert store._read("SELECT count(*) FROM vectors")[0][0] == 0  # nothing of either batch
    store.close()


def test_one_bad_memory_refuses_the_batch_naming_it(memory):
    rng = np.random.default_rng(2)
    batch = items(rng, 0, 300)
    batch[137]["content"] = "a NUL \x00 here"
    with pytest.raises(ValidationError, match="m000137"):
        memory.batch_store(batch)
    batch[137]["content"] = "fine"
    batch[200]["vector"] = np.full(DIM, np.inf, dtype=np.float32)
    with pytest.raises(ValidationError):
        memory.batch_store(batch)
    assert _counts(memory.db) == (0, 0)  # nothing written by either
    batch[200]["vector"] = unit(rng, 1, MEMORY_DIM)[0]
    assert len(memory.batch_store(batch)) == 300 and _counts(memory.db) == (300, 300 + 270)  # a first turn: no pair


def test_a_large_load_builds_the_index_after_its_rows_and_a_small_one_inserts(pg_url):
    store = open_store(pg_url)
    rng = np.random.default_rng(3)
    n = REBUILD_MIN
    first = {content_hash(f"a{i}"): v for i, v in enumerate(unit(rng, n))}
    store.put_vectors(first, "m")  # an empty store: built after the rows
    built = _index_oid(store, "m", DIM)
    assert built is not None
    store.put_vectors({content_hash(f"b{i}"): v for i, v in enumerate(unit(rng, 10))}, "m")  # small: inserted
    assert _index_oid(store, "m", DIM) == built
    store.put_vectors(first, "m")  # the same vectors again: nothing new, the index stays
    assert _index_oid(store, "m", DIM) == built
    more = {content_hash(f"c{i}"): v for i, v in enumerate(unit(rng, n))}
    store.put_vectors(more, "m")  # n new beside n + 10 held (< REBUILD_RATIO * n): built again after the rows
    rebuilt = _index_oid(store, "m", DIM)
    assert rebuilt is not None and rebuilt != built and REBUILD_RATIO * n > n + 10
    query = unit(rng, 1)[0]  # the index serves the same answers as exact search
    store.put_nodes([Node(id=f"n{i}", kind="doc", namespace="ns", embed_text=f"c{i}") for i in range(50)])
    vectors = np.stack([more[content_hash(f"c{i}")] for i in range(50)])
    exact = [f"n{i}" for i in np.argsort(-(vectors @ query), kind="stable")[:5]]
    assert [i for i, _ in store.nearest(query, "m", 5, namespace="ns")] == exact
    store.close()


KILLED = """
import sys, numpy as np
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, size = sys.argv[1], int(sys.argv[2])
mem = AgentMemory(workspace=Workspace(open_store(url)), max_memory_size=None)
rng = np.random.default_rng(4)
for b in range(100):
    v, c = rng.standard_normal((size, 384)).astype(np.float32), rng.standard_normal((size, 384)).astype(np.float32)
    mem.batch_store([{"id": f"b{b:03d}-{i:05d}", "content": f"batch {b} turn {i}", "conversation_id": f"b{b}c{i // 20}",
                      "vector": v[i], "context_vector": c[i]} for i in range(size)])
    print(b, flush=True)
"""


def test_a_client_killed_mid_load_leaves_each_batch_whole_or_absent(pg_url):
    size = 1200  # 2,340 vectors a batch: the bulk build
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, pg_url, str(size)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    assert proc.stdout.readline().strip() == "0"  # one batch committed
    time.sleep(1.5)  # inside the next one (a batch takes seconds)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    store = open_store(pg_url)
    per_batch = dict(store._read("SELECT split_part(id, '-', 1), count(*) FROM nodes GROUP BY 1"))
    vectors = store._read("SELECT count(*) FROM vectors")[0][0]
    assert per_batch and all(n == size for n in per_batch.values()), per_batch
    assert vectors == (2 * size - size // 20) * len(per_batch)  # each batch's vectors with it (a first turn: no pair)
    store.close()


def test_the_bulk_path_stores_what_the_row_at_a_time_path_stores(pg_server):
    rng = np.random.default_rng(5)
    assert REBUILD_MIN <= 1027
    batch = items(rng, 0, 520, conv_every=40)  # 1,027 vectors (a first turn has no pair): the bulk build
    stores = {}
    for name in ("bulk", "rows"):
        ws = Workspace(open_store(pg_server.url(f"parity_{name}")))
        mem = AgentMemory(workspace=ws, max_memory_size=None)
        if name == "bulk":
            mem.batch_store(batch)
        else:  # small batches: each vector inserted into an index made before it
            for start in range(0, len(batch), 10):
                mem.batch_store(batch[start: start + 10])
        stores[name] = (ws, mem)
    (bws, bulk), (rws, rows) = stores["bulk"], stores["rows"]  # keys (and the hash over them) hold the
    # place in a batch: left out
    keep = "id, kind, namespace, title, summary, content, props, tags, version, embed_hash, tokens"
    assert bws.store._read(f"SELECT {keep} FROM nodes ORDER BY id") == rws.store._read(
        f"SELECT {keep} FROM nodes ORDER BY id")
    assert bws.store._read("SELECT hash, model, dim, vector::text FROM vectors ORDER BY hash") == rws.store._read(
        "SELECT hash, model, dim, vector::text FROM vectors ORDER BY hash")
    query = unit(rng, 1, MEMORY_DIM)[0]
    for k in (5, 20):
        assert bws.store.nearest(query, bws.model_name, k) == rws.store.nearest(query, rws.model_name, k)
    for question in ("turn 17 on topic 3", "topic 5"):
        assert [r["id"] for r in bulk.retrieve(question, max_results=10)] == [
            r["id"] for r in rows.retrieve(question, max_results=10)]
    for ws, _ in stores.values():
        ws.close()


def test_step_4_moves_a_step_3_store_to_the_compact_layout(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step3(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:3])

    class Step4(PostgresStore):  # step 5 (halfvec) is tested in test_pg_disk.py
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:4])

    old = Step3(pg_url)
    assert old.schema_version() == 3
    db = old._db
    # as step 3's code wrote them: every version in node_versions (the current ones too), float32 vectors with an
    # HNSW index over vector(dim); a updated once (first, second), b retracted
    t1, t2, t3 = "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00", "2024-01-03T00:00:00+00:00"
    rows = [("a", "first", content_hash("first"), t1, None, 1), ("a", "second", content_hash("second"), t2, None, 2),
            ("b", "gone", content_hash("gone"), t1, None, 1), ("b", "gone", content_hash("gone"), t3, t3, 2)]
    cols = "id, kind, namespace, content, embed_hash, recorded_at, retracted_at, version"
    db.execute(f"INSERT INTO node_versions({cols}) SELECT id, 'doc', 'ns', content, h, at, gone, v FROM "
               "unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::int[]) AS r(id, content, h, "
               "at, gone, v)", [list(c) for c in zip(*rows)])
    db.execute(f"INSERT INTO nodes({cols}, embed_text) SELECT {cols}, content FROM node_versions v WHERE version = 2")
    rng = np.random.default_rng(6)
    vectors = {content_hash(t): v for t, v in zip(("second", "gone", "first"), unit(rng, 3, 4))}
    for h, v in vectors.items():
        db.execute("INSERT INTO vectors VALUES (%s, 'm', 4, %s)", (h, v))
    db.execute(f"CREATE INDEX {ann_index_name('m', 4)} ON vectors USING hnsw ((vector::vector(4)) vector_ip_ops) "
               "WHERE model = 'm' AND dim = 4")
    assert db.execute("SELECT count(*) FROM node_versions").fetchone()[0] == 4
    old.close()

    store = Step4(pg_url)
    assert store.schema_version() == 4
    kinds = dict(store._read("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                             "'vectors'::regclass AND attname = 'vector'"))
    assert kinds == {"vector": "vector"}  # float32 kept at step 4 (step 5 holds halfvec)
    assert store._read("SELECT id, version FROM node_versions ORDER BY id, version") == [("a", 1), ("b", 1)]
    assert [(n.version, n.content) for n in store.node_versions("a")] == [(1, "first"), (2, "second")]
    assert [n.version for n in store.node_versions("b")] == [1, 2] and store.get_node("b") is None
    assert store.get_node("a", as_of=t1).content == "first" and store.get_node("a").content == "second"
    got = store.get_vectors(list(vectors), "m")
    assert all(np.array_equal(got[h], v) for h, v in vectors.items())
    index = store._read("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (ann_index_name("m", 4),))[0][0]
    assert "_ip_ops" in index and "searched" in index
    # searched: the vectors live nodes' texts have (the HNSW index holds those alone)
    assert dict(store._read("SELECT hash, searched FROM vectors")) == {
        content_hash("second"): True, content_hash("gone"): True, content_hash("first"): False}
    assert store.check_integrity() == "ok"
    store.close()
    store = open_store(pg_url)  # the steps after 4 (nearest reads the vector delta's column, step 8)
    assert store.nearest(vectors[content_hash("second")], "m", 2, namespace="ns")[0][0] == "a"
    store.close()
