"""Where the milliseconds of one PostgreSQL ``retrieve`` go (issue 23 s3): per store call, per query.

Runs on the kept cluster of ``benchmarks/postgres_scale.py`` (``--data``, default its 200,000-memory folder; a server
already running on it is reused, else one is started and stopped after). One client process per code (this tree's,
and with ``--before-src DIR`` another tree's ``src/``, in the order before, this, this, before) asks the same LoCoMo
questions (k = 10) and prints, a query (mean over the questions):
- per store call the ranking makes (``text_search``, ``nearest``, ``nodes_linked``, ``similarities``, ...): calls,
  ms in the statement (server time and the wire: ``_read``), ms in the call besides (decoding rows into nodes);
- the client's CPU ms (``time.process_time``: the ranking in Python, row decoding, the query's embedding) and the
  server backend's CPU ms (``/proc/<pid>/stat`` of the connection's backend): on this shared 2-core machine the wall
  time is mostly waiting for a core, so the CPU figures are the steadier measure of the work a query costs;
- wall p50 / mean.
``--explain FILE``: also EXPLAIN (ANALYZE, BUFFERS) of every statement one question runs, written to FILE.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_retrieve_profile.py [--queries 60] [--before-src DIR
[--before-data DIR]] (``--before-data``: the before code's own copy, when this code's schema is newer)

Measured at 200,000 memories (60 questions, load 14-22 on 2 cores, December 2026), a query: server backend CPU 83-90
ms, client CPU 80-85 ms (the query's embedding included), wall 450-900 ms (mostly waiting for a core). Server CPU by
statement (the statements of 20 questions replayed on one connection): text search 36 ms (2.8 statements: the capped
main search, then the BM25 scores of ~1,840 candidates and neighbours beyond the text pool, then of the second
stage's few), nodes_linked 30 ms (2.7 statements; ~1,400 rows for 300 ids: ~2,000 index probes and one jsonb parse a
row), nearest 19 ms (one HNSW walk at ef_search 1000 for 160 rows), similarities 19 ms (2 statements, ~2,800 vector
rows found by their 64-character hash: ~2,300 B-tree descents of vectors_pkey), the rest ~3 ms. In the main text
search, unnesting each of the 1,200 prefiltered rows' whole tsvector was ~60% of its time (now only the query's
lexemes are: the text statements 158 -> 124 ms a query, server CPU 90 -> 83 ms; the main search alone, replayed,
21-33 -> 14-20 ms of server CPU: finding and cheaply ranking the matches 5 ms, BM25 over the 1,200 kept 9 ms).
Client: ~7 ms to decode a 300-id nodes_linked answer (1,400 rows into nodes), and ``_rank`` runs twice a query over
~1,250 candidates (again over all of them when the second stage adds a few replies). The first query of a new
process is an ordinary query: EXPLAIN of every statement beforehand (the backend's catalog caches warmed) cost 10 ms
and saved nothing measurable. Measured for the next step (not built): the same nodes_linked statements on a
temporary copy of the nodes with the ranked props as columns (prev, pair_hash, created_at, conversation_id, user_id;
no jsonb parse a row) took 0.35-0.45 s of server CPU against 0.50-0.73 s for 20 questions (three alternations): ~8
ms a query, a third of that statement.
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

from benchmarks._util import before_tree  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

CALLS = ("text_search", "term_counts", "holds_at_least", "nearest", "nodes_linked", "nodes_naming", "get_nodes",
         "similarities")

CLIENT = r"""
import json, os, sys, time, statistics
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, questions, calls, explain = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
store = open_store(url)
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
pids = [store._db.execute("SELECT pg_backend_pid()").fetchone()[0]]
tick = os.sysconf("SC_CLK_TCK")
def server_cpu():  # every backend of this client: the main connection's and the second one's (reads ahead)
    total = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick
current, spent, logged = [None], {}, []
read = store._read
def timed_read(sql, params=()):
    t = time.perf_counter()
    try:
        return read(sql, params)
    finally:
        got = spent.setdefault(current[0] or "other", [0, 0.0, 0.0])
        got[1] += time.perf_counter() - t
        if logged is not None:
            logged.append((sql, params))
store._read = timed_read
def wrap(name):
    fn = getattr(store, name, None)
    if fn is None:
        return
    def wrapped(*a, **kw):
        outer, current[0] = current[0], name
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            current[0] = outer
            got = spent.setdefault(name, [0, 0.0, 0.0])
            got[0] += 1
            got[2] += time.perf_counter() - t
    setattr(store, name, wrapped)
