"""Node2Vec on a 10,000-node graph (issue 11 s4): the vectorised walks and skip-gram against the implementation
they replaced (pure-Python walks, np.add.at updates: benchmarks/_node2vec_before.py), in the same run.

Usage: .venv/bin/python benchmarks/node2vec.py [--nodes 10000] [--runs 3] [--baseline-share 0.1]

The graph: ``nodes`` nodes in communities of 100, each node with about 8 edges inside its community and one
outside (a planted partition), so the vectors can be checked as well as timed: ``same community@10`` is the
share of a node's 10 structurally most similar nodes (cosine) that are in its community, over 300 sampled
nodes (chance: 0.01). Parameters: the defaults (32 dimensions, 10 walks of 20 nodes from every node, window 4,
5 negatives, 3 epochs) with q = 0.5, so the walks are biased (``--uniform``: p = q = 1 is timed too).

The baseline is too slow to run whole on a shared machine: its walks run whole, its skip-gram on
``baseline-share`` of the walks for one epoch, and the full skip-gram time is estimated as that time scaled by
epochs / share (its cost is linear in the number of (center, context) pairs). The figure says so.
Also timed once: ``ContextGraph.node2vec()`` end to end on an in-memory SQLite graph (CSR build included).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _node2vec_before as before  # noqa: E402
from _util import report  # noqa: E402

from agentcontext import ContextGraph  # noqa: E402
from agentcontext.engine import node2vec as after  # noqa: E402

COMMUNITY = 100


def planted(n: int, seed: int = 7) -> tuple[list[np.ndarray], np.ndarray, list[tuple[int, int]]]:
    """Sorted undirected neighbour lists, each node's community, and the edge list."""
    rng = np.random.default_rng(seed)
    label = np.arange(n) // COMMUNITY
    inside_a = np.repeat(np.arange(n), 4)
    inside_b = label[inside_a] * COMMUNITY + rng.integers(0, COMMUNITY, inside_a.size)
    inside_b = np.minimum(inside_b, n - 1)
    outside_a = np.arange(n)
    outside_b = rng.integers(0, n, n)
    a = np.concatenate([inside_a, outside_a])
    b = np.concatenate([inside_b, outside_b])
    keep = a != b
    pairs = np.unique(np.sort(np.stack([a[keep], b[keep]], axis=1), axis=1), axis=0)
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for u, v in pairs.tolist():
        nbrs[u].add(v)
        nbrs[v].add(u)
    return [np.array(sorted(s), dtype=np.int64) for s in nbrs], label, [tuple(p) for p in pairs.tolist()]


def same_community(vectors: np.ndarray, label: np.ndarray, sample: int = 300) -> float:
    rng = np.random.default_rng(1)
    picks = rng.choice(len(label), size=min(sample, len(label)), replace=False)
    hits = []
    for i in picks:
        sims = vectors @ vectors[i]
        sims[i] = -np.inf
        top = np.argsort(-sims, kind="stable")[:10]
        hits.append(float(np.mean(label[top] == label[i])))
    return round(float(np.mean(hits)), 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-share", type=float, default=0.1)
    ap.add_argument("--uniform", action="store_true", help="Also time p = q = 1 (unbiased walks).")
    args = ap.parse_args()
    nbrs, label, edges = planted(args.nodes)
    params = after.Node2VecParams(q=0.5)
    print(f"{args.nodes} nodes, {len(edges)} edges; params {params}", flush=True)

    times, uniform_times, walk_times = [], [], []
    vectors = None
    for run in range(args.runs):
        t = time.perf_counter()
        walked = after.walks(nbrs, params, np.random.default_rng(params.seed))
        walk_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        vectors = after.node2vec(nbrs, params)
        times.append(time.perf_counter() - t)
        if args.uniform:
            t = time.perf_counter()
            after.node2vec(nbrs, after.Node2VecParams())
            uniform_times.append(time.perf_counter() - t)
        print(f"run {run + 1}: node2vec {times[-1]:.1f} s (walks {walk_times[-1]:.2f} s)"
              + (f", p=q=1 {uniform_times[-1]:.1f} s" if uniform_times else ""), flush=True)
    again = after.node2vec(nbrs, params)
    deterministic = bool(np.array_equal(again, vectors))
    quality = same_community(vectors, label)
    del walked

    old = before.Node2VecParams(q=0.5)
    rng = np.random.default_rng(old.seed)
    t = time.perf_counter()
    old_walks = before.walks(nbrs, old, rng)
    old_walk_s = time.perf_counter() - t
    share = max(1, int(len(old_walks) * args.baseline_share))
    part = [old_walks[i] for i in np.random.default_rng(2).choice(len(old_walks), size=share, replace=False)]
    one_epoch = before.Node2VecParams(q=0.5, epochs=1)
    t = time.perf_counter()
    before.skipgram(part, args.nodes, one_epoch, np.random.default_rng(3))
    old_sg_part = time.perf_counter() - t
    old_sg_s = old_sg_part * old.epochs * len(old_walks) / share
    old_total = old_walk_s + old_sg_s
    print(f"baseline: walks {old_walk_s:.1f} s, skip-gram on {share} walks x 1 epoch {old_sg_part:.1f} s "
          f"-> estimated {old_sg_s:.0f} s for all walks x {old.epochs} epochs", flush=True)

    g = ContextGraph()
    g.add_edges([{"source": str(u), "target": str(v)} for u, v in edges])
    t = time.perf_counter()
    through_graph = g.node2vec(q=0.5)
    graph_s = time.perf_counter() - t
    assert len(through_graph) == args.nodes

    med = statistics.median(times)
    figures = {
        "nodes": args.nodes, "edges": len(edges), "params": str(params),
        "node2vec_s": {"median": round(med, 2), "range": [round(min(times), 2), round(max(times), 2)]},
        "walks_s": {"median": round(statistics.median(walk_times), 3),
                    "range": [round(min(walk_times), 3), round(max(walk_times), 3)]},
        "node2vec_uniform_p_q_1_s": {"median": round(statistics.median(uniform_times), 2),
                                     "range": [round(min(uniform_times), 2), round(max(uniform_times), 2)]}
        if uniform_times else None,
        "context_graph_node2vec_s": round(graph_s, 2),
        "deterministic_per_seed": deterministic,
        "same_community_at_10": quality, "chance": round(COMMUNITY / args.nodes, 4),
        "baseline": {"what": "the implementation before (benchmarks/_node2vec_before.py)",
                     "walks_s": round(old_walk_s, 1),
                     "skipgram_s_estimated": round(old_sg_s, 1),
                     "skipgram_measured_on": f"{share} of {len(old_walks)} walks, 1 of {old.epochs} epochs",
                     "total_s_estimated": round(old_total, 1)},
        "speedup_walks": round(old_walk_s / statistics.median(walk_times), 1),
        "speedup_total": round(old_total / med, 2),
    }
    print(f"node2vec on {args.nodes} nodes: {med:.1f} s (median of {args.runs}; walks "
          f"{statistics.median(walk_times):.2f} s) vs baseline {old_total:.0f} s (walks {old_walk_s:.1f} s, skip-gram "
          f"estimated): x{figures['speedup_total']} overall, walks x{figures['speedup_walks']}; same community@10 "
          f"{quality} (chance {COMMUNITY / args.nodes:.2f}); deterministic {deterministic}")
    report("node2vec", figures)


if __name__ == "__main__":
    main()
