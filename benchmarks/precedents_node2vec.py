"""Does Node2Vec help precedent search (issue 11 s4)? A labelled set, structural="links" vs "node2vec" vs "blend".

Usage: .venv/bin/python benchmarks/precedents_node2vec.py [--groups 8] [--per-group 25] [--seeds 3]

The set: ``groups`` clusters of decisions (think: one account team each). Every decision links to two
entities drawn from its group's pool of six, so a group is a community of the graph, but two decisions
of a group rarely share both entities. Scenarios come from one pool of templates for every group, so
meaning alone cannot tell the groups apart. Each decision in turn is the query (its scenario and its two
entities, itself excluded); a hit is a precedent of the same group. Figures: mean precision@5 for the
semantic-only ranking (use_hybrid_search=False), the baseline (structural="links", Jaccard of links, mixed
with the cosine at the fixed structural weight) and node2vec / blend in its place, with and without graph
proximity (proximity_weight=0.3), averaged over ``seeds`` graphs.
The set is synthetic and built so that structure carries the label: it says whether Node2Vec can add
what Jaccard misses, not how much it helps on real decisions.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import report  # noqa: E402

from agentcontext import AgentContext, ContextGraph, VectorStore  # noqa: E402

TEMPLATES = ["Customer asks for a refund after {d} days", "Customer requests a discount on renewal",
             "Escalated complaint about late delivery", "Request to waive the setup fee",
             "Customer wants to extend the trial by {d} days", "Billing dispute over a duplicate charge"]


def build(groups: int, per_group: int, seed: int) -> tuple[AgentContext, list[tuple[str, str, list[str], int]]]:
    rng = random.Random(seed)
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"),
                       knowledge_graph=ContextGraph(node_embeddings=True), decision_tracking=True)
    items = []
    for g in range(groups):
        pool = [f"g{g}_entity{k}" for k in range(6)]
        for _ in range(per_group):
            scenario = rng.choice(TEMPLATES).format(d=rng.randint(10, 90))
            ents = rng.sample(pool, 2)
            items.append((scenario, ents, g))
    ids = ctx.record_decisions([{"category": "support", "scenario": s, "reasoning": "per policy",
                                 "outcome": rng.choice(["approved", "denied"]), "confidence": 0.8, "entities": e}
                                for s, e, _ in items])
    return ctx, [(did, s, e, g) for did, (s, e, g) in zip(ids, items)]


def precision(ctx: AgentContext, rows: list, hybrid: bool, weight: float, structural: str) -> float:
    label = {did: g for did, _, _, g in rows}
    scores = []
    for did, scenario, ents, g in rows:
        found = ctx.decisions.recorder("bench").find_precedents(
            scenario, limit=5, entities=ents, use_hybrid_search=hybrid, proximity_weight=weight,
            structural=structural, exclude=[did])
        scores.append(sum(label.get(d.decision_id) == g for d in found) / 5)
    return statistics.mean(scores)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--per-group", type=int, default=25)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    runs = [("semantic only", False, 0.0, "links"), ("links (baseline)", True, 0.0, "links"),
            ("node2vec", True, 0.0, "node2vec"), ("blend", True, 0.0, "blend"),
            ("links + proximity 0.3", True, 0.3, "links"), ("node2vec + proximity 0.3", True, 0.3, "node2vec")]
    figures: dict[str, list[float]] = {name: [] for name, *_ in runs}
    t = time.perf_counter()
    for seed in range(args.seeds):
        ctx, rows = build(args.groups, args.per_group, seed)
        for name, hybrid, weight, structural in runs:
            figures[name].append(precision(ctx, rows, hybrid, weight, structural))
    chance = 1 / args.groups
    print(f"{args.groups} groups x {args.per_group} decisions, {args.seeds} seeds; precision@5 (chance {chance:.3f})")
    base = statistics.mean(figures["links (baseline)"])
    out = {}
    for name, values in figures.items():
        mean = statistics.mean(values)
        out[name] = {"precision_at_5": round(mean, 4), "range": [round(min(values), 4), round(max(values), 4)],
                     "ratio_to_links_baseline": round(mean / base, 3) if base else None}
        print(f"  {name:26s} {mean:.3f}  (range {min(values):.3f}-{max(values):.3f}; x{mean / base:.2f} of links)")
    print(f"({time.perf_counter() - t:.0f} s)")
    report("precedents_node2vec", {"groups": args.groups, "per_group": args.per_group, "seeds": args.seeds,
                                   "chance": round(chance, 4), "results": out,
                                   "note": "synthetic labelled set where structure carries the label"}, quiet=True)


if __name__ == "__main__":
    main()
