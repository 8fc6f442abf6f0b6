"""Bulk ingest and bytes on disk of the PostgreSQL store (issue 23 s1-2), beside the code before the issue, same run.

For each source tree (this one, and ``--before-src``: main 6717f89, e.g. ``git archive 6717f89 | tar -x -C DIR``) a
worker process with that tree's code on its path, on the same embedded server (a fresh schema each):
- builds N memories into an empty store end to end through ``AgentMemory.batch_store`` (batches of 10,000, vectors
  and context vectors supplied: no model time), all batches in one transaction (``store.transaction()``, as a bulk
  load does), the HNSW index built included;
- stores 10,000 more with one ``batch_store`` call (its own transaction) into that store: memories/s;
- prints bytes per memory and what each table and index costs (``pg_total_relation_size`` a table with its indexes
  and TOAST, ``pg_relation_size`` an index), and recall@10 of the server's dense search (``nearest``) against exact
  float32 search over every memory's vector (50 queries);
- SQLite: bytes per memory of the same memories (``--sqlite N``), for both trees.
Texts are LoCoMo dev turns (a turn and fragments of two others, unique), vectors 384-d unit mixes of 64 centres with
noise; conversations of 20 turns. The old code at 1,000,000 takes an hour: measure it at a smaller N in the same run
(``--before-sizes``) and quote the issue's 1,000,000 figures for it.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_ingest.py --sizes 20000 100000 --before-sizes 20000
--before-src /tmp/pgbulk-base [--data /work/pgdata-pgbulk/bench]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
BATCH, TURNS, MORE, DIM, QUERIES = 10_000, 20, 10_000, 384, 50
SERVER = ("-c shared_buffers=1GB -c maintenance_work_mem=2GB -c max_parallel_maintenance_workers=1 "
          "-c effective_cache_size=4GB -c work_mem=64MB -c max_wal_size=8GB")
# issue 23's figures for the code before it, measured at 1,000,000 memories (not rerun: an hour)
ISSUE_OLD_1M = {"build memories/s": 270, "batch_store memories/s": 105, "bytes per memory": 11_700}
TARGETS = {"build 1M minutes": 20, "batch_store memories/s": 2000, "bytes per memory": 4096, "recall@10": 0.98}


def corpus(seed: int, start: int, n: int, texts: list[str]) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Memories [start, start + n): items for batch_store and their own vectors (float32)."""
    rng = np.random.default_rng(seed * 1_000_003 + start)
    centres = np.random.default_rng(7).standard_normal((64, DIM)).astype(np.float32)
    own = centres[rng.integers(0, 64, n)] + 0.8 * rng.standard_normal((n, DIM)).astype(np.float32)
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    pairs = own + np.roll(own, 1, axis=0)
    pairs /= np.linalg.norm(pairs, axis=1, keepdims=True)
    items = []
    for j in range(n):
        k = start + j
        a, b, c = rng.integers(len(texts), size=3)
        text = f"{texts[a]} {' '.join(texts[b].split()[:8])} {' '.join(texts[c].split()[-6:])} (#{k})"
        conv, turn = divmod(k, TURNS)
        items.append({"id": f"mem_{k:08d}", "content": text, "conversation_id": f"c{conv}",
                      "created_at": f"2024-{1 + conv % 12:02d}-{1 + conv % 28:02d}T{turn:02d}:00:00+00:00",
                      "metadata": {"n": k}, "vector": own[j], "context_vector": pairs[j]})
    return items, own


def texts() -> list[str]:
    from agentcontext.eval_locomo import turn_text, turns

    return [turn_text(t) for s in json.loads(LOCOMO.read_text()) for t in turns(s)]


def sizes(store: Any) -> dict[str, Any]:
    if store.backend == "sqlite":
        return {"total": store.info()["sizes"]["total"]}
    tables = dict(store._read(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace s ON s.oid = "
        "c.relnamespace WHERE s.nspname = current_schema() AND c.relkind = 'r' ORDER BY 2 DESC"))
    indexes = dict(store._read(
        "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
        "WHERE s.nspname = current_schema() AND c.relkind = 'i' ORDER BY 2 DESC"))
    return {"total": sum(tables.values()), "tables": tables, "indexes": indexes}


