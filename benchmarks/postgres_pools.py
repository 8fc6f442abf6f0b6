"""The candidate pools of a large namespace's retrieve on PostgreSQL (issue 23 s3, memory/server_search.py
``LARGE_DENSE_POOL``, ``LARGE_TEXT_POOL``, ``LARGE_EXPAND``): each setting asked the same LoCoMo questions in one
client process on the kept ``postgres_scale.py`` store, against the pools of the code before (160 nearest, 300 text
hits, every seed a candidate): the share of questions whose top 10 is the same (order too), the mean top-10 overlap,
the labelled hit@10 / precision@10 (``postgres_scale.labelled``) and p50 / p95 of ``retrieve``. The settings run in
rounds (each round every setting in turn, a fifth of the questions), so a drift of the machine's load falls on all.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_pools.py --data DIR [--memories 200000] [--queries 200]
[--settings 160,300,none 160,300,120 ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import p95, report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus, labelled  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.memory import AgentMemory, server_search  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402

BEFORE = (160, 300, None)  # the pools of the code before (44dc6e9)


def parse(setting: str) -> tuple[int, int, int | None]:
    dense, text, expand = setting.split(",")
    return int(dense), int(text), None if expand.lower() == "none" else int(expand)


def use(setting: tuple[int, int, int | None]) -> None:
    server_search.LARGE_DENSE_POOL, server_search.LARGE_TEXT_POOL, server_search.LARGE_EXPAND = setting


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a kept postgres_scale.py store")
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--settings", nargs="+", default=["160,300,none", "160,300,120", "160,300,80",
                                                          "100,150,none", "100,150,80", "60,100,60"])
    args = parser.parse_args()
    settings = list(dict.fromkeys([BEFORE, *map(parse, args.settings)]))
    _, _, questions, _ = base_corpus(args.data)
    asked = questions[1: args.queries + 1]
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    tops: dict[Any, dict[str, list[str]]] = {s: {} for s in settings}
    lat: dict[Any, list[float]] = {s: [] for s in settings}
    try:
        ws = Workspace(open_store(server.url("scale")))
        memory = AgentMemory(workspace=ws, namespace="scale", max_memory_size=None)
        use(BEFORE)
        for q in questions[-20:]:  # warm the server's buffers and the client (not timed)
            memory.retrieve(q, max_results=10)
        for r in range(args.rounds):
            part = asked[r::args.rounds]
            for s in (settings if r % 2 == 0 else settings[::-1]):
                use(s)
                for q in part:
                    t = time.perf_counter()
                    found = memory.retrieve(q, max_results=10)
                    lat[s].append((time.perf_counter() - t) * 1000)
                    tops[s][q] = [x["id"] for x in found]
        ws.close()
    finally:
        server.stop()
    ref = tops[BEFORE]
    figures: dict[str, Any] = {"memories": args.memories, "questions": len(asked),
                               "note": "busy shared 2-core machine; one client process, settings in alternating rounds"}
    for s in settings:
        name = f"dense {s[0]}, text {s[1]}, expand {s[2]}"
        figures[name] = {
            "retrieve_p50_ms": round(statistics.median(lat[s]), 1), "retrieve_p95_ms": round(p95(lat[s]), 1),
            "same_top10_as_before": round(float(np.mean([tops[s][q] == ref[q] for q in asked])), 4),
            "top10_overlap_with_before": round(float(np.mean([len(set(tops[s][q]) & set(ref[q])) / 10
                                                              for q in asked])), 4),
            "labelled": labelled(args.data, args.memories, tops[s])}
    report(f"postgres_pools_{args.memories}", figures)


if __name__ == "__main__":
    main()