for name in calls:
    wrap(name)
memory.retrieve(questions[0], max_results=10)
second = getattr(getattr(store, "_ahead", None), "_store", None)  # the second connection (store/pg_parallel.py)
if second is not None:
    pids.append(second._db.execute("SELECT pg_backend_pid()").fetchone()[0])
logged = None
spent.clear()
wall = []
s0, c0 = server_cpu(), time.process_time()
for q in questions[1:]:
    t = time.perf_counter()
    memory.retrieve(q, max_results=10)
    wall.append(time.perf_counter() - t)
c1, s1 = time.process_time(), server_cpu()
n = len(wall)
per = {name: {"calls": round(v[0] / n, 2), "statement_ms": round(v[1] / n * 1000, 1),
              "besides_ms": round(max(v[2] - v[1], 0.0) / n * 1000, 1)} for name, v in spent.items()}
out = {"p50_wall_ms": round(statistics.median(wall) * 1000, 1), "mean_wall_ms": round(statistics.mean(wall) * 1000, 1),
       "client_cpu_ms": round((c1 - c0) / n * 1000, 1), "server_cpu_ms": round((s1 - s0) / n * 1000, 1),
       "statements_ms": round(sum(v[1] for v in spent.values()) / n * 1000, 1), "calls": per}
if explain:
    logged = []
    memory.retrieve(questions[1], max_results=10)
    store._read = read
    with open(explain, "w") as f:
        f.write(f"question: {questions[1]}\n")
        for sql, params in logged:
            plan = store._db.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            f.write("=" * 100 + "\n" + sql + "\n" + "\n".join(r[0] for r in plan) + "\n")
print(json.dumps(out))
"""


def run(url: str, questions: list[str], src: Path, explain: str = "") -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", CLIENT, url, json.dumps(questions), json.dumps(CALLS), explain],
                          capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout)


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' figures side by side (a list a figure) and their median."""
    keys = ("p50_wall_ms", "mean_wall_ms", "client_cpu_ms", "server_cpu_ms", "statements_ms")
    out: dict[str, Any] = {k: {"runs": [r[k] for r in runs], "median": statistics.median(r[k] for r in runs)}
                           for k in keys}
    names = sorted({n for r in runs for n in r["calls"]}, key=lambda n: -runs[0]["calls"].get(n, {}).get(
        "statement_ms", 0.0))
    out["store calls (a query, medians of the runs)"] = {
        n: "{:.2f} calls, {:.1f} ms in the statements, {:.1f} ms besides".format(
            *(statistics.median(r["calls"].get(n, {}).get(k, 0.0) for r in runs)
              for k in ("calls", "statement_ms", "besides_ms"))) for n in names}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("/work/pgdata-pgquery/200k"))
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--before-src", type=Path, default=None)
    parser.add_argument("--before-data", type=Path, default=None,
                        help="the before code's own cluster (a copy at the schema it knows: a newer one it refuses)")
    parser.add_argument("--explain", default="", help="write EXPLAIN (ANALYZE, BUFFERS) of one question here")
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    asked = questions[: args.queries + 1]
    this = Path(__file__).resolve().parent.parent / "src"
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    other = PgServer(root=args.before_data / "cluster", options=SERVER).start() if args.before_data else None
    try:
        url = server.url("scale")
        urls = {"this": url, "before": other.url("scale") if other else url}
        order = [("this", this)] if args.before_src is None else [
            ("before", before_tree(args.before_src)), ("this", this), ("this", this),
            ("before", before_tree(args.before_src))]
        runs = [(name, run(urls[name], asked, src, args.explain if i == 1 or len(order) == 1 else ""))
                for i, (name, src) in enumerate(order)]
    finally:
        server.stop()
        if other:
            other.stop()
    out: dict[str, Any] = {"memories": json.loads((args.data / "built.json").read_text())["memories"],
                           "queries": args.queries, "order": [n for n, _ in runs],
                           "note": "busy shared 2-core machine: wall time is mostly waiting for a core",
                           "load_average": [round(x, 2) for x in os.getloadavg()]}
    for name in dict.fromkeys(n for n, _ in runs):
        out[name] = pooled([r for n, r in runs if n == name])
    if args.before_src is not None:
        out["ratios (this / before, medians)"] = {
            k: round(out["this"][k]["median"] / out["before"][k]["median"], 3)
            for k in ("p50_wall_ms", "mean_wall_ms", "client_cpu_ms", "server_cpu_ms", "statements_ms")}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
