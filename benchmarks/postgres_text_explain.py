"""Where the text stage's statements spend their time at 1,000,000 memories (issue 23 s3, session 18), read-only:
the text searches of the benchmark's questions captured from a process of ``--src``'s code, then each statement run
again (twice: the second warm) under ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)``; printed per kind of statement
(the main search, the scores by id, the counts): server ms a question, the text index's share (the bitmap of every
row holding the words a search finds its rows by) and the heap's (the rows read, up to the cap), the rows found and
heap pages read, and per main search its words, time and rows.
Run: flock /work/locks/1m.lock nice -n 10 .venv/bin/python benchmarks/postgres_text_explain.py --data DIR
--src /work/wt/pgtext4/src [--queries 40]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from benchmarks.postgres_text import RECORD  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

PARTS = r"""
import json, pickle, statistics, sys
from agentcontext.store import open_store
url, path = sys.argv[1], sys.argv[2]
calls = pickle.load(open(path, "rb"))
store = open_store(url)
got, read = [], store._read
def kind(sql):
    if "WITH pre AS" in sql: return "scores by id" if "n.id = ANY" in sql else "main search"
    return "counts" if "text_counts" in sql else None
def spy(sql, params=()):
    got.append((sql, params)); return read(sql, params)
store._read = spy
for question in calls:
    for query, kw in question:
        store.text_search(query, **kw)
store._read = read
got = [(k, sql, params) for sql, params in got if (k := kind(sql))]
def walk(node, out):
    out.append(node)
    for c in node.get("Plans", []): walk(c, out)
    return out
rounds = []
for r in range(2):
    rows = []
    for k, sql, params in got:
        plan = read("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)[0][0]
        plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]
        nodes = walk(plan["Plan"], [])
        heap = [n for n in nodes if n["Node Type"] == "Bitmap Heap Scan"]
        gin = [n for n in nodes if n["Node Type"] == "Bitmap Index Scan" and n.get("Index Name") == "nodes_tsv"]
        gin_ms = sum(n["Actual Total Time"] * n["Actual Loops"] for n in gin)
        heap_ms = sum(n["Actual Total Time"] * n["Actual Loops"] for n in heap) - gin_ms
        top = plan["Plan"]
        rows.append({"kind": k, "ms": round(plan["Execution Time"] + plan["Planning Time"], 2),
                     "planning_ms": round(plan["Planning Time"], 2),
                     "text index ms": round(gin_ms, 2), "heap ms": round(heap_ms, 2),
                     "text index rows": sum(n["Actual Rows"] * n["Actual Loops"] for n in gin),
                     "heap_rows": sum(n["Actual Rows"] * n["Actual Loops"] for n in heap),
                     "heap_blocks": sum(n.get("Exact Heap Blocks", 0) + n.get("Lossy Heap Blocks", 0) for n in heap),
                     "shared_hit": top.get("Shared Hit Blocks", 0), "shared_read": top.get("Shared Read Blocks", 0),
                     "query": params[0] if k != "counts" else None, "by words": "(n.id || '')" in sql,
                     "scans": sorted({n["Node Type"] + " " + n.get("Index Name", "") for n in nodes
                                      if n["Node Type"] in ("Index Scan", "Bitmap Index Scan", "Seq Scan")}),
                     "limit": sql.rsplit("LIMIT", 1)[-1].strip()[:12]})
    rounds.append(rows)
n = len(calls)
out = {"questions": n, "statements": len(got)}
for r, rows in enumerate(rounds):
    for k in ("main search", "scores by id", "counts"):
        sel = [x for x in rows if x["kind"] == k]
        if not sel: continue
        out[f"round {r + 1}: {k}"] = {
            "statements": len(sel), "server ms a question": round(sum(x["ms"] for x in sel) / n, 2),
            "ms p50 a statement": round(statistics.median(x["ms"] for x in sel), 2),
            "text index ms a question (the bitmap of every row holding the words found by)": round(
                sum(x["text index ms"] for x in sel) / n, 2),
            "heap ms a question (the rows read, up to the cap)": round(sum(x["heap ms"] for x in sel) / n, 2),
            "text index rows p50 / max": [statistics.median(x["text index rows"] for x in sel),
                                          max(x["text index rows"] for x in sel)],
            "heap rows p50 / max": [statistics.median(x["heap_rows"] for x in sel), max(x["heap_rows"] for x in sel)],
            "heap blocks p50 / max": [statistics.median(x["heap_blocks"] for x in sel),
                                      max(x["heap_blocks"] for x in sel)],
            "shared read (not in buffers) total": sum(x["shared_read"] for x in sel)}
out["scores by id (round 2)"] = [{k: x[k] for k in ("ms", "by words", "scans", "query")} for x in rounds[1]
                                 if x["kind"] == "scores by id"]
shown = ("ms", "text index ms", "text index rows", "heap ms", "heap_rows", "heap_blocks", "shared_read", "query",
         "limit")
out["main searches (round 2)"] = [{k: x[k] for k in shown} for x in rounds[1] if x["kind"] == "main search"]
print(json.dumps(out, indent=1))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a kept postgres_scale.py cluster")
    parser.add_argument("--src", type=Path, required=True, help="the code to capture with (its schema's: read-only)")
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    _, _, questions, _ = base_corpus(args.data)
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        url = server.url("scale")
        env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
        calls = Path(f"/tmp/postgres_text_explain_{os.getpid()}.pkl")
        try:
            subprocess.run([sys.executable, "-c", RECORD, url, "\n".join(questions[1: args.queries + 1]), str(calls)],
                           env=env, check=True)
            load = [round(x, 2) for x in os.getloadavg()]
            done = subprocess.run([sys.executable, "-c", PARTS, url, str(calls)], env=env, capture_output=True,
                                  text=True)
            if done.returncode:
                raise RuntimeError(done.stderr[-3000:])
            figures = {"data": str(args.data), "src": str(args.src), "load_average before / after": [
                load, [round(x, 2) for x in os.getloadavg()]], "note": "busy shared 2-core machine",
                **json.loads(done.stdout)}
            report(f"postgres_text_explain_{args.data.name}", figures)
        finally:
            calls.unlink(missing_ok=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
