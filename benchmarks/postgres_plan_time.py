"""What planning costs the statements of a PostgreSQL ``retrieve`` (issue 23 s3): per statement, planning against
execution, and whether the connection's plan cache already spares it.

On the kept cluster of ``postgres_scale.py`` (``--data``; a server already running on it is reused, else one is
started and stopped after), one client process (this tree's code, or ``--src``'s) asks LoCoMo questions (k = 10),
every statement either connection sends logged with the store call that sent it (``psycopg.Cursor.execute`` wrapped,
the store's calls labelled). Printed, per store call: statements a query, the distinct texts, what psycopg and the
server did with them in the run (``pg_prepared_statements`` of both connections: the texts prepared, and how many
of their executions were planned anew, ``custom_plans``, or ran the cached ``generic_plans``); then each logged
statement replayed on the main connection as ``EXPLAIN (ANALYZE, SUMMARY)`` (a custom plan: the parameters known):
planning and execution ms a query (medians and means over the questions), beside the retrieve p50 of the run and the
issue's target. ``--generic``: also each distinct statement text prepared and run under ``plan_cache_mode =
force_generic_plan`` against ``force_custom_plan`` in the same run (``--repeat`` times each, the logged parameters, a
fresh connection a mode, the modes alternating; the wall ms of the executions with their planning, and the ratio).
Measured (session 21, docs/POSTGRES_SCALE.md): at 1,000,000 memories planning is ~2.5 ms of a query's ~43-49 ms of
server time, ``nodes_linked`` and ``get_nodes`` already on generic plans in the steady state.
Run: nice -n 5 .venv/bin/python benchmarks/postgres_plan_time.py --data DIR [--queries 30] [--generic]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

CLIENT = r"""
import json, re, statistics, sys, threading, time
import psycopg
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.store.postgres import PostgresStore
from agentcontext.workspace import Workspace
url, questions, generic, repeat = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
label, logged, on = threading.local(), [], [False]
def wrap(name):
    fn = getattr(PostgresStore, name)
    def wrapped(self, *a, **kw):
        outer = getattr(label, "name", None)
        label.name = outer or name
        try:
            return fn(self, *a, **kw)
        finally:
            label.name = outer
    setattr(PostgresStore, name, wrapped)
for name in ("text_search", "nearest", "nodes_linked", "similarities", "nodes_naming", "get_nodes", "term_counts",
             "holds_at_least"):
    wrap(name)
execute = psycopg.Cursor.execute
def logging(self, query, params=None, **kw):
    if on[0]:
        logged.append((getattr(label, "name", None) or "other", query, params, self.connection,
                       threading.current_thread() is threading.main_thread(), q_at[0]))
    return execute(self, query, params, **kw)
psycopg.Cursor.execute = logging
q_at = [0]
store = open_store(url)
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
memory.retrieve(questions[0], max_results=10)
on[0] = True
walls = []
for i, q in enumerate(questions[1:]):
    q_at[0] = i
    t = time.perf_counter()
    memory.retrieve(q, max_results=10)
    walls.append((time.perf_counter() - t) * 1000)
on[0] = False
second = getattr(getattr(store, "_ahead", None), "_store", None)
conns = {"main": store._db, **({"ahead": second._db} if second is not None else {})}
prepared = {}
for cname, db in conns.items():
    for stmt, gp, cp in db.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"):
        prepared[stmt] = (cname, gp, cp)
n = len(questions) - 1
out = {"questions": n, "retrieve_p50_ms (statements logged)": round(statistics.median(walls), 1),
       "target retrieve_p50_ms (issue 23)": 40,
       "thresholds": {c: db.prepare_threshold for c, db in conns.items()}, "calls": {}}
db = store._db
def norm(sql):  # a statement's text with its placeholders (psycopg's %s / %(name)s, the server's $n) alike
    return re.sub(r"\$\d+|%(\(\w+\))?s", "?", sql.replace("%%", "%") if isinstance(sql, str) else str(sql))
