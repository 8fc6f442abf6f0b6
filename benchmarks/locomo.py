"""LoCoMo retrieval benchmark: the full pipeline and its ablations, measured in the same run.

Run: .venv/bin/python benchmarks/locomo.py [FILE] [--only full]
Prints recall@1/5/10 (partial credit) and full-hit rates for each configuration, and the ratio of
the full pipeline's recall@5 to each baseline's. Each configuration embeds the whole split again
(in-memory stores), so a run takes several minutes on a shared 2-core machine.

Ideas measured while building it (dev split, recall@5 / recall@10, partial credit; the first rows
from a prototype with the same model and FTS5, the last from ``agentcontext eval locomo``):
  FTS5 BM25, turn text only ................................. 0.471 / 0.545
  + speaker as title, image captions ........................ 0.483 / 0.566
  dense (MiniLM), "Speaker: text" + caption ................. 0.405 / 0.502
  min-max fusion 0.5/0.5, BM25 with all query words ......... 0.556 / 0.650
  same, stopwords dropped from the BM25 query ............... 0.588 / 0.680
  z-score instead of min-max (with context, boost 0.3) ...... 0.602 vs 0.634 @5, dropped
  + speaker-mention boost 0.2 ............................... 0.611 / 0.701
  session date prefixed to the embedded text ................ no gain (0.585 vs 0.588)
  dense = mean(own, prev+own, own+next) pair embeddings ..... 0.625 / 0.717 (max instead of mean: 0.589)
  BM25 over prev+own+next text (index time) ................. 0.696 / 0.778
  BM25 neighbour smoothing at query time (0.4) instead ...... 0.673 / 0.759 (chosen: no rewrite of old turns)
  session-level boost / score propagation on the total ...... <= +0.01, dropped
  own-vector weight 0.25 / 0.5 beside the context mean ...... 0.684 / 0.672 @5 (vs 0.687), dropped
  creation date indexed as text ("8 May 2023") .............. +0.009 / +0.018
  full pipeline, relative min-max fusion (before issue 13 s4)  0.686 / 0.774 (full hits 0.629 / 0.717)
  absolute signals (keyword coverage, neighbours summed) .... 0.697 / 0.780 (full hits 0.641 / 0.720)
No PyPI wheel was found that ships a cross-encoder (flashrank 0.2.10 is 14 KB and downloads its
model at run time; issue 29's survey: docs pack concepts/embeddings), so the reranker (engine/rerank.py,
``AgentMemory(rerank=True)``) is all-mpnet-base-v2 over the first candidates: benchmarks/rerank_loco.py.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import sys

from agentcontext.eval_locomo import evaluate
from agentcontext.engine.fusion import FusionWeights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"
CONFIGS = {
    "bm25": {"weights": FusionWeights(dense=0.0, neighbour=0.0, mention=0.0, timed=0.0, when=0.0, date=0.0),
             "context_turns": False},
    "dense": {"weights": FusionWeights(dense=1.0, keyword=0.0, neighbour=0.0, mention=0.0, timed=0.0, when=0.0,
                                       date=0.0),
              "context_turns": False},
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
    summary = {k: {"recall": v["recall"], "full_recall": v["full_recall"], "seconds": v["seconds"]}
               for k, v in results.items()}
    if args.only is None:
        report("locomo", {"file": args.file, "questions": results["full"]["questions"], **summary})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
