"""What the reranker (engine/rerank.py) costs: one store() and one retrieve at 10,000 memories, with it and without,
in the same run (issue 29: retrieve p50 at 10k <= 250 ms with it, <= 50 ms without; store p50 <= 12 ms without).

    nice -n 10 .venv/bin/python benchmarks/rerank_cost.py [--runs 21] [--memories 10000]

The 10,000 memories get supplied vectors (random unit vectors, as benchmarks/memory.py: the search's cost does not
depend on them) for the default model and, under the reranking model's name, for their stored text, as ``store()``
with the reranker on caches them (so the retrieve measures the steady state: the query embedded by both models, the
first stage, the candidates' cached vectors read and blended). store() p50 is measured on distinct texts, each
embedded by the default model (and, with the reranker on, by the reranking model too). Medians of ``--runs`` calls;
taken on a shared 2-core machine: rerun for ranges. Saves benchmarks/results/rerank_cost.json.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory, VectorStore
from agentcontext.engine import rerank as reranking
from agentcontext.memory.records import memory_text
from agentcontext.model import content_hash

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from memory import facts  # noqa: E402


def unit(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def store_p50(folder: Path, rerank: bool, runs: int) -> float:
    mem = AgentMemory(VectorStore(home=folder), max_memory_size=10**7, rerank=rerank)
    lat = []
    for text in facts(runs + 1, 21 + rerank):
        t = time.perf_counter()
        mem.store(text)
        lat.append((time.perf_counter() - t) * 1000)
    mem.workspace.close()
    return statistics.median(lat[1:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--memories", type=int, default=10_000)
    args = ap.parse_args()
    ranker = reranking.reranker()
    out: dict = {"memories": args.memories, "reranker": ranker.name, "pool": reranking.POOL,
                 "weight": reranking.WEIGHT}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        out["store_p50_ms"] = round(store_p50(folder / "s0", False, args.runs), 2)
        out["store_p50_ms_with_reranker"] = round(store_p50(folder / "s1", True, args.runs), 2)
        mem = AgentMemory(VectorStore(home=folder / "big"), max_memory_size=10**7, rerank=False)
        texts = facts(args.memories, 11)
        mem.batch_store([{"content": t, "vector": v} for t, v in zip(texts, unit(len(texts), 384, 5))])
        mem.db.put_vectors({content_hash(memory_text("", t)): v for t, v in
                            zip(texts, unit(len(texts), ranker.dimension, 6))}, ranker.name)
        ranked = AgentMemory(workspace=mem.workspace, max_memory_size=10**7, rerank=True)
        for m in (mem, ranked):
            m.retrieve("warm up the index", max_results=10)
        lat: dict[str, list[float]] = {"without": [], "with": []}
        for i in range(args.runs):  # distinct queries, alternating: both see the same load
            for key, m in (("without", mem), ("with", ranked)):
                q = f"who painted the golden chair near the market on day {i + 3} ({key})?"
                t = time.perf_counter()
                m.retrieve(q, max_results=10)
                lat[key].append((time.perf_counter() - t) * 1000)
        mem.workspace.close()
    out["retrieve_p50_ms"] = round(statistics.median(lat["without"]), 2)
    out["retrieve_p50_ms_with_reranker"] = round(statistics.median(lat["with"]), 2)
    out["ratio_with_over_without"] = round(out["retrieve_p50_ms_with_reranker"] / out["retrieve_p50_ms"], 2)
    for key, value in out.items():
        print(f"{key}: {value}")
    report("rerank_cost", out, quiet=True)


if __name__ == "__main__":
    main()
