"""Vectors keyed by the hash's bytes (issue 23 s2, migration 10, ``store/pg_hash.py``): bytes a memory, recall@10 and
``retrieve`` against the code before, in one run. Two kept clusters of ``benchmarks/postgres_scale.py``'s store:
``--before-data`` at schema 9 (served to ``--before-src``, a source tree of the code before: it cannot read schema 10)
and ``--data`` migrated to schema 10 (served to this code); both servers run side by side. Prints each store's bytes a
memory (table by table, as ``postgres_sizes.py``), recall@10 of one statement walking each HNSW index against exact
float32 search (``postgres_sizes.recall_index``: the same statement on both, its join through ``actx_hex`` on schema
10), then ``--rounds`` rounds of a new client process of each code asking the same questions (the order alternating):
p50 and p95 per run, their ranges, the ratio of the medians, the stages, and how much of the top 10 the two share.
The same comparison for a later step (``--name``): migration 13, the nodes' hashes as bytes, is measured with
``--before-data`` a copy at schema 11 and ``--data`` migrated (the labels name the schemas each store holds).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_hash_bytes.py --data DIR --before-data DIR --before-src DIR
[--queries 60] [--rounds 4] [--recall 200] [--name postgres_hash_bytes_200000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_q8 import shared, summary  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus, client, stage_medians  # noqa: E402
from benchmarks.postgres_sizes import TARGET, exact_top10, measure, recall_index, side_by_side  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the cluster at schema 10 (this code)")
    parser.add_argument("--before-data", type=Path, required=True, help="the same store at schema 9")
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--recall", type=int, default=200, help="questions for recall@10 (0: skip)")
    parser.add_argument("--name", default="postgres_hash_bytes_200000", help="the results file's name")
    args = parser.parse_args()
    import psycopg

    this_server = PgServer(root=args.data / "cluster", options=SERVER).start()
    before_server = PgServer(root=args.before_data / "cluster", options=SERVER).start()
    try:
        figures: dict[str, Any] = {"note": "busy shared 2-core machine: ranges of alternating runs, medians",
                                   "load average before": [round(x, 2) for x in os.getloadavg()]}
        sizes, schema = {}, {}
        for name, server in (("before", before_server), ("this", this_server)):
            with psycopg.connect(server.url(None), autocommit=True) as db:
                sizes[name] = measure(db, "scale")
                schema[name] = f"schema {db.execute('SELECT max(version) FROM scale.schema_migrations').fetchone()[0]}"
        figures["schemas (before / this)"] = [schema["before"], schema["this"]]
        figures["bytes per memory (target %d)" % TARGET] = side_by_side(sizes["before"], sizes["this"])
        _, _, questions, qvectors = base_corpus(args.data)
        if args.recall:
            queries = np.asarray(qvectors[1: args.recall + 1], dtype=np.float32)
            exact = exact_top10(args.data, queries)
            got = {name: recall_index(server.url("scale"), queries, exact)
                   for name, server in (("before", before_server), ("this", this_server))}
            figures["recall@10 against exact float32 search (target 0.98), one statement over the HNSW index"] = {
                "questions": len(queries), schema["before"]: round(got["before"][0], 4),
                schema["this"]: round(got["this"][0], 4),
                "median ms (before / this)": [round(got["before"][1], 1), round(got["this"][1], 1)]}
        asked = questions[: args.queries + 1]
        src = before_tree(args.before_src)
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "this": []}
        for i in range(args.rounds):
            order = ("before", "this") if i % 2 == 0 else ("this", "before")
            for name in order:
                if name == "before":
                    runs[name].append(client(before_server.url("scale"), "server", asked, src))
                else:
                    runs[name].append(client(this_server.url("scale"), "server", asked))
        if args.rounds:
            before, this = summary(runs["before"]), summary(runs["this"])
            figures[f"retrieve, code before on {schema['before']}"] = before
            figures[f"retrieve, this code on {schema['this']}"] = this
            figures["ratio of p50 medians (this / before)"] = round(this["p50 median ms"] / before["p50 median ms"], 3)
            figures["ratio of p95 medians (this / before)"] = round(this["p95 median ms"] / before["p95 median ms"], 3)
            figures["stages, mean ms (before / this)"] = {
                k: [round(statistics.median(stage_medians([r]).get(k, {}).get("mean_ms", 0.0)
                                            for r in runs[side]), 2) for side in ("before", "this")]
                for k in stage_medians([runs["this"][0]])}
            figures["top 10s"] = shared(runs["before"][0]["top"], runs["this"][0]["top"])
        figures["load average after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        before_server.stop()
        this_server.stop()
    report(args.name, figures)


if __name__ == "__main__":
    main()
