"""SQLite page size (issue 23 s1): a store made with 16 KiB pages (SQLiteStore.PAGE_BYTES, this tree) beside the same
store made with SQLite's 4 KiB pages, in one process: the same memories (supplied vectors) written into both in
alternating batches (memories per CPU second), then ``retrieve`` (k 10, distinct queries, each embedded in the call)
alternating between the two query by query (p50 / p95 ms), a new process's first query on each, and bytes a memory.
Reads of a 16 KiB page copy four times the bytes of a 4 KiB one from the OS's cache: this shows whether retrieve
pays for the faster writes.

Run: nice -n 10 .venv/bin/python benchmarks/sqlite_pages.py [--memories 100000] [--queries 80]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from memory import OBJECTS, PLACES, RELATIONS, facts, unit_vectors  # noqa: E402

from agentcontext import AgentMemory, VectorStore  # noqa: E402
from agentcontext.store import SQLiteStore  # noqa: E402

SIZES = {"16k": 16384, "4k": 4096}
BATCH = 10_000


def open_memory(home: Path, page: int) -> AgentMemory:
    SQLiteStore.PAGE_BYTES = page  # read when the file is made; a file keeps its size after
    return AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**8)


def query(i: int) -> str:
    return (f"who {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 7) % len(OBJECTS)]} "
            f"near {PLACES[(i * 3) % len(PLACES)]}")


def first_query(home: Path) -> float:
    """ms of the first retrieve of a new process (the model loaded first, untimed)."""
    code = ("import sys, time\nfrom agentcontext import AgentMemory, VectorStore\n"
            "m = AgentMemory(vector_store=VectorStore(home=sys.argv[1]), max_memory_size=10**8)\n"
            "m.workspace.embedder.embed(['warm the model'])\n"
            "t = time.perf_counter(); m.retrieve(sys.argv[2], max_results=10)\n"
            "print((time.perf_counter() - t) * 1000)")
    out = subprocess.run([sys.executable, "-c", code, str(home), query(999)], capture_output=True, text=True,
                         check=True, env=os.environ)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=80)
    args = ap.parse_args()
    figures: dict = {"memories": args.memories, "queries": args.queries, "load_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        homes = {name: Path(tmp) / name for name in SIZES}
        mems = {name: open_memory(homes[name], page) for name, page in SIZES.items()}
        cpu = {name: 0.0 for name in SIZES}
        for start in range(0, args.memories, BATCH):
            n = min(BATCH, args.memories - start)
            items = [{"content": t, "vector": v} for t, v in zip(facts(n, 1000 + start), unit_vectors(n, start))]
            for name in (list(SIZES) if start // BATCH % 2 else list(SIZES)[::-1]):
                c = time.process_time()
                mems[name].batch_store(items)
                cpu[name] += time.process_time() - c
        for mem in mems.values():
            mem.retrieve("warm up", max_results=5)
        lat: dict[str, list[float]] = {name: [] for name in SIZES}
        for i in range(args.queries):
            for name in (list(SIZES) if i % 2 else list(SIZES)[::-1]):
                t = time.perf_counter()
                mems[name].retrieve(f"{query(i)} ({name})", max_results=10)
                lat[name].append((time.perf_counter() - t) * 1000)
        for mem in mems.values():  # the WAL copied into the file first: bytes of the store, not of the WAL's cycle
            mem.workspace.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes = {name: mem.workspace.store.info()["sizes"]["total"] for name, mem in mems.items()}
        pages = {name: mem.workspace.store._read("PRAGMA page_size")[0][0] for name, mem in mems.items()}
        for mem in mems.values():
            mem.workspace.close()
        firsts = {name: [] for name in SIZES}
        for _ in range(3):
            for name in SIZES:
                firsts[name].append(first_query(homes[name]))
    for name in SIZES:
        figures[name] = {"page_size": pages[name], "per_cpu_s": round(args.memories / cpu[name]),
                         "retrieve_p50_ms": round(statistics.median(lat[name]), 2),
                         "retrieve_p95_ms": round(statistics.quantiles(lat[name], n=20)[-1], 2),
                         "first_query_ms": [round(x, 1) for x in firsts[name]],
                         "bytes_per_memory": round(sizes[name] / args.memories)}
    a, b = figures["16k"], figures["4k"]
    figures["16k_over_4k"] = {k: round(a[k] / b[k], 2) for k in ("per_cpu_s", "retrieve_p50_ms", "retrieve_p95_ms",
                                                               "bytes_per_memory")}
    figures["load_at_end"] = os.getloadavg()
    print(json.dumps({k: figures[k] for k in ("16k", "4k", "16k_over_4k")}, indent=1))
    report(f"sqlite_pages_{args.memories}", figures, quiet=True)


if __name__ == "__main__":
    main()
