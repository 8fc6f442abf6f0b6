"""search_knowledge quality and score calibration on agentcontext's own docs pack (issue 13 s4).

Run: .venv/bin/python benchmarks/knowledge_search.py
Installs examples/packs/agentcontext-docs (with embeddings, in memory), asks the hand-written paraphrased
questions of benchmarks/data/docs_pack_queries.json, and prints hit@1 / hit@3 and the mean reciprocal rank.
It also fits ``knowledge/search.py``'s SCORE_CALIBRATION: a logistic regression of "this hit is the doc that
answers the question" on the hit's points (the weighted sum of its absolute signals), answers and other
candidates weighted equally; it prints the fitted curve beside the one the code ships, and the scores the
shipped curve gives to the answers and to the other candidates.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from agentcontext.knowledge import packs
from agentcontext.knowledge.search import SCORE_CALIBRATION, search_knowledge
from agentcontext.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import fit_logistic, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "docs_pack_queries.json"


def main() -> None:
    spec = json.loads(DATA.read_text())
    ws = Workspace.in_memory()
    pack = packs.install_folder(ws, ROOT / spec["pack_folder"])[0]["pack"]
    hit1 = hit3 = 0
    mrr = 0.0
    points, labels, answer_scores, other_scores = [], [], [], []
    for query, want in spec["queries"]:
        hits = search_knowledge(ws, pack, query, limit=50)
        order = [h.selector for h in hits]
        rank = order.index(want) + 1 if want in order else None
        hit1 += rank == 1
        hit3 += rank is not None and rank <= 3
        mrr += 1.0 / rank if rank else 0.0
        if rank is None:
            print(f"  not found: {query!r} -> {want} (top: {order[:3]})")
        for h in hits:
            points.append(h.points)
            labels.append(h.selector == want)
            (answer_scores if h.selector == want else other_scores).append(h.score)
    n = len(spec["queries"])
    scale, offset = fit_logistic(points, labels)
    figures = {
        "queries": n, "hit_at_1": round(hit1 / n, 3), "hit_at_3": round(hit3 / n, 3), "mrr": round(mrr / n, 3),
        "calibration_fitted": {"scale": round(scale, 3), "offset": round(offset, 3)},
        "calibration_shipped": {"scale": SCORE_CALIBRATION.scale, "offset": SCORE_CALIBRATION.offset},
        "answer_score_quartiles": [round(float(v), 3) for v in np.percentile(answer_scores, [25, 50, 75])],
        "other_score_quartiles": [round(float(v), 3) for v in np.percentile(other_scores, [25, 50, 75])],
    }
    print(f"search_knowledge on the docs pack: hit@1 {figures['hit_at_1']}  hit@3 {figures['hit_at_3']}  "
          f"MRR {figures['mrr']} ({n} paraphrased questions)")
    print(f"calibration fitted: scale {scale:.3f} offset {offset:.3f}   shipped: scale {SCORE_CALIBRATION.scale} "
          f"offset {SCORE_CALIBRATION.offset}")
    print(f"scores (shipped curve) of answers, quartiles: {figures['answer_score_quartiles']}; of other candidates: "
          f"{figures['other_score_quartiles']}")
    report("knowledge_search", figures, quiet=True)


if __name__ == "__main__":
    main()
