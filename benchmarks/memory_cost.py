"""Issue 29's cost targets, one run: one ``store()`` with its embedding (p50, target <= 12 ms without a reranker;
benchmarks/writes.py ``single_stores``, whose figure the issue quotes: 3.95 ms) and ``retrieve`` at 10,000 memories
(p50, target <= 50 ms without a reranker), memory search as shipped beside the same search without the answer stage
(``FusionWeights(answer=0)``, memory/answers.py: main before issue 29), the two interleaved query by query on one
store so a busy machine slows both alike.

Run: nice -n 10 .venv/bin/python benchmarks/memory_cost.py [--stores 200] [--queries 60] [--repeats 3]
The retrieve store: 10,000 facts with supplied vectors (benchmarks/memory.py ``facts``), distinct queries, each
embedded in the measured call. Each figure is the median over ``--repeats`` runs (each run's printed too).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import OBJECTS, PLACES, RELATIONS, facts, fresh, unit_vectors  # noqa: E402
from writes import single_stores  # noqa: E402

STORE_TARGET_MS, RETRIEVE_TARGET_MS = 12.0, 50.0


def retrieves(folder: Path, n: int, queries: int) -> dict[str, float]:
    """p50 ms of ``retrieve`` (k 10) at ``n`` memories, shipped and without the answer stage, interleaved."""
    mem = fresh(folder, "retrieve")
    for start in range(0, n, 20000):
        m = min(20000, n - start)
        mem.batch_store([{"content": t, "vector": v} for t, v in zip(facts(m, 100 + start), unit_vectors(m, start))])
    mem.retrieve("warm up the index", max_results=5)
    shipped, before = mem.weights, replace(mem.weights, answer=0.0)
    lat: dict[str, list[float]] = {"shipped": [], "before": []}
    for i in range(queries):
        q = (f"who {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 7) % len(OBJECTS)]} "
             f"near {PLACES[(i * 3) % len(PLACES)]}")
        for name, weights in (("shipped", shipped), ("before", before))[:: 1 if i % 2 else -1]:
            mem.weights = weights
            t = time.perf_counter()
            mem.retrieve(f"{q} ({name})", max_results=10)  # distinct: the query embedding is part of each call
            lat[name].append((time.perf_counter() - t) * 1000)
    mem.workspace.close()
    return {name: statistics.median(v) for name, v in lat.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    stores, embeds, shipped, before = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            folder = Path(tmp) / f"run{r}"
            folder.mkdir()
            single = single_stores(folder, args.stores)
            stores.append(single["ours"]["p50_ms"])
            embeds.append(single["embedding_alone"]["p50_ms"])
            got = retrieves(folder, 10000, args.queries)
            shipped.append(got["shipped"])
            before.append(got["before"])
            print(f"run {r + 1}: store() p50 {stores[-1]:.2f} ms (its embedding alone {embeds[-1]:.2f} ms); retrieve "
                  f"p50 at 10,000 {shipped[-1]:.1f} ms (without the answer stage {before[-1]:.1f} ms)", flush=True)
    s, q, b = statistics.median(stores), statistics.median(shipped), statistics.median(before)
    print(f"store() with embedding p50 {s:.2f} ms (runs {min(stores):.2f}-{max(stores):.2f}; embedding alone "
          f"{statistics.median(embeds):.2f} ms; target <= {STORE_TARGET_MS:.0f} ms: "
          f"{'met' if s <= STORE_TARGET_MS else 'missed'})")
    print(f"retrieve p50 at 10,000 memories {q:.1f} ms (runs {min(shipped):.1f}-{max(shipped):.1f}; without the "
          f"answer stage {b:.1f} ms, ratio {q / b:.2f}; target <= {RETRIEVE_TARGET_MS:.0f} ms: "
          f"{'met' if q <= RETRIEVE_TARGET_MS else 'missed'})")
    print(f"figures on a shared 2-core machine (load average {np.round(os.getloadavg(), 1).tolist()})")


if __name__ == "__main__":
    main()
