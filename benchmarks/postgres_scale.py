"""Memory retrieval on a 1,000,000-memory PostgreSQL store (issue 9 s4): the server ranks, the client holds nothing.

Builds (once; kept in ``--data`` for the next runs) an embedded PostgreSQL server holding N memories in conversations
of 20 turns, each with its own 384-d vector and the pair vector of its turn with the one before (2N vectors). Texts
and vectors come from the LoCoMo dev split: each memory mixes three turns (text: one turn and a fragment of two
others; vector: the same mix of their real MiniLM embeddings plus noise), so neighbours in meaning are also
neighbours in words. The rows go in through ``Store.import_rows`` (COPY), the HNSW index is built once at the end.

Then, each figure beside its target and the baseline the issue names (a process that mirrors the store: the
in-process memory index built from the same server, as every process did before), measured in this run:
- ``retrieve`` p50 / p95 over distinct LoCoMo questions (the query's embedding included), k = 10;
- recall@10 of the server's dense search (``nearest``) against exact search over every vector;
- how much of the server ranking's top 10 the in-process ranking (exact, every memory) shares, and a labelled check of
  both: memory n is led by one LoCoMo turn (the whole turn, 0.7 of its vector), so it is relevant to a question whose
  evidence names that turn; hit@10 (a relevant memory among the 10) and precision@10 over the labelled questions;
- the client's RSS growth while serving the questions, and a new process's first query (its store opened and the
  embedder loaded first; and from the process start too): the first process meets a server just started (cold
  caches), a second new process one that has served queries (the usual case), both are printed.
Run: /work/tools/bench.sh .venv/bin/python benchmarks/postgres_scale.py [--memories 1000000] [--queries 200]
[--before-src DIR] (``--before-src``: the code of another source tree timed against this one in the same run, on the
same server and questions, new processes alternating; its p50 / p95 and the ratio are printed too; ``--before-data``
DIR: its runs on a copy of the cluster at its schema, when this tree's is newer)
(``--cold``, with ``--before-src``: each code's first query on a server restarted for it, its buffers empty: the
store's prewarm at open against none)
(``--build-only`` builds the kept cluster and measures nothing: the hour-long 1M build need not hold the bench lock.)
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import before_tree, p95, report  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402
from agentcontext.eval_locomo import evidence, turn_text, turns  # noqa: E402
from agentcontext.memory.records import build_node, memory_text  # noqa: E402
from agentcontext.model import content_hash  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.store.rows import NODE_COLS, plan_versions  # noqa: E402

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
if not LOCOMO.exists():
    LOCOMO = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"
NAMESPACE, TURNS, BATCH = "memory:scale", 20, 10000
NAMES = ("Ava Ben Cleo Dan Eve Finn Gia Hugo Ivy Jon Kai Lea Max Nia Omar Pia Quinn Rosa Sam Tia Uma Vic Wes Xia "
         "Yara Zed Ada Bo Cy Di Ed Flo Gus Hal Ida Jay Kim Lou Mo Ned").split()
SERVER = ("-c shared_buffers=2GB -c maintenance_work_mem=5GB -c max_parallel_maintenance_workers=1 "
          "-c effective_cache_size=8GB -c work_mem=64MB -c max_wal_size=8GB "
          "-c log_min_duration_statement=2000")
TARGETS = {"retrieve_p50_ms": 40, "retrieve_p95_ms": 80, "recall_at_10": 0.98, "rss_growth_mb": 300,
           "first_query_ms": 200}


def base_corpus(data: Path) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """LoCoMo dev turns and questions with their real embeddings (computed once, kept in ``data``)."""
    samples = json.loads(LOCOMO.read_text())
    texts = [turn_text(t) for s in samples for t in turns(s)]
    questions = list(dict.fromkeys(q["question"] for s in samples for q in s["qa"]))
    cache = data / "locomo-vectors.npz"
    if cache.exists():
        z = np.load(cache)
        return texts, z["texts"], questions, z["questions"]
    from agentcontext.embed.base import default_embedder

    embedder = default_embedder()
    tv, qv = embedder.embed(texts), embedder.embed(questions)
    np.savez(cache, texts=tv, questions=qv)
    return texts, tv, questions, qv


def batch(i: int, texts: list[str], vectors: np.ndarray) -> tuple[list[Any], dict[str, np.ndarray], np.ndarray]:
    """Memories [i * BATCH, (i + 1) * BATCH): nodes (planned as the store plans them), vectors by hash, own vectors."""
    rng = np.random.default_rng(1000 + i)
    nodes, by_hash, own = [], {}, np.empty((BATCH, vectors.shape[1]), dtype=np.float32)
    prev = None
    for j in range(BATCH):
        n = i * BATCH + j
        conv, turn = divmod(n, TURNS)
        a, b, c = rng.integers(len(texts), size=3)
        speaker = NAMES[(conv * 7 + turn % 2) % len(NAMES)]
        text = f"{texts[a]} {' '.join(texts[b].split()[:8])} {' '.join(texts[c].split()[-6:])} (#{n})"  # unique
        v = 0.7 * vectors[a] + 0.4 * vectors[b] + 0.3 * vectors[c] + rng.standard_normal(vectors.shape[1]) * 0.015
        v = (v / np.linalg.norm(v)).astype(np.float32)
        created = f"2024-{1 + conv % 12:02d}-{1 + conv % 28:02d}T{turn:02d}:{j % 60:02d}:00+00:00"
        node = build_node(NAMESPACE, text, {"speaker": speaker, "n": n}, f"c{conv}", None, created_at=created,
                          seq=turn, prev=prev.id if turn and prev is not None else None,
                          memory_id=f"mem_{n:08d}")
        if turn and prev is not None:
            pair = memory_text(prev.title, prev.content) + "\n" + node.embed_text
            node.props["pair_hash"] = content_hash(pair)
            p = own[j - 1] + v
            by_hash[node.props["pair_hash"]] = (p / np.linalg.norm(p)).astype(np.float32)
        by_hash[content_hash(node.embed_text)] = v
        own[j] = v
        nodes.append(node)
        prev = node
    plan_versions(nodes, {}, "2024-12-31T00:00:00.000000+00:00", "bench")
    return nodes, by_hash, own


def rows(nodes: list[Any], versions: bool) -> list[dict[str, Any]]:
    cols = NODE_COLS.split(", ")
    out = []
    for node in nodes:
        values = dict(zip(cols, (node.id, node.kind, node.namespace, node.key, node.title, node.summary,
                                 node.content, json.dumps(node.props, sort_keys=True, default=str), node.tags,
                                 node.valid_from, node.valid_until, node.recorded_at, None, node.version,
                                 node.content_hash, node.created_by, node.embed_hash, node.tokens)))
        values["embed_text"] = None if versions else node.embed_text
        out.append(values)
    return out


def _made(i: int) -> None:
    """Batch ``i``'s rows for each table and vectors, kept in ``data/batches`` (a worker of ``prepare``)."""
    path = _WORKER["data"] / "batches" / f"{i:05d}.pkl"
    if path.exists():
        return
    nodes, by_hash, mine = batch(i, _WORKER["texts"], _WORKER["vectors"])
    _WORKER["own"][i * BATCH: (i + 1) * BATCH] = mine
    made = {"nodes": rows(nodes, versions=False), "hashes": list(by_hash),
            "vectors": np.stack(list(by_hash.values())),
            "changes": [{"seq": i * BATCH + j + 1, "at": x.recorded_at, "actor": "bench", "op": "node.put",
                         "target": x.id, "namespace": NAMESPACE, "detail": json.dumps({"version": 1, "kind": x.kind})}
                        for j, x in enumerate(nodes)]}
    part = path.with_suffix(".part")
    part.write_bytes(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
    part.rename(path)


_WORKER: dict[str, Any] = {}


def _worker(data: Path, n: int) -> None:
    texts, vectors, _, _ = base_corpus(data)
    _WORKER.update(data=data, texts=texts, vectors=vectors,
                   own=np.lib.format.open_memmap(data / "own.npy", mode="r+"))


def prepare(n: int, data: Path) -> float:
    """The synthetic rows of every batch made before the build (in two processes) and kept in ``data/batches`` until
    the build has read them: making them is this benchmark's work, not the store's, so it is timed apart from the
    load (the build reads each batch's rows back as a caller's ``import_rows`` would get them)."""
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    _, vectors, _, _ = base_corpus(data)
    (data / "batches").mkdir(exist_ok=True)
    own = data / "own.npy"
    if not own.exists() or np.load(own, mmap_mode="r").shape != (n, vectors.shape[1]):
        np.lib.format.open_memmap(own, mode="w+", dtype=np.float32, shape=(n, vectors.shape[1])).flush()
    with ProcessPoolExecutor(2, initializer=_worker, initargs=(data, n)) as pool:
        for done, _ in enumerate(pool.map(_made, range(n // BATCH), chunksize=4)):
            if done % 20 == 19:
                print(f"  prepared {(done + 1) * BATCH} memories, {time.perf_counter() - t0:.0f} s", flush=True)
    return round(time.perf_counter() - t0, 1)


def build(url: str, n: int, data: Path) -> dict[str, Any]:
    """The store's load, timed by phase: each table through ``Store.import_rows`` (the product's bulk path: COPY
    into staging tables, set-based statements; into an empty table its indexes are built after the rows, the HNSW
    index at the commit of the vectors' transaction), then VACUUM ANALYZE. Per table: the rows' part (until the
    last batch went in) and the rest (indexes built after the rows, the commit)."""
    timings: dict[str, Any] = {"prepare data s (not the store's)": prepare(n, data)}
    store = open_store(url)
    cache = data / "batches"
    t0 = time.perf_counter()

    def each(table: str, ended: dict[str, float]) -> Iterator[list[dict[str, Any]]]:
        for i in range(n // BATCH):
            made = pickle.loads((cache / f"{i:05d}.pkl").read_bytes())
            if table == "vectors":
                yield [{"hash": h, "model": MINILM, "dim": int(v.shape[0]), "vector": v}
                       for h, v in zip(made["hashes"], made["vectors"])]
            elif table == "changes":
                yield made["changes"]
            elif table == "node_versions":
                yield [{**r, "embed_text": None} for r in made["nodes"]]
            else:
                yield made["nodes"]
            if i % 10 == 9:
                print(f"  {table}: {(i + 1) * BATCH} rows, {time.perf_counter() - t0:.0f} s", flush=True)
        ended["rows"] = time.perf_counter()

    for table in ("nodes", "node_versions", "changes", "vectors"):  # vectors last: the HNSW index is built after
        t, ended = time.perf_counter(), {}
        store.import_rows(table, each(table, ended))
        done = time.perf_counter()
        timings[f"import {table} s"] = round(done - t, 1)
        timings[f"  {table}: rows s"] = round(ended["rows"] - t, 1)
        timings[f"  {table}: indexes after the rows and commit s"] = round(done - ended["rows"], 1)
    shutil.rmtree(cache, ignore_errors=True)
    t = time.perf_counter()
    store._db.execute("VACUUM ANALYZE")
    timings["vacuum analyze s"] = round(time.perf_counter() - t, 1)
    timings["build total s"] = round(time.perf_counter() - t0, 1)
    timings["build target s"] = 20 * 60
    timings["store bytes"] = store.info()["sizes"]["total"]
    timings["load average after"] = [round(x, 2) for x in os.getloadavg()]
    timings["migrations"] = [m["name"] for m in store.info()["migrations"]]
    store.close()
    (data / "built.json").write_text(json.dumps({"memories": n, **timings}))
    return timings


CLIENT = """
import json, resource, sys, time
t_start = time.perf_counter()
from agentcontext.memory import AgentMemory
from agentcontext.store import Capability, open_store
from agentcontext.workspace import Workspace
url, mode, questions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
store = open_store(url)
if mode == "mirror":  # the baseline: the in-process index, built from the server as every process did before
    store.capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED})
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])  # the model is loaded before the first query is timed
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
spent = {}  # seconds per stage of the current query (STAGES: the store's and workspace's calls, timed by name)
inside = [False]  # within server_search.search (a read there is the ranking's; after it, the results' fetch)
read = {}  # rows / hashes the current query read (both connections: ``count``)
def count(owner):  # the linked rows and the vector hashes a query reads
    for name in ("nodes_linked", "similarities"):
        fn = getattr(owner, name, None)
        if fn is None or getattr(fn, "counted", False):
            continue
        def counted(*a, _fn=fn, _name=name, **kw):
            out = _fn(*a, **kw)
            linked = _name == "nodes_linked"
            key, n = ("linked_rows", len(out[0]) + len(out[1])) if linked else ("hashes", len(set(a[2])))
            read[key] = read.get(key, 0) + n
            return out
        counted.counted = True
        setattr(owner, name, counted)
count(store)
def timer(owner, name, stage):
    fn = getattr(owner, name, None)
    if fn is None:  # this code has no such call
        return
    def wrapped(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            key = stage if inside[0] or stage == "embedding" else "fetch"
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapped)
for stage, names in STAGES.items():
    for name in names:
        timer(ws if name == "embed_query" else store, name, stage)
if mode == "server":
    from agentcontext.memory import server_search
    search = server_search.search
    def searched(*a, **kw):
        inside[0] = True
        t = time.perf_counter()
        try:
            return search(*a, **kw)
        finally:
            inside[0] = False
            spent["search"] = spent.get("search", 0.0) + time.perf_counter() - t
    server_search.search = searched
def ask(q):
    spent.clear()
    read.clear()
    second = getattr(getattr(store, "_ahead", None), "_store", None)  # the reads ahead' connection (pg_parallel)
    if second is not None:
        count(second)
    t = time.perf_counter()
    found = memory.retrieve(q, max_results=10)
    total = time.perf_counter() - t
    parts = dict(spent)
    search_s = parts.pop("search", total)
    parts["fusion"] = search_s - sum(v for k, v in parts.items() if k not in ("fetch", "embedding"))
    parts["fetch"] = total - search_s  # the results' rows read and shaped after the ranking
    return found, total, parts
rss_before = rss_mb()
_, first, first_stages = ask(questions[0])
since_start = time.perf_counter() - t_start
lat, top, scores, stages, reads = [], {}, {}, [], []
for q in questions[1:]:
    found, total, parts = ask(q)
    reads.append(dict(read))
    lat.append(total)
    stages.append(parts)
    top[q] = [r["id"] for r in found]
    scores[q] = [r["score"] for r in found]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first_s": first, "first_since_start_s": since_start, "latencies_s": lat, "top": top,
                  "scores": scores,
                  "stages_s": stages, "first_stages_s": first_stages, "reads": reads,
                  "rss_before_mb": rss_before, "rss_after_mb": rss_mb(), "rss_peak_mb": peak}))
"""
# what each stage of a retrieve is timed by (calls of the store, or the workspace's ``embed_query``), by name, so the
# code before a change is timed the same way: ``fusion`` is the rest of server_search.search (the client's ranking:
# the embedding of a query that names a speaker, made again without the name, counts in ``embedding``), ``fetch`` the
# rest of ``retrieve`` after it (the results' rows read and shaped); ``text`` holds the namespace-size check too
STAGES = {"embedding": ["embed_query"], "dense": ["nearest"], "similarities": ["similarities"],
          "text": ["text_search", "term_counts", "holds_at_least"],
          "links": ["nodes_linked", "nodes_naming", "get_nodes"]}
STAGE_NAMES = ["embedding", "dense", "similarities", "text", "links", "fusion", "fetch"]
# the two stages that read the candidates around the pools (issue 23 s3: ~44 ms of 125 at 1,000,000), together
BOTH = "links + similarities"


def stage_medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage: the median and mean ms a query over the runs' questions (medians do not add up to the total's)."""
    rows = [{**q, BOTH: q.get("links", 0.0) + q.get("similarities", 0.0)} for r in runs for q in r["stages_s"]]
    return {name: {"p50_ms": round(statistics.median([q.get(name, 0.0) for q in rows]) * 1000, 1),
                   "mean_ms": round(statistics.mean([q.get(name, 0.0) for q in rows]) * 1000, 1)}
            for name in [*STAGE_NAMES, BOTH] if rows}


def read_means(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The linked rows (``nodes_linked``) and vector hashes (``similarities``, both connections) a query read, mean
    over the runs' questions (issue 23 s3: what the bounds of memory/server_bound.py save)."""
    rows = [q for r in runs for q in r.get("reads", [])]
    return {k: round(statistics.mean(q.get(k, 0) for q in rows), 1) for k in ("linked_rows", "hashes")} if rows else {}


def client(url: str, mode: str, questions: list[str], src: Path | None = None) -> dict[str, Any]:
    """One new client process asking ``questions`` in turn, with this tree's code or ``src``'s."""
    env = {**os.environ, "PYTHONPATH": str(src or Path(__file__).resolve().parent.parent / "src")}
    script = CLIENT.replace("STAGES.items()", f"{STAGES!r}.items()")
    proc = subprocess.run([sys.executable, "-c", script, url, mode, json.dumps(questions)], capture_output=True,
                          text=True, env=env, timeout=7200)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout)


def dense_recall(url: str, data: Path, query_vectors: np.ndarray, n: int) -> float:
    """recall@10 of ``nearest`` against exact search: the exact top 10 of every query in one pass over the vectors."""
    own = np.load(data / "own.npy", mmap_mode="r")
    q = np.asarray(query_vectors, dtype=np.float32)
    best = np.full((len(q), 10), -np.inf, dtype=np.float32)
    rows = np.zeros((len(q), 10), dtype=np.int64)
    for start in range(0, n, 100_000):
        scores = q @ np.asarray(own[start: start + 100_000]).T  # (queries, chunk)
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        both = np.concatenate([best, np.take_along_axis(scores, top, axis=1)], axis=1)
        ids = np.concatenate([rows, top + start], axis=1)
        keep = np.argpartition(-both, 10, axis=1)[:, :10]
        best, rows = np.take_along_axis(both, keep, axis=1), np.take_along_axis(ids, keep, axis=1)
    store = open_store(url)
    hits = 0
    for qv, exact in zip(q, rows):
        got = {int(i.split("_")[1]) for i, _ in store.nearest(qv, MINILM, 10, namespace=NAMESPACE, kind="memory")}
        hits += len(set(exact.tolist()) & got)
    store.close()
    return hits / (10 * len(q))


def before_and_after(url: str, questions: list[str], before: Path, data: Path, memories: int,
                     before_url: str | None = None) -> dict[str, Any]:
    """The code before a change (``before``: a source tree's src/) against this tree's, on the same server and the
    same questions, in new processes ordered before, this, this, before (whoever runs later meets warmer pages:
    the order cancels a steady warming); p50 and p95 of each code's two runs pooled, each run's first query, and
    each code's labelled hit@10 (its first run's top 10s). ``before_url``: the before code's runs on another server
    (a copy of the cluster at the schema it knows, when this tree's is newer): that server first serves the
    questions once, untimed, as this one has served them before these runs."""
    if before_url:
        client(before_url, "server", questions, before)
    runs = [(name, client(before_url or url if src else url, "server", questions, src)) for name, src in
            (("before", before), ("this", None), ("this", None), ("before", before))]
    out: dict[str, Any] = {"before_src": str(before), "order": [name for name, _ in runs]}
    for name in ("before", "this"):
        lat = [x * 1000 for n, r in runs if n == name for x in r["latencies_s"]]
        out[name] = {"retrieve_p50_ms": round(statistics.median(lat), 1), "retrieve_p95_ms": round(p95(lat), 1),
                     "first_query_ms": [round(r["first_s"] * 1000, 1) for n, r in runs if n == name],
                     "p50_per_run_ms": [round(statistics.median(r["latencies_s"]) * 1000, 1) for n, r in runs
                                        if n == name],
                     "stages (ms a query)": stage_medians([r for n, r in runs if n == name]),
                     "read a query": read_means([r for n, r in runs if n == name]),
                     "first_query_stages_ms": [{k: round(v * 1000, 1) for k, v in r["first_stages_s"].items()}
                                               for n, r in runs if n == name],
                     "labelled": labelled(data, memories, next(r["top"] for c, r in runs if c == name))}
    tops = [r["top"] for _, r in runs]
    out["same_top10"] = round(float(np.mean([tops[0][q] == tops[1][q] for q in tops[0]])), 4)
    if all("scores" in r for _, r in runs):  # the first run of each code: the same hits, order and scores?
        scores = [r["scores"] for _, r in runs]
        out["same_top10_and_scores"] = round(float(np.mean([tops[0][q] == tops[1][q] and scores[0][q] == scores[1][q]
                                                            for q in tops[0]])), 4)
        out["largest_score_difference (same hits)"] = max(
            (abs(a - b) for q in tops[0] if tops[0][q] == tops[1][q] for a, b in zip(scores[0][q], scores[1][q])),
            default=0.0)
    out["ratio_p50 (this / before)"] = round(out["this"]["retrieve_p50_ms"] / out["before"]["retrieve_p50_ms"], 3)
    out["ratio_p95 (this / before)"] = round(out["this"]["retrieve_p95_ms"] / out["before"]["retrieve_p95_ms"], 3)
    out["ratio_first_query (this / before, medians)"] = round(
        statistics.median(out["this"]["first_query_ms"]) / statistics.median(out["before"]["first_query_ms"]), 3)
    this, before = out["this"]["stages (ms a query)"], out["before"]["stages (ms a query)"]
    out["stage ratios (this / before, mean ms)"] = {
        name: round(this[name]["mean_ms"] / before[name]["mean_ms"], 3) for name in this if before[name]["mean_ms"] > 0}
    return out


def cold_first(restart: Any, questions: list[str], before: Path) -> dict[str, Any]:
    """The first query of a new process on a server just restarted (its buffers empty; the OS cache as it is), the
    code before a change and this one alternately (before, this, this, before), each on a server restarted for it:
    the first query alone and from the process start (the store's open, with its prewarm, included)."""
    out: dict[str, Any] = {"order": ["before", "this", "this", "before"]}
    for name, src in (("before", before), ("this", None), ("this", None), ("before", before)):
        url = restart()
        r = client(url, "server", questions, src)
        got = out.setdefault(name, {"first_query_ms": [], "from_process_start_ms": [], "second_query_ms": []})
        got["first_query_ms"].append(round(r["first_s"] * 1000, 1))
        got["from_process_start_ms"].append(round(r["first_since_start_s"] * 1000, 1))
        got["second_query_ms"].append(round(r["latencies_s"][0] * 1000, 1))
    out["ratio_first_query (this / before, medians)"] = round(
        statistics.median(out["this"]["first_query_ms"]) / statistics.median(out["before"]["first_query_ms"]), 3)
    out["ratio_from_process_start (this / before, medians)"] = round(
        statistics.median(out["this"]["from_process_start_ms"])
        / statistics.median(out["before"]["from_process_start_ms"]), 3)
    return out


def lead_turns(data: Path, n: int, turn_count: int) -> np.ndarray:
    """The LoCoMo turn that leads each memory (``batch``'s first draw, replayed from its seeds; kept in ``data``)."""
    path = data / "lead-turns.npy"
    if path.exists() and len(lead := np.load(path)) == n:
        return lead
    lead = np.empty(n, dtype=np.int64)
    for i in range(n // BATCH):
        rng = np.random.default_rng(1000 + i)
        for j in range(BATCH):
            lead[i * BATCH + j] = rng.integers(turn_count, size=3)[0]
            rng.standard_normal(384)
    np.save(path, lead)
    return lead


def labelled(data: Path, n: int, tops: dict[str, list[str]]) -> dict[str, float]:
    """hit@10 and precision@10 of ``tops`` (question: memory ids) over the questions with evidence."""
    samples = json.loads(LOCOMO.read_text())
    index: dict[tuple[int, str], int] = {}
    evidence_of: dict[str, set[int]] = {}
    for si, sample in enumerate(samples):
        for turn in turns(sample):
            index[(si, turn["dia_id"])] = len(index)
    for si, sample in enumerate(samples):
        known = {t["dia_id"] for t in turns(sample)}
        for qa in sample["qa"]:
            evidence_of.setdefault(qa["question"], {index[(si, e)] for e in evidence(qa.get("evidence", []), known)})
    by_turn: dict[int, set[str]] = {}
    for m, turn in enumerate(lead_turns(data, n, len(index)).tolist()):
        by_turn.setdefault(turn, set()).add(f"mem_{m:08d}")
    hits, precision = [], []
    for q, got in tops.items():
        if evidence_of.get(q):
            relevant = set().union(*(by_turn.get(t, set()) for t in evidence_of[q]))
            hits.append(any(x in relevant for x in got[:10]))
            precision.append(sum(x in relevant for x in got[:10]) / 10)
    return {"questions": len(hits), "hit_at_10": round(float(np.mean(hits)), 4),
            "precision_at_10": round(float(np.mean(precision)), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", type=Path, default=None, help="where the server's cluster is kept between runs")
    parser.add_argument("--no-baseline", action="store_true", help="skip the mirroring process (minutes at 1M)")
    parser.add_argument("--build-only", action="store_true", help="build the kept cluster and stop, measuring nothing")
    parser.add_argument("--cold", action="store_true", help="with --before-src: also each code's first query on a "
                        "server restarted for it (buffers empty), alternating")
    parser.add_argument("--before-data", type=Path, default=None,
                        help="with --before-src: a copy of --data's cluster at the schema the before code knows (when "
                             "this tree's is newer): the before code's runs there, on a second server")
    parser.add_argument("--before-src", type=Path, default=None,
                        help="a source tree of the code before a change (e.g. `git worktree add DIR REV`): after the "
                             "figures, time it against this code on the same server, new processes alternating")
    args = parser.parse_args()
    n = args.memories - args.memories % BATCH
    data = args.data or Path(f"/tmp/agentcontext-pg-scale-{n}")
    from agentcontext.store.migrations.postgres import MIGRATIONS

    built = json.loads((data / "built.json").read_text()) if (data / "built.json").exists() else None
    known = [m.name for m in MIGRATIONS]
    ran = (built or {}).get("migrations")
    if not built or built.get("memories") != n or not ran or ran != known[: len(ran)]:
        # another size, a schema this code does not know (a cluster built with older migrations is upgraded when
        # the store opens it), or a build that was stopped: start again
        built = None
        shutil.rmtree(data / "cluster", ignore_errors=True)
    data.mkdir(parents=True, exist_ok=True)
    server = PgServer(root=data / "cluster", options=SERVER).start()
    try:
        url = server.url("scale")
        if built is None:
            print(f"building {n} memories in {data} (kept for the next runs)", flush=True)
            built = {"memories": n, **build(url, n, data)}
        if args.build_only:
            print(json.dumps(built, indent=1))
            return
        _, _, questions, qvectors = base_corpus(data)
        asked = questions[: args.queries + 1]
        load_before = os.getloadavg()
        ours = client(url, "server", asked)
        # a second new process, its first query on a server that has served others (the first process met a
        # server just started: its caches cold); fresh questions, so no statement result is reused
        again = client(url, "server", questions[args.queries + 1: args.queries + 12])
        recall = dense_recall(url, data, qvectors[1: args.queries + 1], n)
        base = None if args.no_baseline else client(url, "mirror", asked)
        other = (PgServer(root=args.before_data / "cluster", options=SERVER).start()
                 if args.before_src and args.before_data else None)
        try:
            compared = (before_and_after(url, asked, before_tree(args.before_src), data, n,
                                         other.url("scale") if other else None) if args.before_src else None)
        finally:
            if other:
                other.stop()
        cold = None
        if args.cold and args.before_src and not server.reused:
            def restart() -> str:
                nonlocal server
                server.stop()
                server = PgServer(root=data / "cluster", options=SERVER).start()
                return server.url("scale")

            fresh = questions[args.queries + 12: args.queries + 15]
            cold = cold_first(restart, fresh, before_tree(args.before_src))
        load_after = os.getloadavg()
    finally:
        server.stop()
    lat = [x * 1000 for x in ours["latencies_s"]]
    figures: dict[str, Any] = {
        "memories": n, "vectors": f"{2 * n - n // TURNS} x 384 (own and pair vectors)", "queries": len(lat),
        "server": SERVER, "build": built,
        "note": "busy shared 2-core machine; the server and the client share the cores; medians of the questions",
        "load_average (1, 5, 15 min) before / after": [[round(x, 2) for x in load_before],
                                                       [round(x, 2) for x in load_after]],
        "retrieve_p50_ms": round(statistics.median(lat), 1), "retrieve_p95_ms": round(p95(lat), 1),
        "recall_at_10": round(recall, 4),
        "rss_growth_mb": round(ours["rss_after_mb"] - ours["rss_before_mb"], 1),
        "rss_peak_mb": round(ours["rss_peak_mb"], 1),
        "stages (ms a query)": stage_medians([ours]),
        "first_query_stages_ms": {k: round(v * 1000, 1) for k, v in ours["first_stages_s"].items()},
        "first_query_ms": round(ours["first_s"] * 1000, 1),
        "first_query_from_process_start_ms": round(ours["first_since_start_s"] * 1000, 1),
        "first_query_of_a_second_process_ms": round(again["first_s"] * 1000, 1),
        "first_query_of_a_second_process_from_its_start_ms": round(again["first_since_start_s"] * 1000, 1),
        "targets": TARGETS,
    }
    if base is not None:
        base_lat = [x * 1000 for x in base["latencies_s"]]
        overlap = [len(set(ours["top"][q]) & set(base["top"][q])) / 10 for q in ours["top"]]
        figures["baseline (in-process index mirrored from the server)"] = {
            "retrieve_p50_ms": round(statistics.median(base_lat), 1), "retrieve_p95_ms": round(p95(base_lat), 1),
            "rss_growth_mb": round(base["rss_after_mb"] - base["rss_before_mb"], 1),
            "first_query_ms": round(base["first_s"] * 1000, 1)}
        figures["ratios (server / baseline)"] = {
            "retrieve_p50": round(figures["retrieve_p50_ms"] / max(statistics.median(base_lat), 1e-9), 3),
            "rss_growth": round(figures["rss_growth_mb"] / max(base["rss_after_mb"] - base["rss_before_mb"], 1e-9), 4),
            "first_query": round(ours["first_s"] / max(base["first_s"], 1e-9), 4)}
        figures["top10_shared_with_in_process_ranking"] = round(float(np.mean(overlap)), 4)
    if compared is not None:
        figures["before and after (same server, new processes: before, this, this, before)"] = compared
    if cold is not None:
        figures["first query on a server just restarted (before, this, this, before)"] = cold
    figures["labelled (server ranking)"] = labelled(data, n, ours["top"])
    (data / "tops-server.json").write_text(json.dumps(ours["top"]))
    if base is not None:
        figures["labelled (in-process ranking)"] = labelled(data, n, base["top"])
        (data / "tops-in-process.json").write_text(json.dumps(base["top"]))
    figures["met"] = {k: (figures[k] <= v if k != "recall_at_10" else figures[k] >= v) for k, v in TARGETS.items()}
    report("postgres_scale" if n == 1_000_000 else f"postgres_scale_{n}", figures)


if __name__ == "__main__":
    main()
