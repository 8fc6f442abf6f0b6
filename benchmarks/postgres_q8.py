"""Int8 context vectors (issue 23 s2, migration 9, ``store/pg_q8.py``): bytes a memory and ``retrieve`` against the
code before, in one run. Two kept clusters of ``benchmarks/postgres_scale.py``'s store: ``--before-data`` at schema
8 (served to ``--before-src``, a source tree of the code before) and ``--data`` migrated to schema 9 (served to this
code); both servers run side by side. Prints each store's bytes a memory (table by table, as
``postgres_sizes.py``), then ``--rounds`` rounds of a new client process of each code asking the same questions
(the order alternating: before/this, this/before, ...): p50 and p95 per run, their ranges and the ratio of the
medians, the similarities stage (where the int8 rows are scored), and how much of the top 10 the two share.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_q8.py --data DIR --before-data DIR --before-src DIR
[--queries 60] [--rounds 3] [--labelled 200]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus, client, labelled, p95, stage_medians  # noqa: E402
from benchmarks.postgres_sizes import TARGET, measure, side_by_side  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    p50s = [statistics.median(r["latencies_s"]) * 1000 for r in runs]
    p95s = [p95([x * 1000 for x in r["latencies_s"]]) for r in runs]
    sims = [stage_medians([r]).get("similarities", {}).get("mean_ms", 0.0) for r in runs]
    return {"p50_ms per run": [round(x, 1) for x in p50s], "p95_ms per run": [round(x, 1) for x in p95s],
            "p50 median ms": round(statistics.median(p50s), 1), "p95 median ms": round(statistics.median(p95s), 1),
            "similarities stage, mean ms per run": [round(x, 2) for x in sims]}


def shared(before: dict[str, list[str]], this: dict[str, list[str]]) -> dict[str, float]:
    return {"questions with the same top 10 (order too)": round(statistics.mean(before[q] == this[q] for q in before),
                                                                 4),
            "top 10 shared (mean share)": round(statistics.mean(len(set(before[q]) & set(this[q])) / max(
                len(before[q]), 1) for q in before), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the cluster at schema 9 (this code)")
    parser.add_argument("--before-data", type=Path, required=True, help="the same store at schema 8")
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--labelled", type=int, default=0, help="then one run of each code over this many questions: "
                        "hit@10 and precision@10 of each ranking (postgres_scale.labelled) and the top 10s shared")
    args = parser.parse_args()
    import psycopg

    this_server = PgServer(root=args.data / "cluster", options=SERVER).start()
    before_server = PgServer(root=args.before_data / "cluster", options=SERVER).start()
    try:
        figures: dict[str, Any] = {"note": "busy shared 2-core machine: ranges of alternating runs, medians",
                                   "load average before": [round(x, 2) for x in os.getloadavg()]}
        sizes = {}
        for name, server in (("before", before_server), ("this", this_server)):
            with psycopg.connect(server.url(None), autocommit=True) as db:
                sizes[name] = measure(db, "scale")
        figures["bytes per memory (target %d)" % TARGET] = side_by_side(sizes["before"], sizes["this"])
        _, _, questions, _ = base_corpus(args.data)
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
            figures["retrieve, code before on schema 8"] = summary(runs["before"])
            figures["retrieve, this code on schema 9"] = summary(runs["this"])
            figures["ratio of p50 medians (this / before)"] = round(
                figures["retrieve, this code on schema 9"]["p50 median ms"] /
                figures["retrieve, code before on schema 8"]["p50 median ms"], 3)
            figures["top 10s"] = shared(runs["before"][0]["top"], runs["this"][0]["top"])
        if args.labelled:
            more = questions[: args.labelled + 1]
            tops_b = client(before_server.url("scale"), "server", more, src)["top"]
            tops_t = client(this_server.url("scale"), "server", more)["top"]
            n = int(json.loads((args.data / "built.json").read_text())["memories"])
            figures["labelled, code before on schema 8"] = labelled(args.before_data, n, tops_b)
            figures["labelled, this code on schema 9"] = labelled(args.data, n, tops_t)
            figures["top 10s of the labelled run"] = shared(tops_b, tops_t)
        figures["load average after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        before_server.stop()
        this_server.stop()
    report("postgres_q8_200000" if args.rounds else "postgres_q8_labelled_200000", figures)


if __name__ == "__main__":
    main()