def worker(url: str, n: int, seed: int) -> dict[str, Any]:
    """Runs with one tree's code on the path: build n, store MORE more, sizes, recall."""
    from agentcontext.memory import AgentMemory
    from agentcontext.store import open_store
    from agentcontext.workspace import Workspace

    words = texts()
    ws = Workspace(open_store(url))
    mem = AgentMemory(workspace=ws, max_memory_size=None, namespace="bench")
    store = ws.store
    own = np.empty((n + MORE, DIM), dtype=np.float32)
    out: dict[str, Any] = {"memories": n, "backend": store.backend}
    t0 = time.perf_counter()
    with store.transaction():  # one bulk load: every batch in one transaction
        for start in range(0, n, BATCH):
            items, vectors = corpus(seed, start, min(BATCH, n - start), words)
            own[start: start + len(items)] = vectors
            mem.batch_store(items)
    out["build s"] = round(time.perf_counter() - t0, 1)
    out["build memories/s"] = round(n / out["build s"])
    items, own[n:] = corpus(seed, n, MORE, words)
    t = time.perf_counter()
    mem.batch_store(items)
    out["batch_store s"] = round(time.perf_counter() - t, 1)
    out["batch_store memories/s"] = round(MORE / out["batch_store s"])
    out["sizes"] = sizes(store)
    out["bytes per memory"] = round(out["sizes"]["total"] / (n + MORE))
    if store.backend == "postgresql":
        rng = np.random.default_rng(99)
        queries = own[rng.integers(0, n + MORE, QUERIES)] + 0.5 * rng.standard_normal((QUERIES, DIM)).astype(
            np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        ids = np.array([f"mem_{k:08d}" for k in range(n + MORE)])
        hits = 0
        for q in queries:
            exact = set(ids[np.argsort(-(own @ q))[:10]])
            got = [i for i, _ in store.nearest(q, ws.model_name, 10, namespace=mem.namespace, kind="memory")]
            hits += len(exact & set(got))
        out["recall@10"] = round(hits / (10 * QUERIES), 3)
    ws.close()
    return out


def run(src: Path, url: str, n: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", url, "--n", str(n)],
                          env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"worker failed ({src}, {n}): {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--n", type=int)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    parser.add_argument("--before-sizes", type=int, nargs="*", default=[20_000])
    parser.add_argument("--before-src", type=Path)
    parser.add_argument("--src", type=Path, default=ROOT, help="the new code's tree (default: this one)")
    parser.add_argument("--sqlite", type=int, default=20_000)
    parser.add_argument("--data", type=Path, default=Path("/work/pgdata-pgbulk/bench"))
    parser.add_argument("--name", default="postgres_ingest")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, 1)))
        return
    from benchmarks._util import report
    from tests.pg_server import PgServer

    server = PgServer(root=args.data, options=SERVER).start()
    stamp = int(time.time())
    results: dict[str, Any] = {"machine": "2 cores shared by eight engineers (busy: load average 4-9)",
                               "issue_old_1M": ISSUE_OLD_1M, "targets": TARGETS, "runs": []}
    trees = [("new", args.src, args.sizes)]
    if args.before_src:
        trees.append(("old", args.before_src, args.before_sizes))
    for n in sorted({n for _, _, ns in trees for n in ns}):
        for label, src, ns in trees:
            if n in ns:
                got = run(src, server.url(f"ingest_{label}_{n}_{stamp}"), n)
                results["runs"].append({"code": label, **got})
                print(f"{label} N={n}: build {got['build s']} s ({got['build memories/s']}/s), batch_store "
                      f"{MORE} more {got['batch_store memories/s']}/s, {got['bytes per memory']} B/memory, "
                      f"recall@10 {got.get('recall@10')}", flush=True)
                print("   tables: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in got["sizes"]["tables"].items()))
                print("   indexes: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in got["sizes"]["indexes"].items()))
    for label, src, _ in trees if args.sqlite else []:  # --sqlite 0: no SQLite figures
        lite = args.data / f"lite_{label}_{stamp}.db"
        got = run(src, f"sqlite:///{lite}", args.sqlite)
        results["runs"].append({"code": label, **got})
        print(f"sqlite {label} N={args.sqlite}: {got['bytes per memory']} B/memory, batch_store "
              f"{got['batch_store memories/s']}/s", flush=True)
        lite.unlink(missing_ok=True)
    pairs = {}
    for r in results["runs"]:
        pairs.setdefault((r["backend"], r["memories"]), {})[r["code"]] = r
    for (backend, n), by in sorted(pairs.items()):
        if "old" in by and "new" in by:
            for key in ("build memories/s", "batch_store memories/s", "bytes per memory"):
                print(f"{backend} N={n} {key}: new {by['new'][key]} / old {by['old'][key]} = "
                      f"{by['new'][key] / max(by['old'][key], 1):.2f}x")
    report(args.name, results, quiet=True)


if __name__ == "__main__":
    main()
