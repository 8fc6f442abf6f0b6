"""A listing in recorded order on PostgreSQL (schema 18, store/pg_recorded.py), this tree against another source tree
(``--before-src``, main) in the same run, on the same store.

One schema holds ``--memories`` memories stored as ``batch_store`` lands them (``--batch`` nodes a write, each write
its own time: ties go by id). Each round runs one process per code, alternating which goes first, and each process
times, after a first call: a page (``find_nodes(namespace, kind, order="recorded", limit=--page)``), the same page
newest first, and the whole listing, ``--runs`` times each; a code's figure is the median over rounds of its
per-round medians, the ratio this / before per round (its range) and overall. The figure of the issue: the whole
listing 44.0 ms before schema 18 and 83.1 ms at 18 (session 20, docs/POSTGRES_SCALE.md's small columns).

Run: nice -n 5 .venv/bin/python benchmarks/postgres_recorded_order.py --before-src /work/wt/before/src [--memories
20000] [--rounds 6]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree, report  # noqa: E402

NAMESPACE = "memory:bench"
TARGET_MS = 44.0  # the whole listing before schema 18 (session 20)
AT_18_MS = 83.1  # and at 18


def build(url: str, memories: int, batch: int) -> None:
    from datetime import datetime, timedelta, timezone

    from agentcontext.model import Node
    from agentcontext.store.postgres import PostgresStore

    store = PostgresStore(url, prewarm=False, warm_up=False)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for b in range(0, memories, batch):
        at = (start + timedelta(seconds=37 * b + 0.001 * b)).isoformat(timespec="microseconds")
        store.put_nodes([Node(id=f"mem_{(b + i) * 7919 % memories:08d}", kind="memory", namespace=NAMESPACE,
                              title="Nate" if i % 2 else "Joanna", content=f"turn {b + i}: about the sea and the "
                              "weather, and a trip we made last spring to see the old harbour")
                         for i in range(min(batch, memories - b))], at=at)
    store._exec("VACUUM ANALYZE nodes")
    store.close()


def measure(url: str, page: int, runs: int) -> dict[str, Any]:
    """In this process (the code on its path): each listing's median ms and the ids of its first page."""
    from agentcontext.store.postgres import PostgresStore

    store = PostgresStore(url, prewarm=False, warm_up=False)
    calls = {"page": lambda: store.find_nodes(namespace=NAMESPACE, kind="memory", order="recorded", limit=page),
             "page_desc": lambda: store.find_nodes(namespace=NAMESPACE, kind="memory", order="recorded_desc",
                                                   limit=page),
             "whole": lambda: store.find_nodes(namespace=NAMESPACE, kind="memory", order="recorded")}
    out: dict[str, Any] = {}
    for name, call in calls.items():
        first = call()
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            call()
            times.append((time.perf_counter() - t) * 1000)
        out[name] = statistics.median(times)
        out[f"{name}_ids"] = [(n.id, n.recorded_at) for n in first[:page]]
    store.close()
    return out


def run_code(src: str, url: str, page: int, runs: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, __file__, "--measure", url, "--page", str(page), "--runs", str(runs)],
                          capture_output=True, text=True, env=env, timeout=600, cwd=str(ROOT))
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before-src", help="the other source tree (main's src)")
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.page, args.runs)))
        return
    if not args.before_src:
        parser.error("--before-src is required")
    from tests.pg_server import PgServer

    server = PgServer().start()
    try:
        url = server.url("recorded_order")
        build(url, args.memories, args.batch)
        mine, before = str(ROOT / "src"), str(before_tree(args.before_src))
        rounds = []
        for r in range(args.rounds):
            order = [("this", mine), ("before", before)] if r % 2 == 0 else [("before", before), ("this", mine)]
            got = {name: run_code(src, url, args.page, args.runs) for name, src in order}
            assert all(got["this"][f"{k}_ids"] == got["before"][f"{k}_ids"] for k in ("page", "page_desc", "whole"))
            rounds.append({name: {k: v for k, v in res.items() if not k.endswith("_ids")} for name, res in got.items()})
            print(f"round {r + 1}: " + ", ".join(f"{k} {rounds[-1]['this'][k]:.1f} / {rounds[-1]['before'][k]:.1f} ms"
                                                for k in ("page", "page_desc", "whole")), flush=True)
    finally:
        server.stop()
    figures: dict[str, Any] = {"memories": args.memories, "batch": args.batch, "page": args.page, "runs": args.runs,
                               "rounds": args.rounds, "before_src": before, "load": os.getloadavg(),
                               "same_order": True, "target_whole_ms": TARGET_MS, "at_18_whole_ms": AT_18_MS}
    for k in ("page", "page_desc", "whole"):
        this = [x["this"][k] for x in rounds]
        then = [x["before"][k] for x in rounds]
        ratios = [a / b for a, b in zip(this, then)]
        figures[k] = {"this_ms": statistics.median(this), "before_ms": statistics.median(then),
                      "ratio": statistics.median(this) / statistics.median(then),
                      "ratio_range": [min(ratios), max(ratios)]}
        print(f"{k}: {figures[k]['this_ms']:.1f} ms against {figures[k]['before_ms']:.1f} ms before "
              f"({figures[k]['ratio']:.3f}x, rounds {min(ratios):.3f}-{max(ratios):.3f})"
              + (f"; the issue: {AT_18_MS} ms at 18, {TARGET_MS} ms before it" if k == "whole" else ""))
    report(f"postgres_recorded_order_{args.memories}_s21", figures, quiet=True)


if __name__ == "__main__":
    main()
