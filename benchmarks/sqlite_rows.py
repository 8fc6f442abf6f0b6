"""SQLite vectors keyed by their row (issue 23 s1, schema 8): what a batch of ``batch_store`` writes to the WAL as the
store grows, ``retrieve`` p50 / p95, bytes a memory and what the hash lookup takes on disk, this tree beside the code
before (``--before-src``, e.g. main defc72e: vectors found through ``vectors_hash8``, 8 random hash characters), in
the same run (each store grown by a process of its own, the two codes alternating run by run).

A worker grows one store to ``--memories`` in batches of 10,000 (supplied vectors, as benchmarks/sqlite_ingest.py;
``--conversations``: turns of conversations of 50, each with a context vector too) and after each batch takes a
TRUNCATE checkpoint (untimed: CPU figures here leave the checkpoints' copying out, sqlite_ingest.py keeps it), so
the WAL's size after the next batch is what that batch wrote: pages of the vector
rows, node rows, text index, change rows and of the hash lookup (the random-key index dirtied nearly every one of its
pages once a batch had more rows than it had pages). Then ``--queries`` retrieves (k 10, each query embedded in the
call, warmed up first), p50 and p95.

Run: nice -n 10 .venv/bin/python benchmarks/sqlite_rows.py --before-src /work/wt/before [--memories 100000]
     [--queries 60] [--runs 2] [--conversations]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
BATCH = 10_000


def worker(home: Path, n: int, queries: int, conversations: bool) -> dict[str, Any]:
    sys.path.insert(0, str(BENCH))
    from sqlite_ingest import _items, _memory
    from sqlite_pages import query

    mem = _memory(home)
    store = mem.workspace.store
    wal = Path(f"{store.path}-wal")
    cpus, wal_bytes = [], []
    for start in range(0, n, BATCH):
        items = _items(start, min(BATCH, n - start), conversations)
        c = time.process_time()
        mem.batch_store(items)
        cpus.append(time.process_time() - c)
        wal_bytes.append(wal.stat().st_size if wal.exists() else 0)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mem.retrieve("warm up", max_results=5)
    loads = []  # what building the in-process index reads: every memory's vector, joined to its node by hash
    for _ in range(3):
        t = time.perf_counter()
        store.load_vectors(mem.workspace.model_name, mem.namespace, "memory")
        loads.append((time.perf_counter() - t) * 1000)
    lat, cpu = [], []  # wall and CPU ms a query (on a busy machine the wall time is mostly waiting for a core)
    for i in range(queries):
        t, c = time.perf_counter(), time.process_time()
        mem.retrieve(query(i), max_results=10)
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = store.info()["sizes"]
    lookup = dict(store._read("SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('vector_keys', 'vectors_hash8') "
                              "GROUP BY name"))
    vectors = store._read("SELECT count(*) FROM vectors")[0][0]
    mem.workspace.close()
    return {"cpus": cpus, "wal_bytes": wal_bytes, "lat": lat, "lat_cpu": cpu,
            "load_vectors_ms": statistics.median(loads), "bytes": sizes["total"], "lookup_bytes": lookup,
            "vectors": vectors}


def summary(got: dict[str, Any], n: int) -> dict[str, Any]:
    wal, lat = got["wal_bytes"], got["lat"]
    tenth = max(1, len(wal) // 10)
    out = {"retrieve_p50_ms": round(statistics.median(lat), 2),
           "retrieve_p95_ms": round(statistics.quantiles(lat, n=20)[-1], 2),
           "retrieve_cpu_p50_ms": round(statistics.median(got.get("lat_cpu") or [0]), 2),
           "bytes_per_memory": round(got["bytes"] / n), "lookup_bytes_per_vector": {
               k: round(v / got["vectors"], 1) for k, v in got["lookup_bytes"].items()},
           "per_cpu_s": round(n / sum(got["cpus"])), "load_vectors_ms": round(got.get("load_vectors_ms", 0), 1),
           "wal_mb_a_batch_by_tenth": [round(statistics.median(wal[i: i + tenth]) / 2**20, 1)
                                       for i in range(0, len(wal), tenth)]}
    if len(wal) >= 10:
        cpus = got["cpus"]
        out["wal_last_over_first"] = round(statistics.median(wal[-tenth:]) / statistics.median(wal[:tenth]), 2)
        out["cpu_us_per_memory_by_tenth"] = [round(statistics.median(cpus[i: i + tenth]) / BATCH * 1e6, 1)
                                             for i in range(0, len(cpus), tenth)]
        out["cpu_last_over_first"] = round(statistics.median(cpus[-tenth:]) / statistics.median(cpus[:tenth]), 2)
    return out


def run(src: Path, folder: Path, n: int, queries: int, conversations: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(dir=folder))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(home), "--memories", str(n),
           "--queries", str(queries)] + (["--conversations"] if conversations else [])
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(src / "src")}, capture_output=True, text=True)
    subprocess.run(["rm", "-rf", str(home)], check=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return summary(json.loads(proc.stdout.strip().splitlines()[-1]), n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", type=Path)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--conversations", action="store_true")
    ap.add_argument("--before-src", type=Path, required=False)
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.memories, args.queries, args.conversations)))
        return
    if args.before_src is None:
        ap.error("--before-src is required (the code before: e.g. /work/wt/before, main defc72e)")
    sys.path.insert(0, str(BENCH))
    from _util import report

    trees = {"now": ROOT, "before": args.before_src.resolve()}
    figures: dict[str, Any] = {"memories": args.memories, "queries": args.queries, "runs": args.runs,
                               "conversations": args.conversations, "before_src": str(trees["before"]),
                               "load_at_start": os.getloadavg()}
    got: dict[str, list] = {m: [] for m in trees}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        for r in range(args.runs):
            for mode in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                got[mode].append(run(trees[mode], Path(tmp), args.memories, args.queries, args.conversations))
                print(mode, r, json.dumps(got[mode][-1]), file=sys.stderr, flush=True)
    keys = ("retrieve_p50_ms", "retrieve_p95_ms", "retrieve_cpu_p50_ms", "bytes_per_memory", "per_cpu_s",
            "load_vectors_ms")
    med = {m: {k: statistics.median(x[k] for x in runs) for k in keys} for m, runs in got.items()}
    for m, runs in got.items():
        med[m]["wal_mb_last_tenth"] = statistics.median(x["wal_mb_a_batch_by_tenth"][-1] for x in runs)
        p50s = [x["retrieve_p50_ms"] for x in runs]
        med[m]["retrieve_p50_range"] = [min(p50s), max(p50s)]
    figures.update({"runs_by_mode": got, "median": med,
                    "now_over_before": {k: round(med["now"][k] / med["before"][k], 2)
                                        for k in (*keys, "wal_mb_last_tenth")}})
    figures["load_at_end"] = os.getloadavg()
    print(json.dumps({"median": med, "now_over_before": figures["now_over_before"]}, indent=1))
    report(args.name or f"sqlite_rows_{args.memories}", figures, quiet=True)


if __name__ == "__main__":
    main()
