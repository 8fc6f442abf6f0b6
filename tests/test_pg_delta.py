"""The delta of unindexed vectors on PostgreSQL (store/pg_delta.py, issue 23 s1): new vectors land outside the HNSW
index, ``nearest`` scores them exactly beside the index walk with the same results as once they are folded, a fold
is idempotent and survives a SIGKILL with every vector findable exactly once, a large delta folds by itself off the
write path, and bad input is refused as before."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from agentcontext import access
from agentcontext.errors import ValidationError
from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, pg_vectors
from agentcontext.workspace import Workspace

from .conftest import ROOT

pytestmark = pytest.mark.postgres
DIM = 16


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def nodes(first: int, n: int) -> list[Node]:
    return [Node(id=f"n{i}", kind="memory" if i % 2 else "doc", namespace="ns:a" if i % 3 else "ns:b",
                 key=f"k{i:04d}", title="Bob" if i % 4 == 0 else "Ann", tags=[f"c:{i % 5}"],
                 embed_text=f"text {i}") for i in range(first, first + n)]


def put(store, vectors: np.ndarray, first: int, n: int) -> None:
    with store.transaction():
        store.put_nodes(nodes(first, n))
        store.put_vectors({content_hash(f"text {i}"): vectors[i] for i in range(first, first + n)}, "m")


def states(store) -> tuple[int, int, int]:
    """(searched, pending, both) rows."""
    return store._read("SELECT count(*) FILTER (WHERE searched), count(*) FILTER (WHERE pending), "
                       "count(*) FILTER (WHERE searched AND pending) FROM vectors")[0]


@pytest.fixture
def indexed(pg_url, monkeypatch):
    """A store of 300 vectors in the HNSW index and 120 more in the delta (the nodes are many: the index is walked
    past ``EXACT_ROWS``, set low)."""
    monkeypatch.setattr(pg_vectors, "EXACT_ROWS", 20)
    store = open_store(pg_url)
    vectors = unit(np.random.default_rng(7), 420)
    put(store, vectors, 0, 300)
    assert store.fold()["folded"] == 300
    put(store, vectors, 300, 120)
    yield store, vectors
    store.close()


CASES = [({}, lambda i: True), ({"namespace": "ns:a"}, lambda i: i % 3 != 0),
         ({"namespace": "ns:b", "kind": "memory"}, lambda i: i % 3 == 0 and i % 2 == 1),
         ({"namespace": "ns:a", "titles": ["Bob"]}, lambda i: i % 3 != 0 and i % 4 == 0),
         ({"tags": ["c:2"]}, lambda i: i % 5 == 2)]


def exact(vectors: np.ndarray, query: np.ndarray, keep, k: int) -> list[str]:
    return [f"n{i}" for i in np.argsort(-(vectors @ query), kind="stable") if keep(i)][:k]


def test_new_vectors_land_in_the_delta_and_nearest_finds_them_as_after_the_fold(indexed):
    store, vectors = indexed
    assert states(store) == (300, 120, 0) and store.pending_vectors() == 120
    assert store.info()["pending_vectors"] == 120
    queries = [vectors[i] + 0.05 for i in (3, 150, 310, 333, 419)]
    before = {(qi, ci): store.nearest(q, "m", 8, **f) for qi, q in enumerate(queries) for ci, (f, _) in
              enumerate(CASES)}
    for (qi, ci), hits in before.items():
        assert [h[0] for h in hits] == exact(vectors, queries[qi], CASES[ci][1], 8), (qi, CASES[ci][0])
    # a delta row is found: its own vector's nearest is itself, from the delta's exact scores
    assert store.nearest(vectors[333], "m", 1)[0] == ("n333", pytest.approx(1.0, abs=1e-3))  # float16 held
    receipt = store.fold(chunk=50)
    assert receipt["folded"] == 120 and receipt["chunks"] == 3 and receipt["pending"] == 0
    assert states(store) == (420, 0, 0)
    after = {(qi, ci): store.nearest(q, "m", 8, **f) for qi, q in enumerate(queries) for ci, (f, _) in
             enumerate(CASES)}
    for key in before:  # the same, but where float16 (halfvec) rounding of the query ties two rows in the walk
        assert [s for _, s in after[key]] == pytest.approx([s for _, s in before[key]], abs=2e-3), key
        assert len({h[0] for h in after[key]} & {h[0] for h in before[key]}) >= len(before[key]) - 1, key
        assert [h[0] for h in after[key]][:5] == [h[0] for h in before[key]][:5], key
    assert store.check_integrity() == "ok"


def test_a_fold_is_idempotent_and_rewrites_and_erasure_keep_one_state(indexed):
    store, vectors = indexed
    assert store.fold()["folded"] == 120
    again = store.fold()
    assert again["folded"] == 0 and again["chunks"] == 0 and states(store) == (420, 0, 0)
    # a vector put again changed leaves the index for the delta; unchanged, it stays where it is
    with store.transaction():
        store.put_vectors({content_hash("text 5"): -vectors[5], content_hash("text 6"): vectors[6]}, "m")
    assert states(store) == (419, 1, 0)
    assert store.nearest(-vectors[5], "m", 1)[0][0] == "n5"
    # purged: gone from the delta as from the index
    store.purge_nodes(["n5", "n7"])
    assert states(store) == (418, 0, 0) and "n5" not in [h[0] for h in store.nearest(-vectors[5], "m", 10)]


def test_bad_input_is_refused_and_nothing_lands_in_the_delta(indexed):
    store, vectors = indexed
    bad = vectors[0].copy()
    bad[3] = np.nan
    with pytest.raises(ValidationError):
        store.put_vectors({content_hash("text 1"): vectors[1], "h-bad": bad}, "m")
    with pytest.raises(ValidationError):
        store.put_vectors({"h-short": np.ones((2, 3), dtype=np.float32)}, "m")
    assert states(store) == (300, 120, 0)


FOLDER = """
import sys, time
from agentcontext.store import open_store
store = open_store(sys.argv[1])
def progress(done, total):
    print(done, total, flush=True)
    if done > 10:  # inside the second chunk's transaction, before its commit
        time.sleep(60)