prepared = {norm(k): v for k, v in prepared.items()}
texts = {}
for name, sql, params, conn, main, qi in logged:
    c = out["calls"].setdefault(name, {"statements": 0, "texts": set(), "prepared_texts": 0, "generic_plans": 0,
                                       "custom_plans": 0, "plan_ms": [0.0] * n, "exec_ms": [0.0] * n,
                                       "threads": set()})
    c["statements"] += 1
    c["texts"].add(sql if isinstance(sql, str) else str(sql))
    c["threads"].add("main" if main else "ahead")
    texts.setdefault((name, sql if isinstance(sql, str) else str(sql)), []).append(params)
    if not isinstance(sql, str) or not sql.lstrip().upper().startswith(("SELECT", "WITH", "(")):
        continue
    plan = db.execute("EXPLAIN (ANALYZE, SUMMARY, TIMING OFF, FORMAT JSON) " + sql, params).fetchone()[0][0]
    c["plan_ms"][qi] += plan["Planning Time"]
    c["exec_ms"][qi] += plan["Execution Time"]
for name, c in out["calls"].items():
    for t in c["texts"]:
        got = prepared.get(norm(t))
        if got:
            c["prepared_texts"] += 1
            c["generic_plans"] += got[1]
            c["custom_plans"] += got[2]
    c["statements"] = round(c["statements"] / n, 2)
    c["threads"] = sorted(c["threads"])
    c["distinct_texts"] = len(c.pop("texts"))
    plans, execs = c.pop("plan_ms"), c.pop("exec_ms")
    c["plan_ms_p50"], c["exec_ms_p50"] = round(statistics.median(plans), 3), round(statistics.median(execs), 3)
    c["plan_ms_mean"], c["exec_ms_mean"] = round(statistics.mean(plans), 3), round(statistics.mean(execs), 3)
out["plan_ms_a_query"] = round(sum(c["plan_ms_mean"] for c in out["calls"].values()), 2)
out["exec_ms_a_query"] = round(sum(c["exec_ms_mean"] for c in out["calls"].values()), 2)
def connect(mode):  # a connection of its own, set up as the store's, prepared statements under ``mode``
    from pgvector.psycopg import register_vector
    from agentcontext.store.pg_vectors import SESSION
    fresh = psycopg.connect(store._conninfo, autocommit=True)
    register_vector(fresh)
    for statement in [*SESSION, f"SET plan_cache_mode = {mode}"]:
        fresh.execute(statement)
    if store.schema:
        fresh.execute(f'SET search_path TO "{store.schema}", public')
    return fresh
if generic:
    out["generic"] = {}
    for (name, sql), plist in texts.items():
        if not sql.lstrip().upper().startswith(("SELECT", "WITH", "(")):
            continue
        params = plist[: repeat]
        ms = {"force_custom_plan": [], "force_generic_plan": []}
        for mode in ["force_custom_plan", "force_generic_plan"] * 2:
            fresh = connect(mode)
            for p in params:
                t = time.perf_counter()
                fresh.execute(sql, p, prepare=True).fetchall()
                ms[mode].append((time.perf_counter() - t) * 1000)
            fresh.close()
        g = out["generic"].setdefault(name, {"texts": 0, "executions": 0, "custom_ms": 0.0, "generic_ms": 0.0})
        g["texts"] += 1
        g["executions"] += len(ms["force_custom_plan"])
        g["custom_ms"] += sum(ms["force_custom_plan"])
        g["generic_ms"] += sum(ms["force_generic_plan"])
    for g in out["generic"].values():
        g["ratio"] = round(g["generic_ms"] / g["custom_ms"], 3) if g["custom_ms"] else None
        g["custom_ms"], g["generic_ms"] = round(g["custom_ms"], 1), round(g["generic_ms"], 1)
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the kept cluster of postgres_scale.py")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--src", type=Path, default=None, help="another source tree's src/ (default: this tree's)")
    parser.add_argument("--generic", action="store_true", help="also time generic against custom plans")
    parser.add_argument("--repeat", type=int, default=10, help="executions of each text a mode (--generic)")
    parser.add_argument("--name", default="", help="the results file's suffix")
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    src = before_tree(args.src) if args.src else Path(__file__).resolve().parent.parent / "src"
    load = [round(x, 2) for x in os.getloadavg()]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        proc = subprocess.run([sys.executable, "-c", CLIENT, server.url("scale"),
                               json.dumps(questions[: args.queries + 1]), "1" if args.generic else "0",
                               str(args.repeat)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(src)}, timeout=3600)
    finally:
        server.stop()
    if proc.returncode:
        raise SystemExit(proc.stderr[-4000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out = {"memories": json.loads((args.data / "built.json").read_text())["memories"], "src": str(src),
           "load_average before / after": [load, [round(x, 2) for x in os.getloadavg()]], **out}
    report(f"postgres_plan_time_{out['memories']}{args.name}", out)


if __name__ == "__main__":
    main()
