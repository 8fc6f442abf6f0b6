"""Where the ``fusion`` stage of a PostgreSQL ``retrieve`` goes (issue 23 s3): the waits for the reads ahead, by read,
against the client's own ranking CPU.

``benchmarks/postgres_scale.py`` times the store's calls on the main connection by stage; ``fusion`` is the rest of
``server_search.search``: the client's Python (server_search, server_rank, fusion, dates, answers) and, since the
reads ahead (memory/server_gather.py, store/pg_parallel.py), the time the main thread waits in ``Reads.take`` for a
read still running on the second connection. On the kept cluster (``--data``), one client process per code and mode
asks the same LoCoMo questions (k = 10) and prints, a query (medians over the questions):
- ``fusion`` as postgres_scale.py computes it, split into ``waits`` (by read: text, nearest, named, sims) and the
  rest (the main thread's own work: ``ranking`` = server_rank.rank less its store calls, and the other Python);
- for each read ahead: its time queued behind the worker's earlier reads, its own run (wall and the worker thread's
  CPU: decoding the rows), and how long before the main thread asked for it it ended (negative: the main thread
  waited);
- the main thread's CPU a query (``time.thread_time``) and the worker's, and the server backends' CPU (both
  connections, /proc);
- ``--modes ahead,serial``: ``serial`` turns the reads ahead off (``READ_AHEAD`` false: each read runs on the main
  connection when taken, alone), so a read's own time alone is seen beside its time run beside the main path;
  ``ahead-switch0.5``: the interpreter's GIL switch interval at 0.5 ms (an experiment: 5 ms is Python's default);
  ``start <read>``: the caller's time in starting it;
- ``--profile N``: cProfile of the main thread over the questions, the N functions with the most own time.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_fusion_split.py --data DIR [--queries 40] [--modes ahead,serial]
     [--before-src DIR] [--profile 25]
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
from benchmarks.postgres_scale import SERVER, STAGES, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

CLIENT = r"""
import cProfile, io, json, os, pstats, sys, threading, time
from agentcontext.memory import AgentMemory, server_search, server_gather
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, mode, questions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
stages, profile = json.loads(sys.argv[4]), int(sys.argv[5])
store = open_store(url)
if mode.startswith("serial"):
    store.READ_AHEAD = False
if "switch" in mode:  # e.g. ahead-switch0.5: the interpreter's GIL switch interval in ms
    sys.setswitchinterval(float(mode.split("switch")[1]) / 1000)
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
pc, tt = time.perf_counter, time.thread_time
spent, inside, events = {}, [False], []
def timer(owner, name, stage):
    fn = getattr(owner, name, None)
    if fn is None:
        return
    def wrapped(*a, **kw):
        t = pc()
        try:
            return fn(*a, **kw)
        finally:
            if threading.current_thread() is threading.main_thread():
                key = stage if inside[0] or stage == "embedding" else "fetch"
                spent[key] = spent.get(key, 0.0) + pc() - t
    setattr(owner, name, wrapped)
for stage, names in stages.items():
    for name in names:
        timer(ws if name == "embed_query" else store, name, stage)
search = server_search.search
def searched(*a, **kw):
    inside[0] = True
    t = pc()
    try:
        return search(*a, **kw)
    finally:
        inside[0] = False
        spent["search"] = spent.get("search", 0.0) + pc() - t
server_search.search = searched
# the main thread's ranking (server_rank.rank, its store calls left out: they are timed by stage)
rank = server_search.rank_candidates
def ranked(*a, **kw):
    t, c = pc(), tt()
    before = sum(v for k, v in spent.items() if k not in ("search", "fetch", "embedding"))
    try:
        return rank(*a, **kw)
    finally:
        stores = sum(v for k, v in spent.items() if k not in ("search", "fetch", "embedding")) - before
        spent["ranking"] = spent.get("ranking", 0.0) + pc() - t - stores
        spent["ranking_cpu"] = spent.get("ranking_cpu", 0.0) + tt() - c
server_search.rank_candidates = ranked
Reads = server_gather.Reads
start, take = Reads.start, Reads.take
def started(self, label, key, read, **kw):
    mark = {"label": label, "submit": pc()}
    def timed_read(s):
        mark["begin"], c = pc(), tt()
        try:
            return read(s)
        finally:
            mark["end"], mark["cpu"] = pc(), tt() - c
    self.__dict__.setdefault("_marks", {})[label] = mark
    try:
        return start(self, label, key, timed_read, **kw)
    finally:
        mark["handed"] = pc() - mark["submit"]  # the caller's time in start (the handoff to an idle worker)
def taken(self, label, key):
    t = pc()
    try:
        got = take(self, label, key)
    finally:
        mark = self.__dict__.get("_marks", {}).get(label)
        if mark is not None:
            events.append({**mark, "ask": t, "got": pc(), "used": got is not None})
    return got
Reads.start, Reads.take = started, taken
pids = [store._db.execute("SELECT pg_backend_pid()").fetchone()[0]]
tick = os.sysconf("SC_CLK_TCK")
def server_cpu():
    total = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick
