"""LoCoMo retrieval benchmark: the full pipeline and its ablations, measured in the same run.

Run: .venv/bin/python benchmarks/locomo.py [FILE] [--only full]
Prints recall@1/5/10 (partial credit) and full-hit rates for each configuration, and the ratio of
the full pipeline's recall@5 to each baseline's. Each configuration embeds the whole split again
(in-memory stores), so a run takes several minutes on a shared 2-core machine.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentcontext.eval_locomo import evaluate
from agentcontext.index.hybrid import FusionWeights

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"
CONFIGS = {
    "bm25": {"weights": FusionWeights(dense=0.0, neighbour=0.0, mention=0.0), "context_turns": False},
    "dense": {"weights": FusionWeights(dense=1.0, neighbour=0.0, mention=0.0), "context_turns": False},
    "hybrid_no_context": {"weights": FusionWeights(neighbour=0.0), "context_turns": False},
    "full": {},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--only", action="append", choices=sorted(CONFIGS))
    args = ap.parse_args()
    results = {}
    for name in args.only or list(CONFIGS):
        r = evaluate(args.file, memory_options=CONFIGS[name])
        results[name] = r
        print(f"{name:18s} recall@1 {r['recall']['1']:.3f}  @5 {r['recall']['5']:.3f}  @10 {r['recall']['10']:.3f}"
              f"   full@5 {r['full_recall']['5']:.3f}  full@10 {r['full_recall']['10']:.3f}  ({r['seconds']} s)",
              flush=True)
    if "full" in results:
        full5 = results["full"]["recall"]["5"]
        for name, r in results.items():
            if name != "full" and r["recall"]["5"]:
                print(f"full / {name} at recall@5: {full5 / r['recall']['5']:.2f}x")
    print(json.dumps({k: {"recall": v["recall"], "full_recall": v["full_recall"]} for k, v in results.items()}))


if __name__ == "__main__":
    main()
