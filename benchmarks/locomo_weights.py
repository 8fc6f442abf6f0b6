"""The score calibration of memory retrieval, fitted on the LoCoMo development split (issue 13 s4).

Run: .venv/bin/python benchmarks/locomo_weights.py [FILE]
Stores each dev conversation as ``agentcontext eval locomo`` does (one memory per turn), asks every
question but category 5's, and labels every (question, turn) pair: 1 when the turn is evidence for
the question. It then fits two logistic curves, evidence and other turns weighted equally (so a score
does not depend on how many memories a store holds), and prints them beside the curves the code ships:

- on the bare cosine of the question's and the turn's own embeddings: ``engine/fusion.RELEVANCE``, the
  curve every bare cosine is scored by (precedents, a vector store's rows);
- on the fused value of memory search (``engine/fusion.fuse`` of the absolute signals): the curve
  ``FusionWeights.calibration`` (memory ``retrieve()``'s ``score``).

It also prints, for each curve, the median score of evidence turns and of the other turns, and the
share of each scoring >= 0.3 (the threshold the min_score tests use).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agentcontext.embed.base import default_embedder
from agentcontext.engine.fusion import RELEVANCE, FusionWeights, fused_value
from agentcontext.eval_locomo import evidence, load, turn_text, turns
from agentcontext.memory import AgentMemory
from agentcontext.memory.search import gather
from agentcontext.vector_store import VectorStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import fit_logistic, report  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"


def pairs(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cosine, fused value, label) of every (question, turn) pair of the split."""
    embedder = default_embedder()
    weights = FusionWeights()
    cos_all, fused_all, label_all = [], [], []
    for sample in load(path):
        sid = str(sample.get("sample_id", "conv"))
        memory = AgentMemory(VectorStore(backend="inmemory", embedder=embedder), max_memory_size=10**9)
        ts = turns(sample)
        memory.batch_store([{"content": turn_text(t), "conversation_id": sid,
                             "metadata": {"speaker": t.get("speaker", ""), "dia_id": t["dia_id"]},
                             "created_at": t["created_at"]} for t in ts])
        dia = {m["id"]: m["metadata"].get("dia_id") for m in memory.list_memories()}
        index = memory._index()
        row_dia = np.array([dia.get(i) for i in index.ids], dtype=object)
        known = {t["dia_id"] for t in ts}
        for qa in sample["qa"]:
            if qa.get("category") == 5:
                continue
            ev = evidence(qa.get("evidence") or [], known)
            if not ev:
                continue
            sig = gather(memory.workspace, index, memory.namespace, str(qa["question"]), None)
            asked = gather(memory.workspace, index, memory.namespace, str(qa["question"]), None, mention=False)
            cos_all.append(index.own @ asked.query_vector)  # the question as asked (the fit the curve ships)
            fused_all.append(fused_value(sig.values, weights))
            label_all.append(np.isin(row_dia, list(ev)))
        memory.workspace.close()
    return np.concatenate(cos_all), np.concatenate(fused_all), np.concatenate(label_all).astype(bool)


def describe(name: str, curve, values: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    scores = np.asarray(curve(values))
    out = {"evidence_median": float(np.median(scores[labels])), "other_median": float(np.median(scores[~labels])),
           "evidence_at_least_0.3": float((scores[labels] >= 0.3).mean()),
           "other_at_least_0.3": float((scores[~labels] >= 0.3).mean())}
    print(f"  {name}: median score evidence {out['evidence_median']:.3f}, other turns {out['other_median']:.3f}; "
          f">= 0.3: evidence {out['evidence_at_least_0.3']:.3f}, other {out['other_at_least_0.3']:.3f}")
    return {k: round(v, 4) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    args = ap.parse_args()
    cosine, fused, labels = pairs(args.file)
    print(f"{len(labels)} (question, turn) pairs, {int(labels.sum())} evidence")
    figures: dict[str, object] = {"file": args.file, "pairs": int(len(labels)), "evidence": int(labels.sum())}
    shipped = {"cosine": RELEVANCE, "fused": FusionWeights().calibration}
    for name, values in (("cosine", cosine), ("fused", fused)):
        scale, offset = fit_logistic(values, labels)
        ship = shipped[name]
        print(f"{name}: fitted scale {scale:.2f} offset {offset:.2f} (0.5 at {-offset / scale:.3f});"
              f" shipped scale {ship.scale} offset {ship.offset} (0.5 at {ship.midpoint:.3f})")
        figures[name] = {"fitted": {"scale": round(scale, 3), "offset": round(offset, 3)},
                         "shipped": {"scale": ship.scale, "offset": ship.offset},
                         "shipped_scores": describe("shipped", ship, values, labels)}
    report("locomo_weights", figures, quiet=True)


if __name__ == "__main__":
    main()