memory.retrieve(questions[0], max_results=10)
second = getattr(getattr(store, "_ahead", None), "_store", None)
if second is not None:
    pids.append(second._db.execute("SELECT pg_backend_pid()").fetchone()[0])
prof = cProfile.Profile() if profile else None
rows = []
c0, s0, p0 = tt(), server_cpu(), time.process_time()
for q in questions[1:]:
    spent.clear()
    events.clear()
    t = pc()
    c = tt()
    if prof:
        prof.enable()
    memory.retrieve(q, max_results=10)
    if prof:
        prof.disable()
    total = pc() - t
    search_s = spent.pop("search", total)
    ranking, ranking_cpu = spent.pop("ranking", 0.0), spent.pop("ranking_cpu", 0.0)
    stage_sum = sum(v for k, v in spent.items() if k not in ("fetch", "embedding"))
    row = {"total": total, "fusion": search_s - stage_sum, "ranking": ranking, "ranking_cpu": ranking_cpu,
           "main_cpu": tt() - c, **{k: v for k, v in spent.items()}}
    for e in events:
        lab = e["label"]
        row["wait " + lab] = row.get("wait " + lab, 0.0) + (e["got"] - e["ask"])
        if "begin" in e and mode.startswith("ahead"):
            row["queued " + lab] = e["begin"] - e["submit"]
            row["run " + lab] = e["end"] - e["begin"]
            row["cpu " + lab] = e["cpu"]
            row["slack " + lab] = e["ask"] - e["end"]
            row["asked after start " + lab] = e["ask"] - e["submit"]
        elif "begin" in e:
            row["run " + lab] = e["end"] - e["begin"]
            row["cpu " + lab] = e["cpu"]
        row["start " + lab] = row.get("start " + lab, 0.0) + e.get("handed", 0.0)
        if not e["used"]:
            row["missed " + lab] = row.get("missed " + lab, 0) + 1
    row["waits"] = sum(v for k, v in row.items() if k.startswith("wait "))
    # serial: the reads ran on the main connection, timed by stage (outside fusion)
    row["own"] = row["fusion"] - row["waits"] if mode.startswith("ahead") else row["fusion"]
    rows.append(row)
n = len(rows)
out = {"rows": rows, "main_cpu_ms": (tt() - c0) / n * 1000, "process_cpu_ms": (time.process_time() - p0) / n * 1000,
       "server_cpu_ms": (server_cpu() - s0) / n * 1000}
if prof:
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(profile)
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats("agentcontext", profile)
    out["profile"] = buf.getvalue()
print(json.dumps(out))
"""


def run(url: str, mode: str, questions: list[str], src: Path, profile: int) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CLIENT, url, mode, json.dumps(questions), json.dumps(STAGES),
                           str(profile)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)},
                          timeout=3600)
    if proc.returncode:
        raise SystemExit(proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(got: dict[str, Any]) -> dict[str, Any]:
    rows = got["rows"]
    keys = sorted({k for r in rows for k in r})
    out: dict[str, Any] = {}
    for k in keys:
        vals = [r.get(k, 0.0) for r in rows]
        if k.startswith("missed "):
            out[k] = sum(vals)
            continue
        out[k + " ms (p50 / mean)"] = [round(statistics.median(vals) * 1000, 1),
                                       round(statistics.mean(vals) * 1000, 1)]
    for k in ("main_cpu_ms", "process_cpu_ms", "server_cpu_ms"):
        out[k] = round(got[k], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the kept cluster of postgres_scale.py")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--modes", default="ahead", help="ahead, serial or both (comma separated)")
    parser.add_argument("--before-src", type=Path, default=None)
    parser.add_argument("--profile", type=int, default=0, help="cProfile: print this many functions (this code)")
    parser.add_argument("--name", default="", help="the results file's suffix")
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    asked = questions[: args.queries + 1]
    this = Path(__file__).resolve().parent.parent / "src"
    codes = [("this", this)] if args.before_src is None else [
        ("before", before_tree(args.before_src)), ("this", this)]
    load = [round(x, 2) for x in os.getloadavg()]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    out: dict[str, Any] = {"memories": json.loads((args.data / "built.json").read_text())["memories"],
                           "queries": args.queries, "note": "2-core machine shared by seven engineers"}
    try:
        for i, mode in enumerate(args.modes.split(",")):
            for name, src in codes if i % 2 == 0 else codes[::-1]:  # before, this, this, before, ...
                got = run(server.url("scale"), mode, asked, src, args.profile if name == "this" else 0)
                out[f"{name} {mode} #{i + 1}"] = summary(got)
                if got.get("profile"):
                    out[f"{name} {mode} #{i + 1} profile"] = got["profile"].splitlines()
    finally:
        server.stop()
    out["load_average before / after"] = [load, [round(x, 2) for x in os.getloadavg()]]
    report(f"postgres_fusion_split_{out['memories']}{args.name}", out)


if __name__ == "__main__":
    main()
