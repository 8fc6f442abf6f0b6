"""``batch_store`` of 10,000 more memories into a large PostgreSQL store (issue 23 s1: >= 2,000 memories/s into a
1,000,000-memory store), beside the code before a change in the same run, with where the time goes.

Uses the cluster that ``benchmarks/postgres_scale.py`` keeps (``--data``; its server started here, or reused if
one runs). Each run is a new process with one source tree's code on its path (this tree's, or ``--before-src``'s),
alternating (before, this, this, before): ``AgentMemory.batch_store`` of N memories in new conversations of 20 turns
(a namespace of their own; LoCoMo texts, vectors and context vectors supplied: no model time) inside an outer
transaction that is rolled back at the end, so the kept store is the same for every run (the commit itself is not
timed: in this path, a small load beside what the model holds, the HNSW rows go in with the insert, not at the
commit). Printed per run: memories/s and the seconds spent in the store's ``put_vectors`` (vectors staged and
inserted, the HNSW index maintained row by row), ``put_nodes``, the head records and the rest.
When this tree's schema is newer than the before code's (migration 8, the vector delta), the before code cannot
open the migrated cluster: ``--before-data`` names a copy of the cluster at the older schema for its runs. With
the delta (store/pg_delta.py) the vectors land unindexed; the fold that moves them into the HNSW index is off the
write path and is timed separately (``--fold``: the same N memories stored and committed, then folded, then
deleted again and the cluster vacuumed, so the kept store is unchanged).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_batch_more.py --data /work/pgdata-pgscale/200k
[--before-src DIR [--before-data DIR]] [--memories 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

TARGET = 2000  # memories/s into a 1,000,000-memory store

WORKER = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from benchmarks.postgres_ingest import corpus, texts
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, n = sys.argv[1], int(sys.argv[2])
store = open_store(url)
ws = Workspace(store)
ws.embedder.embed(["load the model before the clock starts"])  # batch_store asks the embedder's dimension
memory = AgentMemory(workspace=ws, namespace="batch-more", max_memory_size=None)
items, _ = corpus(3, 50_000_000, n, texts())
spent = {}
def timed(name):
    fn = getattr(store, name)
    def wrapped(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
    setattr(store, name, wrapped)
for name in ("put_vectors", "put_nodes", "get_record", "list_records", "put_record", "put_records", "get_nodes",
             "find_nodes"):
    timed(name)
held = store._read("SELECT count(*) FROM vectors WHERE searched")[0][0]
class Undo(Exception):
    pass
t = time.perf_counter()
try:
    with store.transaction():
        memory.batch_store(items)
        total = time.perf_counter() - t
        raise Undo
except Undo:
    pass
print(json.dumps({"memories": n, "seconds": total, "per_s": n / total, "held_searched_vectors": held,
                  "spent_s": spent}))
"""


def run(url: str, n: int, src: Path | None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src or ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", WORKER, url, str(n), str(ROOT)], capture_output=True, text=True,
                          env=env, timeout=3600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a cluster kept by benchmarks/postgres_scale.py")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--before-src", type=Path, default=None)
    parser.add_argument("--before-data", type=Path, default=None, help="a copy of the cluster at the schema the "
                        "before code knows (default: --data)")
    parser.add_argument("--pairs", type=int, default=1, help="(before, this, this, before) rounds")
    args = parser.parse_args()
    built = json.loads((args.data / "built.json").read_text())
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    servers = [server]
    before_url = server.url("scale")
    if args.before_data:
        servers.append(PgServer(root=args.before_data / "cluster", options=SERVER).start())
        before_url = servers[-1].url("scale")
    order = [("before", before_tree(args.before_src)), ("this", None), ("this", None),
             ("before", before_tree(args.before_src))] * args.pairs if args.before_src else [("this", None)]
    load_before = os.getloadavg()
    try:
        runs = [(name, run(before_url if name == "before" else server.url("scale"), args.memories, src))
                for name, src in order]
    finally:
        for one in servers:
            one.stop()
    figures: dict[str, Any] = {"store memories": built["memories"], "memories stored": args.memories,
                               "note": "busy shared 2-core machine (load average before / after below); each run "
                                       "rolled back, so every run meets the same store",
                               "load_average before / after": [[round(x, 2) for x in load_before],
                                                               [round(x, 2) for x in os.getloadavg()]],
                               "target memories/s (into 1,000,000)": TARGET, "order": [n for n, _ in runs]}
    for name in dict.fromkeys(n for n, _ in runs):
        mine = [r for n, r in runs if n == name]
        rate = statistics.median(r["per_s"] for r in mine)
        figures[name] = {"memories/s": round(rate, 1), "runs memories/s": [round(r["per_s"], 1) for r in mine],
                         "seconds": [round(r["seconds"], 1) for r in mine],
                         "held searched vectors": mine[0]["held_searched_vectors"],
                         "spent s (median of runs)": {k: round(statistics.median(r["spent_s"].get(k, 0.0)
                                                                                 for r in mine), 2)
                                                      for k in sorted({k for r in mine for k in r["spent_s"]})}}
        spent = figures[name]["spent s (median of runs)"]
        figures[name]["put_vectors share"] = round(spent.get("put_vectors", 0.0) / statistics.median(
            r["seconds"] for r in mine), 3)
    if "before" in figures:
        figures["ratio memories/s (this / before)"] = round(figures["this"]["memories/s"]
                                                            / figures["before"]["memories/s"], 3)
    figures["met"] = figures["this"]["memories/s"] >= TARGET
    report(f"postgres_batch_more_{built['memories']}", figures)


if __name__ == "__main__":
    main()
