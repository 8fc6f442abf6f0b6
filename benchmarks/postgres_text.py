"""The text stage of a PostgreSQL retrieve alone (issue 23 s3): the text searches the benchmark's questions make,
replayed by this code and by the code before, on a kept ``postgres_scale.py`` cluster; the statements a question
and the time of those that are not the search itself (the counts BM25 ranks with).

First a process with this code asks the questions (``retrieve``, k = 10) and records every ``text_search`` call it
makes (query, namespace, kind, limit, ids); then new processes replay those calls, ordered before, this, this,
before (the later meet warmer pages), each call timed; printed: ms a question (median, mean) per code and the
ratio, how many calls return the same ids and scores, and how much of the exact top 10 (every row holding the
searched words ranked by BM25: ``pg_text.MATCH_ROWS`` and ``PREFILTER`` unbounded, asked once by this code) each
code's answers hold.
When this tree's schema is newer than the before code's (migration 12), ``--before-data`` names a copy of the cluster
at the older schema: the before code's replays run there (a second server), this code's on ``--data``.
Run: flock /work/locks/1m.lock nice -n 10 .venv/bin/python benchmarks/postgres_text.py --data DIR --queries 40
--before-src /work/wt/before [--before-data DIR]
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

RECORD = """
import pickle, sys
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, questions, out = sys.argv[1], sys.argv[2].split("\\n"), sys.argv[3]
store = open_store(url)
ws = Workspace(store)
memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
calls, search = [], store.text_search
def recorded(query, **kw):
    calls[-1].append((query, kw))
    return search(query, **kw)
store.text_search = recorded
for q in questions:
    calls.append([])
    memory.retrieve(q, max_results=10)
pickle.dump(calls, open(out, "wb"))
"""

REPLAY = """
import pickle, sys, time
from agentcontext.store import open_store, pg_text
url, path, out, exact = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "exact"
calls = pickle.load(open(path, "rb"))
store = open_store(url)
if exact:
    pg_text.MATCH_ROWS = pg_text.PREFILTER = 10 ** 9
elif sys.argv[4].startswith("rows="):  # this code with another cap (what a smaller one would cost in hits)
    pg_text.MATCH_ROWS = int(sys.argv[4][5:])
found, spent, statements, counting = [], [], [], []
read, asked = store._read, []
def timed(sql, params=()):
    t = time.perf_counter()
    try:
        return read(sql, params)
    finally:
        asked.append(("WITH pre AS" in sql, time.perf_counter() - t))
store._read = timed
for question in calls:
    asked.clear()
    t = time.perf_counter()
    found.append([store.text_search(query, **kw) for query, kw in question])
    spent.append(time.perf_counter() - t)
    statements.append(len(asked))
    counting.append(sum(s for search, s in asked if not search))
pickle.dump({"found": found, "spent": spent, "statements": statements, "counting": counting}, open(out, "wb"))
"""


def run(script: str, src: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                          timeout=7200)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])


def top_share(found: list[list[Any]], exact: list[list[Any]], k: int = 10) -> float:
    """Of the exact answers' top k ids (searches without ids), the share each answer holds in its top k."""
    held = total = 0
    for question, truth in zip(found, exact):
        for got, want in zip(question, truth):
            best = {i for i, _ in want[:k]}
            held += len(best & {i for i, _ in got[:k]})
            total += len(best)
    return round(held / max(total, 1), 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a kept postgres_scale.py cluster")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--match-rows", type=int, default=None,
                        help="this code's replays with pg_text.MATCH_ROWS set to this (a smaller cap: time, hits)")
    parser.add_argument("--before-data", type=Path, default=None,
                        help="a copy of --data at the before code's schema (when this tree's is newer): its runs there")
    args = parser.parse_args()
    this_src = Path(__file__).resolve().parent.parent / "src"
    before_src = before_tree(args.before_src)
    _, _, questions, _ = base_corpus(args.data)
    asked = questions[1: args.queries + 1]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    other = PgServer(root=args.before_data / "cluster", options=SERVER).start() if args.before_data else None
    load_before = os.getloadavg()
    try:
        url = server.url("scale")
        urls = {"this": url, "before": other.url("scale") if other else url}
        with tempfile.TemporaryDirectory() as tmp:
            calls = Path(tmp) / "calls.pkl"
            run(RECORD, this_src, url, "\n".join(asked), str(calls))
            runs = []
            for i, (name, src) in enumerate((("before", before_src), ("this", this_src), ("this", this_src),
                                             ("before", before_src))):
                out = Path(tmp) / f"run{i}.pkl"
                mode = f"rows={args.match_rows}" if name == "this" and args.match_rows else "timed"
                run(REPLAY, src, urls[name], str(calls), str(out), mode)
                runs.append((name, pickle.loads(out.read_bytes())))
            out = Path(tmp) / "exact.pkl"
            run(REPLAY, this_src, url, str(calls), str(out), "exact")
            exact = pickle.loads(out.read_bytes())
            recorded = pickle.loads(calls.read_bytes())
    finally:
        server.stop()
        if other:
            other.stop()
    figures: dict[str, Any] = {
        "data": str(args.data), "before_data": str(args.before_data or args.data), "questions": len(asked),
        "text_search_calls": sum(len(c) for c in recorded),
        "note": "busy shared 2-core machine; ms a question: every text_search call of its retrieve, replayed",
        "load_average before / after": [[round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]],
        "order": [name for name, _ in runs], "this code's MATCH_ROWS": args.match_rows or "as built"}
    for name in ("before", "this"):
        ms = [x * 1000 for n, r in runs if n == name for x in r["spent"]]
        figures[name] = {"p50_ms": round(statistics.median(ms), 1), "mean_ms": round(statistics.mean(ms), 1),
                         "p50_per_run_ms": [round(statistics.median(r["spent"]) * 1000, 1) for n, r in runs
                                            if n == name],
                         "exact_top10_held": top_share(next(r["found"] for n, r in runs if n == name),
                                                       exact["found"]),
                         "statements a question, mean": round(statistics.mean(
                             x for n, r in runs if n == name for x in r["statements"]), 2),
                         "counts' statements ms a question, p50": round(statistics.median(
                             x * 1000 for n, r in runs if n == name for x in r["counting"]), 2)}
    figures["ratio_p50 (this / before)"] = round(figures["this"]["p50_ms"] / figures["before"]["p50_ms"], 3)
    figures["ratio_mean (this / before)"] = round(figures["this"]["mean_ms"] / figures["before"]["mean_ms"], 3)
    pairs = [(a, b) for qa, qb in zip(runs[0][1]["found"], runs[1][1]["found"]) for a, b in zip(qa, qb)]
    figures["calls with the same ids and scores"] = f"{sum(a == b for a, b in pairs)} of {len(pairs)}"
    scores = [(dict(a), dict(b)) for a, b in pairs]
    figures["shared hits with a different score"] = sum(a[i] != b[i] for a, b in scores for i in set(a) & set(b))
    figures["exact (every matching row ranked) ms a question, p50"] = round(
        statistics.median(exact["spent"]) * 1000, 1)
    report(f"postgres_text_{args.data.name}", figures)


if __name__ == "__main__":
    main()
