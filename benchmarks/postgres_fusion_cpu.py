"""The client's ranking CPU of a PostgreSQL ``retrieve`` (issue 23 s3, the ``fusion`` stage of
``benchmarks/postgres_scale.py``), beside another source tree's code in the same run.

On the kept cluster of ``postgres_scale.py`` (``--data``; a server already running on it is reused), one client
process per code (``--before-src DIR``: in the order before, this, this, before) asks the same LoCoMo questions
(k = 10) and measures, with the thread's CPU clock (``time.thread_time``: on this shared 2-core machine the wall time
is mostly waiting for a core), each ranking function's exclusive CPU a query: the store's calls (``store.*``, the
client's part of them: sending, decoding rows into nodes), the query's embedding, and the Python of
memory/server_search.py and memory/server_rank.py around them. ``client ranking CPU`` is the sum of the last: what
the ``fusion`` stage spends when the client has a core to itself. Prints the medians and the ratio this / before.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_fusion_cpu.py --data DIR [--queries 60] [--before-src DIR]
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
import json, sys, time
from agentcontext.memory import AgentMemory, server_search
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, questions = sys.argv[1], json.loads(sys.argv[2])
store = open_store(url)
ws = Workspace(store)
ws.embedder.embed(["warm the model up"])
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
spent, stack, clock = {}, [], time.thread_time
def wrap(owner, attr, label):
    fn = getattr(owner, attr, None)
    if fn is None:  # this code has no such function
        return
    def wrapped(*a, **kw):
        stack.append(0.0)
        t = clock()
        try:
            return fn(*a, **kw)
        finally:
            d, inner = clock() - t, stack.pop()
            spent[label] = spent.get(label, 0.0) + d - inner
            if stack:
                stack[-1] += d
    setattr(owner, attr, wrapped)
for name in ("nearest", "text_search", "term_counts", "holds_at_least", "nodes_linked", "nodes_naming", "get_nodes",
             "similarities"):
    wrap(store, name, "store." + name)
wrap(ws, "embed_query", "embedding")
wrap(server_search, "search", "search")
for name in ("rank", "_complete"):
    wrap(server_search._Query, name, "_Query." + name)
for name in ("load", "whole", "_followers", "around", "replies", "within"):
    wrap(server_search._Links, name, "_Links." + name)
wrap(server_search, "_named", "_named")
ranking = "rank_candidates" if hasattr(server_search, "rank_candidates") else "_rank"
wrap(server_search, ranking, "rank (server_rank.rank / _rank)")
memory.retrieve(questions[0], max_results=10)
spent.clear()
for q in questions[1:]:
    memory.retrieve(q, max_results=10)
print(json.dumps({k: v * 1000 / (len(questions) - 1) for k, v in spent.items()}))
"""


def run(url: str, questions: list[str], src: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", CLIENT, url, json.dumps(questions)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(src)}, timeout=3600)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got["client ranking CPU"] = sum(v for k, v in got.items() if not k.startswith("store.") and k != "embedding")
    return got


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the kept cluster of postgres_scale.py")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--before-src", type=Path, default=None)
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    asked = questions[: args.queries + 1]
    this = Path(__file__).resolve().parent.parent / "src"
    order = [("this", this)] if args.before_src is None else [
        ("before", before_tree(args.before_src)), ("this", this), ("this", this),
        ("before", before_tree(args.before_src))]
    load = [round(x, 2) for x in os.getloadavg()]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        runs = [(name, run(server.url("scale"), asked, src)) for name, src in order]
    finally:
        server.stop()
    out: dict[str, Any] = {"memories": json.loads((args.data / "built.json").read_text())["memories"],
                           "queries": args.queries, "order": [n for n, _ in runs],
                           "note": "busy shared 2-core machine; thread CPU ms a query (mean over the questions)",
                           "load_average before / after": [load, [round(x, 2) for x in os.getloadavg()]]}
    for name in dict.fromkeys(n for n, _ in runs):
        mine = [r for n, r in runs if n == name]
        out[name] = {k: {"median": round(statistics.median(r.get(k, 0.0) for r in mine), 2),
                         "runs": [round(r.get(k, 0.0), 2) for r in mine]}
                     for k in sorted(set().union(*mine), key=lambda k: -mine[0].get(k, 0.0))}
    if args.before_src is not None:
        out["ratio client ranking CPU (this / before, medians)"] = round(
            out["this"]["client ranking CPU"]["median"] / out["before"]["client ranking CPU"]["median"], 3)
    report(f"postgres_fusion_cpu_{out['memories']}", out)


if __name__ == "__main__":
    main()
