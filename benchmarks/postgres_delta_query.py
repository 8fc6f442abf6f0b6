"""The query cost of the vector delta (store/pg_delta.py, issue 23 s1): ``nearest`` in a large PostgreSQL store with
N new memories in the delta (scored exactly beside the HNSW walk) against the same store once they are folded into
the index, and recall@10 of both against exact search over every vector; the fold's own time (the HNSW inserts the
writes no longer pay) is printed too.

Uses a cluster kept by ``benchmarks/postgres_scale.py`` (``--data``): it ADDS ``--memories`` memories (LoCoMo-like
texts, vectors supplied) to the store's namespace and leaves them there, folded: run it on a copy of the cluster
(``cp -a DIR COPY``). Queries: the LoCoMo dev questions' real embeddings (``locomo-vectors.npz``), each asked
``--rounds`` times in one process (the first round warms the caches and is not counted).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_delta_query.py --data /tmp/copy-of-200k [--memories 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import p95, report  # noqa: E402
from benchmarks.postgres_ingest import corpus, texts  # noqa: E402
from benchmarks.postgres_scale import NAMESPACE, SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402
from agentcontext.memory import AgentMemory  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402

START = 50_000_000  # the new memories' numbers (ids mem_<n>), beyond the built store's


def exact_top(own: np.ndarray, extra: np.ndarray, q: np.ndarray, k: int = 10) -> list[set[int]]:
    """Row numbers of the exact top ``k`` of each query over the store's vectors (``own``, rows 0..n-1) and the new
    ones (``extra``, numbered ``START + j``)."""
    out = []
    for start in range(0, len(own), 100_000):
        scores = q @ np.asarray(own[start: start + 100_000]).T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        out.append((np.take_along_axis(scores, top, axis=1), top + start))
    scores = q @ extra.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    out.append((np.take_along_axis(scores, top, axis=1), top + START))
    best = np.concatenate([s for s, _ in out], axis=1)
    ids = np.concatenate([i for _, i in out], axis=1)
    keep = np.argsort(-best, axis=1)[:, :k]
    return [set(r.tolist()) for r in np.take_along_axis(ids, keep, axis=1)]


def ask(store: Any, q: np.ndarray, rounds: int) -> tuple[list[float], list[list[str]]]:
    times, tops = [], []
    for r in range(rounds + 1):
        for v in q:
            t = time.perf_counter()
            hits = store.nearest(v, MINILM, 10, namespace=NAMESPACE, kind="memory")
            if r:
                times.append(time.perf_counter() - t)
            else:
                tops.append([h[0] for h in hits])
    return times, tops


def recall(tops: list[list[str]], exact: list[set[int]]) -> float:
    return sum(len({int(i.split("_")[1]) for i in got} & want) for got, want in zip(tops, exact)) / (10 * len(tops))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a COPY of a cluster kept by postgres_scale.py")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    built = json.loads((args.data / "built.json").read_text())
    qv = np.load(args.data / "locomo-vectors.npz")["questions"][1: args.queries + 1].astype(np.float32)
    own = np.load(args.data / "own.npy", mmap_mode="r")
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    load_before = os.getloadavg()
    try:
        url = server.url("scale")
        store = open_store(url)
        if store.pending_vectors():
            store.fold()
        base_times, base_tops = ask(store, qv, args.rounds)  # the store as built: nothing in the delta
        ws = Workspace(store)
        ws.embedder.embed(["load the model"])
        items, extra = corpus(3, START, args.memories, texts())
        t = time.perf_counter()
        AgentMemory(workspace=ws, namespace=NAMESPACE, max_memory_size=None).batch_store(items)
        stored_s = time.perf_counter() - t
        pending = store.pending_vectors()
        delta_times, delta_tops = ask(store, qv, args.rounds)
        t = time.perf_counter()
        folded = store.fold()
        fold_s = time.perf_counter() - t
        after_times, after_tops = ask(store, qv, args.rounds)
        store.close()
    finally:
        server.stop()
    exact = exact_top(own, extra, qv)
    ms = lambda xs: round(1000 * statistics.median(xs), 2)  # noqa: E731
    figures = {
        "store memories": built["memories"], "memories added": args.memories, "queries": len(qv),
        "rounds": args.rounds,
        "note": "busy shared 2-core machine (load average before / after below); nearest(k=10, the namespace, "
                "kind memory), the per-query medians and p95 over rounds after a warm-up round",
        "load_average before / after": [[round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]],
        "batch_store s (delta)": round(stored_s, 2), "memories/s": round(args.memories / stored_s, 1),
        "pending after the batch": pending,
        "nearest p50 ms": {"before the batch": ms(base_times), "with the delta": ms(delta_times),
                           "after the fold": ms(after_times)},
        "nearest p95 ms": {"before the batch": round(1000 * p95(base_times), 2),
                           "with the delta": round(1000 * p95(delta_times), 2),
                           "after the fold": round(1000 * p95(after_times), 2)},
        "query cost of the delta (p50 with / after the fold)": round(ms(delta_times) / ms(after_times), 3),
        "recall@10 vs exact": {"with the delta": round(recall(delta_tops, exact), 4),
                               "after the fold": round(recall(after_tops, exact), 4)},
        "same top 10 with the delta and after the fold": sum(a == b for a, b in zip(delta_tops, after_tops)),
        "fold": {**folded, "wall s": round(fold_s, 2), "ms a vector": round(1000 * fold_s / max(1, folded["folded"]),
                                                                             2)},
    }
    report(f"postgres_delta_query_{built['memories']}", figures)


if __name__ == "__main__":
    main()
