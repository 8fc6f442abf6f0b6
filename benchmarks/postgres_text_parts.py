"""Where the text stage's server time goes (issue 23 s3), read-only: the text statements the benchmark's questions
make, captured from a process of ``--src``'s code (a shared cluster at an older schema: the code of that schema, so
nothing is migrated), then each run again under ``EXPLAIN (ANALYZE, TIMING OFF)``: server ms a question per kind
(the lexeme counts, the main search, the candidates' scores by id), as they are and with BM25's counts read once
(``OFFSET 0``, pg_text.bm25_sql since session 16; the same rows checked), how many GIN scans of the text index a
question makes and what one scan of its pending list costs (a word no row holds: the list's pages and the tree's
path), so the pending list's share of the stage is scans x cost.
Run: flock /work/locks/1m.lock nice -n 10 .venv/bin/python benchmarks/postgres_text_parts.py --data DIR
--src /work/wt/before/src [--queries 40]
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

PARTS = """
import collections, json, pickle, re, statistics, sys
from agentcontext.store import open_store
url, path = sys.argv[1], sys.argv[2]
calls = pickle.load(open(path, "rb"))
store = open_store(url)
got, read = [], store._read
def kind(sql):
    if "WITH s AS MATERIALIZED" in sql: return "lexeme counts"
    if "WITH pre AS" in sql: return "scores by id" if "n.id = ANY" in sql else "main search"
    return None
def spy(sql, params=()):
    got.append((sql, params)); return read(sql, params)
store._read = spy
for question in calls:
    for query, kw in question:
        store.text_search(query, **kw)
store._read = read
got = [(k, sql, params) for sql, params in got if (k := kind(sql))]
def once(sql):
    return sql.replace("FROM pre CROSS JOIN q) f ORDER BY", "FROM pre CROSS JOIN q OFFSET 0) f ORDER BY")
def server_ms(sql, params, buffers=False):
    options = "ANALYZE, TIMING OFF" + (", BUFFERS" if buffers else "")
    plan = "\\n".join(r[0] for r in read(f"EXPLAIN ({options}) {sql}", params))
    return sum(float(x) for x in re.findall(r"(?:Planning|Execution) Time: ([\\d.]+)", plan)), plan
n, scans, same = len(calls), collections.Counter(), 0
for k, sql, params in got:
    plan = server_ms(sql, params, True)[1]
    scans[k] += sum(int(x) for x in re.findall(r"Bitmap Index Scan on nodes_tsv.*?loops=(\\d+)", plan))
    same += read(sql, params) == read(once(sql), params)
empty = statistics.median(server_ms("SELECT count(*) FROM nodes WHERE tsv @@ 'zzqqxx'::tsquery", ())[0]
                          for _ in range(30))
plan = server_ms("SELECT count(*) FROM nodes WHERE tsv @@ 'zzqqxx'::tsquery", (), True)[1]
pages = int(re.search(r"Bitmap Index Scan on nodes_tsv.*?shared (?:hit|read)=(\\d+)", plan, re.S).group(1))
rounds = []
for _ in range(3):
    spent = collections.defaultdict(float)
    for k, sql, params in got:
        spent[f"{k} (as is)"] += server_ms(sql, params)[0]
        if k != "lexeme counts":
            spent[f"{k} (counts read once)"] += server_ms(once(sql), params)[0]
    rounds.append({k: round(v / n, 2) for k, v in sorted(spent.items())})
print(json.dumps({"questions": n, "statements": len(got),
                  "same rows with the counts read once": f"{same} of {len(got)}",
                  "GIN scans of the text index a question": {k: round(v / n, 2) for k, v in scans.items()},
                  "pages a scan of a word no row holds reads (pending list + tree path)": pages,
                  "server ms of that scan, p50": round(empty, 3),
                  "server ms a question (three rounds)": rounds}, indent=1))
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
        calls = Path(f"/tmp/postgres_text_parts_{os.getpid()}.pkl")
        try:
            subprocess.run([sys.executable, "-c", RECORD, url, "\n".join(questions[1: args.queries + 1]), str(calls)],
                           env=env, check=True)
            load = [round(x, 2) for x in os.getloadavg()]
            done = subprocess.run([sys.executable, "-c", PARTS, url, str(calls)], env=env, check=True,
                                  capture_output=True, text=True)
            figures = {"data": str(args.data), "src": str(args.src), "load_average before / after": [
                load, [round(x, 2) for x in os.getloadavg()]], "note": "busy shared 2-core machine",
                **json.loads(done.stdout)}
            report(f"postgres_text_parts_{args.data.name}", figures)
        finally:
            calls.unlink(missing_ok=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
