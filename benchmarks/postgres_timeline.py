"""The timeline of one PostgreSQL ``retrieve`` (issue 23 s3): what runs when, on which connection, and what the main
thread waits for, so the critical path of a query is seen rather than its stages' sums.

On the kept cluster of ``postgres_scale.py`` (``--data``; a server already running on it is reused, else one is
started and stopped after), one client process (this tree's code, or ``--src``'s) asks LoCoMo questions (k = 10)
and records every store call (both connections: the class's methods are wrapped), the waits in ``Reads.take``, the
query's embeddings and the ranking's Python (``server_rank.rank``, ``server_bound.within_reach``), each with its
start and end (ms from the query's start), its thread (main / ahead) and its thread CPU. Printed: per event kind,
the median start, duration and CPU a query; the main thread's busy and waiting ms; and ``--show N`` queries' whole
timelines.
Run: nice -n 5 .venv/bin/python benchmarks/postgres_timeline.py --data DIR [--queries 40] [--show 3] [--src DIR]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

CLIENT = r"""
import json, sys, threading, time
from agentcontext.memory import AgentMemory, server_search, server_gather, server_bound
from agentcontext.store import open_store
from agentcontext.store.postgres import PostgresStore
from agentcontext.workspace import Workspace
url, questions = sys.argv[1], json.loads(sys.argv[2])
pc, tt = time.perf_counter, time.thread_time
events, t0 = [], [0.0]
def wrap(owner, name, label=None):
    fn = getattr(owner, name, None)
    if fn is None:
        return
    def wrapped(*a, **kw):
        s, c = pc(), tt()
        try:
            return fn(*a, **kw)
        finally:
            main = threading.current_thread() is threading.main_thread()
            events.append((label or name, "main" if main else "ahead", s - t0[0], pc() - t0[0], tt() - c))
    setattr(owner, name, wrapped)
for name in ("text_search", "nearest", "nodes_linked", "similarities", "nodes_naming", "get_nodes", "term_counts",
             "holds_at_least"):
    wrap(PostgresStore, name)
store = open_store(url)
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])
wrap(ws, "embed_query")
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
take = server_gather.Reads.take
def taken(self, label, key):
    s, c = pc(), tt()
    try:
        return take(self, label, key)
    finally:
        events.append(("take " + label, "main", s - t0[0], pc() - t0[0], tt() - c))
server_gather.Reads.take = taken
wrap(server_search, "rank_candidates", "rank (python + its reads)")
wrap(server_search, "within_reach")
memory.retrieve(questions[0], max_results=10)
out = []
for q in questions[1:]:
    events.clear()
    t0[0] = pc()
    c = tt()
    memory.retrieve(q, max_results=10)
    out.append({"total": pc() - t0[0], "main_cpu": tt() - c, "events": list(events)})
print(json.dumps(out))
"""


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    kinds: dict[str, list[list[float]]] = {}
    for r in runs:
        per: dict[str, list[float]] = {}
        for name, thread, s, e, cpu in r["events"]:
            key = f"{name} [{thread}]"
            got = per.setdefault(key, [s, 0.0, 0.0, 0.0])
            got[0] = min(got[0], s)
            got[1] += e - s
            got[2] += cpu
            got[3] += 1
        for key in per:
            kinds.setdefault(key, []).append(per[key])
    rows = {k: {"queries": len(v), "calls": round(statistics.mean(x[3] for x in v), 2),
                "first start ms": round(statistics.median(x[0] for x in v) * 1000, 1),
                "ms (p50)": round(statistics.median(x[1] for x in v) * 1000, 1),
                "cpu ms (p50)": round(statistics.median(x[2] for x in v) * 1000, 1)}
            for k, v in sorted(kinds.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))}
    return {"total ms (p50 / mean)": [round(statistics.median(r["total"] for r in runs) * 1000, 1),
                                      round(statistics.mean(r["total"] for r in runs) * 1000, 1)],
            "main thread cpu ms (p50)": round(statistics.median(r["main_cpu"] for r in runs) * 1000, 1),
            "events": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the kept cluster of postgres_scale.py")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--show", type=int, default=2, help="print this many queries' whole timelines")
    parser.add_argument("--src", type=Path, default=None, help="another source tree's src/ (default: this tree's)")
    parser.add_argument("--name", default="", help="the results file's suffix")
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    src = before_tree(args.src) if args.src else Path(__file__).resolve().parent.parent / "src"
    load = [round(x, 2) for x in os.getloadavg()]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        proc = subprocess.run([sys.executable, "-c", CLIENT, server.url("scale"),
                               json.dumps(questions[: args.queries + 1])], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(src)}, timeout=3600)
    finally:
        server.stop()
    if proc.returncode:
        raise SystemExit(proc.stderr[-4000:])
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    for r in runs[: args.show]:
        print(f"query: {r['total'] * 1000:.1f} ms, main thread cpu {r['main_cpu'] * 1000:.1f} ms")
        for name, thread, s, e, cpu in sorted(r["events"], key=lambda x: x[2]):
            print(f"  {s * 1000:7.1f} .. {e * 1000:7.1f}  {thread:5}  {(e - s) * 1000:6.1f} ms (cpu {cpu * 1000:5.1f})"
                  f"  {name}")
    out = {"memories": json.loads((args.data / "built.json").read_text())["memories"], "queries": args.queries,
           "src": str(src), "load_average before / after": [load, [round(x, 2) for x in os.getloadavg()]],
           **summary(runs)}
    report(f"postgres_timeline_{out['memories']}{args.name}", out)


if __name__ == "__main__":
    main()