store.fold(chunk=10, progress=progress)
"""


def test_a_fold_killed_mid_chunk_leaves_every_vector_findable_exactly_once(indexed, pg_url):
    store, vectors = indexed
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", FOLDER, pg_url], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().split() == ["10", "120"]  # the first chunk, committing
        assert proc.stdout.readline().split() == ["20", "120"]  # the second moved, not committed
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 30
    while store._read("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND query "
                      "LIKE 'UPDATE vectors SET searched = true%%'")[0][0] and time.monotonic() < deadline:
        time.sleep(0.1)  # the server notices the dead client and rolls its chunk back (its row locks go)
    assert states(store) == (310, 110, 0)
    for i in range(420):
        hits = store.nearest(vectors[i], "m", 3)
        assert hits[0][0] == f"n{i}" and len({h[0] for h in hits}) == 3, i
    every = [h[0] for h in store.nearest(vectors[305] + 0.05, "m", 420)]
    assert len(every) == 420 and set(every) == {f"n{i}" for i in range(420)}  # each once, folded or not
    assert store.fold()["folded"] == 110 and states(store) == (420, 0, 0)


def test_a_commit_past_the_bound_folds_in_the_background(pg_url):
    from agentcontext.store.postgres import PostgresStore

    store = PostgresStore(pg_url, fold_at=50)
    vectors = unit(np.random.default_rng(8), 200)
    put(store, vectors, 0, 40)
    time.sleep(0.2)
    assert not store.folder.running and states(store)[1] == 40  # within the bound: left in the delta
    put(store, vectors, 40, 30)  # 70 pending: a fold starts after the commit, on its own connection
    deadline = time.monotonic() + 60
    while (store.folder.running or states(store)[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert states(store) == (70, 0, 0) and store.folder.last["folded"] == 70
    assert store.nearest(vectors[55], "m", 1)[0][0] == "n55"
    store.close()


def test_retrieve_ranks_the_same_with_and_without_the_delta(pg_url):
    from agentcontext.memory import AgentMemory
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=pg_url)
    memory = AgentMemory(workspace=ws, namespace="delta")
    topics = ["the garden needs water", "a trip to the mountains", "bread baked on sunday", "the cat sleeps late",
              "a concert in the park", "taxes are due in april"]
    memory.batch_store([{"content": f"{topics[i % len(topics)]} (note {i})", "conversation_id": f"c{i % 4}"}
                        for i in range(60)])
    assert ws.store.pending_vectors() > 0
    questions = ["when are taxes due", "what about the cat", "the mountains trip", "garden water"]
    before = [[r["id"] for r in memory.retrieve(q, max_results=8)] for q in questions]
    assert ws.store.fold()["pending"] == 0
    assert [[r["id"] for r in memory.retrieve(q, max_results=8)] for q in questions] == before
    ws.close()


def test_store_fold_on_the_command_line(pg_url, tmp_path):
    store = open_store(pg_url)
    vectors = unit(np.random.default_rng(9), 30)
    put(store, vectors, 0, 30)
    store.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "AGENTCONTEXT_URL": pg_url}
    env.pop("AGENTCONTEXT_HOME", None)
    ws = Workspace.open(url=pg_url)
    access.grant(ws, "reader", "memory:*", "read")  # from now on every call is checked
    ws.close()
    denied = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--as", "reader", "store", "fold", "--json"],
                            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert denied.returncode == 1 and json.loads(denied.stdout)["error"]["type"] == "AccessDeniedError"
    store = open_store(pg_url)
    assert store.pending_vectors() == 30  # nothing folded for a principal without admin on *
    assert store.audit(principal="reader")[-1]["outcome"] == "denied"
    store.close()
    done = subprocess.run([sys.executable, "-m", "agentcontext.cli", "store", "fold", "--json"], capture_output=True,
                          text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    assert receipt["folded"] == 30 and receipt["pending"] == 0
    again = subprocess.run([sys.executable, "-m", "agentcontext.cli", "store", "fold"], capture_output=True,
                           text=True, env=env, timeout=120, cwd=tmp_path)
    assert again.returncode == 0 and "nothing to fold" in again.stdout, again.stdout + again.stderr
