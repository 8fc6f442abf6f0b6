"""The seams (issue 27 sections 1 and 4) cost nothing: retrieval, precedents, batch_store and erasure timed on this
checkout's code and on a baseline commit's (default: main, what this branch merges into), in the same run.

Usage: .venv/bin/python benchmarks/seams.py [--baseline REV] [--rounds 3] [--memories 2000] [--decisions 300]

Each round runs both codes in fresh processes, one after the other (alternating which goes first), on the same
in-memory workload: memories stored with supplied vectors (no embedding in the timed write), decisions recorded,
a graph of entities linked to them. Per process: the median of the timed calls (queries repeat, so the query
embedding comes from the workspace's LRU and the figure is the code path, not the model). Printed: the median over
rounds for each code and the ratio this / baseline (< 1 is faster). Taken on a shared 2-core machine: expect noise.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, statistics, sys, time
import numpy as np
from agentcontext import AgentContext, ContextGraph, ErasureCoordinator
memories, decisions = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(7)
graph = ContextGraph(name="kb")  # its own namespace: the baseline commit fails on a larger node search
ctx = AgentContext(knowledge_graph=graph, decision_tracking=True)
dim = ctx.memory.dimension
words = ["cluster", "region", "billing", "refund", "latency", "kubernetes", "europe", "customer", "pricing", "outage"]

def vec():
    v = rng.standard_normal(dim).astype("float32")
    return v / np.linalg.norm(v)

items = [{"content": f"memory {i}: {words[i % 10]} {words[(i * 3) % 10]} note", "vector": vec(),
          "metadata": {"entities": [f"acct-{i % 50}"]}, "conversation_id": f"c{i % 40}",
          "context_vector": vec()} for i in range(memories)]
t = time.perf_counter()
ctx.batch_store(items)
store_s = time.perf_counter() - t
ctx.record_decisions([{"category": "ops", "scenario": f"{words[i % 10]} {words[(i * 7) % 10]} case {i}",
                       "reasoning": "because", "outcome": "approved" if i % 2 else "rejected", "confidence": 0.8,
                       "entities": [f"acct-{i % 50}"]} for i in range(decisions)])
queries = [f"{words[i]} {words[(i + 3) % 10]}" for i in range(10)]

def timed(fn, repeat=3):
    for q in queries:
        fn(q)  # warm: query embeddings, indexes, adjacency
    out = []
    for _ in range(repeat):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            out.append(time.perf_counter() - t)
    return statistics.median(out)

figures = {
    "retrieve_ms": 1000 * timed(lambda q: ctx.retrieve(q, max_results=10)),
    "retrieve_no_graph_ms": 1000 * timed(lambda q: ctx.retrieve(q, max_results=10, use_graph=False)),
    "find_precedents_ms": 1000 * timed(lambda q: ctx.find_precedents(q, limit=5, proximity_weight=0.3,
                                                                       entities=[f"acct-{len(q) % 50}"])),
    "query_decisions_ms": 1000 * timed(lambda q: ctx.query_decisions(q, max_hops=1)),
    "batch_store_s": store_s,
}
erase = []
for i in range(5):
    t = time.perf_counter()
    ErasureCoordinator(graph=graph, memory=ctx.memory, physical="deferred").erase_entity(f"acct-{i}")
    erase.append(time.perf_counter() - t)
figures["erase_entity_ms"] = 1000 * statistics.median(erase)
print(json.dumps(figures))
'''


def baseline_src(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run(src: Path, memories: int, decisions: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "AGENTCONTEXT_HOME": tempfile.mkdtemp(prefix="seams-bench-")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(memories), str(decisions)], env=env, check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--decisions", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_src = baseline_src(args.baseline, Path(tmp))
        runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
        for r in range(args.rounds):
            order = [("this", ROOT / "src"), ("baseline", old_src)]
            for name, src in (order if r % 2 == 0 else order[::-1]):
                runs[name].append(run(src, args.memories, args.decisions))
    print(f"seams benchmark: {args.memories} memories, {args.decisions} decisions, {args.rounds} rounds; "
          f"baseline {args.baseline}")
    print(f"{'figure':24} {'this':>10} {'baseline':>10} {'ratio':>7}   (this runs, baseline runs)")
    for key in runs["this"][0]:
        mine = [x[key] for x in runs["this"]]
        base = [x[key] for x in runs["baseline"]]
        m, b = statistics.median(mine), statistics.median(base)
        print(f"{key:24} {m:10.3f} {b:10.3f} {m / b:7.2f}   ({', '.join(f'{v:.3f}' for v in mine)}; "
              f"{', '.join(f'{v:.3f}' for v in base)})")


if __name__ == "__main__":
    main()
