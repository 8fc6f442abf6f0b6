"""Issue 29, second edition: each embedding model, and two of them together, with the fusion weights refitted inside
the leave-one-conversation-out folds; the pooled held-out table per category beside MiniLM's, one run.

    nice -n 10 .venv/bin/python benchmarks/locomo_fit_models.py [FILE] [--models e5-small,mpnet]
        [--pairs minilm+e5-small,minilm+mpnet] [--cache /work/recall29-cache] [--raw]

The signals of every question (benchmarks/locomo_loco.py ``gather_questions``: memory search as shipped, every turn
of its conversation a candidate) are gathered once per model, the vectors cached on disk
(benchmarks/locomo_gather_cached.py). Only the dense signal depends on the model; the keyword, neighbour, mention
and time signals are the same for every model. A model's cosines sit on its own scale (e5-small's between ~0.7 and
0.9, MiniLM's between ~0 and 0.7), and the fusion's other weights, the lift gate and the second stages (answer, near)
are in MiniLM's cosine units, so each model's dense signal is first standardised to MiniLM's: ``mu_L + (d - mu_M) *
sd_L / sd_M`` (the mean and spread of the cosines of every (question, turn) pair: no labels). A pair of models:
``dense = (1 - mix) * minilm + mix * other`` (standardised).

Configurations (rows), each chosen inside the folds (for each conversation held out, on the other four: the grid
point with the best R@5 + R@10 among those that lower no category's R@10 below MiniLM as shipped there; the first in
grid order among equals; if none qualifies, the best unconstrained), then pooled over the five held-out
conversations:
- ``MiniLM shipped``: the shipped weights, the answer share chosen per fold (locomo_loco.py ``--answer-only``'s
  protocol: 0.738 / 0.829);
- ``<model> shipped``: the model's raw cosines with the shipped weights (session 13's row: weights fitted to MiniLM);
- ``<model> refit``: the grid below over the standardised cosines (MiniLM refit too, so a gain can be told from
  the refit's own);
- ``<model> refit, own cosines`` (``--raw``): the same grid over the model's own cosines, not standardised (weights
  a ``FusionWeights`` holds as they are: no offset);
- ``<pair> refit``: the same grid and ``mix``.
Grid: ``scale`` (the dense weight), keyword, mention, answer (and ``mix``); neighbour 0.36, timed 0.15, date 0.2,
gate 0.1, near 0.8 / 3 as shipped. Prints the table and saves benchmarks/results/locomo_fit_models.json.

Session 14 (load 2 to 15; results/locomo_fit_models*.log, the grid's dense weight up to 1.5, 2.5, then 4.0: the folds
kept choosing its largest value), held out, pooled, R@5 / R@10, all (multi-hop R@10): MiniLM shipped 0.738 / 0.829
(0.573); MiniLM refit 0.738 / 0.825; e5-small with MiniLM's weights 0.707 / 0.790; e5-small refit 0.748 / 0.826,
0.753 / 0.826, 0.752 / 0.825 (0.562, 0.559, 0.557); MiniLM + e5-small refit 0.746 / 0.832, 0.759 / 0.830, 0.767 /
0.833 (0.565, 0.564, 0.566; at 4.0 every fold chose mix 0.6 and every other category rose: temporal 0.911 / 0.951,
open-domain 0.490 / 0.593, single-hop 0.851 / 0.905); the pair as one vector under the shipped weights 0.732 / 0.816.
Nothing kept: each lowers multi-hop R@10, and the pair costs a second model per store() and query.

Session 15 (MPNet gathered at load 8-15: ~45 min of wall time in three processes; results/locomo_fit_models_mpnet*,
_pair_mpnet*), held out, pooled, R@5 / R@10 (multi-hop R@10): MPNet with MiniLM's weights 0.748 / 0.825 (0.533);
MPNet refit 0.755 / 0.833 (0.559; open-domain R@5 0.445 -> 0.394); MPNet refit over its own cosines (``--raw``)
0.749 / 0.833 (0.559): the folds mostly found no point keeping every category. MiniLM + MPNet refit 0.762 / 0.838,
every category up (multi-hop 0.422 / 0.583, temporal 0.890 / 0.952, open-domain 0.489 / 0.617, single-hop 0.859 /
0.905; four folds chose mix 0.6, dense 2.0, keyword 0.6, mention 0.5, answer 0.8, conv-41's dense 2.5): kept as the
selectable model ``minilm+mpnet`` (embed/pair.py, one vector of 1153 dimensions; its weights engine/fusion.py
MODEL_WEIGHTS), not the default (two embeddings: store() p50 69 ms, retrieve p50 at 10,000 74 ms). The pair as one
vector under MiniLM's weights 0.745 / 0.833 (0.571).
"""
from __future__ import annotations

import argparse
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from locomo_gather_cached import CACHE, questions  # noqa: E402
from locomo_loco import DEFAULT, K, SHIPPED, SIGNALS, Question, pooled, weights_of  # noqa: E402

from agentcontext.embed.models import MINILM, spec_of  # noqa: E402
from agentcontext.engine.fusion import RELEVANCE  # noqa: E402
from agentcontext.engine.vectors import top_k  # noqa: E402
from agentcontext.memory.search import near_shares, turns_around  # noqa: E402

GRID = {"scale": (0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0), "keyword": (0.4, 0.5, 0.6, 0.7), "mention": (0.3, 0.4, 0.5),
        "answer": (0.7, 0.75, 0.8)}
MIX = (0.3, 0.4, 0.5, 0.6, 0.7)
ANSWER_GRID = (0.0, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
STRIP_IDF = (1, 1)  # memory search as shipped: the names out of both queries, the idf-weighted coverage


def dense_of(qs: list[Question]) -> list[np.ndarray]:
    return [q.content[STRIP_IDF][0].astype(np.float64) for q in qs]


def affine(dense: list[np.ndarray], like: list[np.ndarray]) -> tuple[float, float]:
    """(scale, offset) moving ``dense`` to the mean and spread of ``like`` (every (question, turn) cosine pooled; no
    labels): ``scale * d + offset``."""
    d, ref = np.concatenate(dense), np.concatenate(like)
    scale = float(ref.std() / d.std())
    return scale, float(ref.mean() - d.mean() * scale)


def standardised(dense: list[np.ndarray], like: list[np.ndarray]) -> list[np.ndarray]:
    scale, offset = affine(dense, like)
    return [scale * x + offset for x in dense]


def as_shipped(first: list[np.ndarray], second: list[np.ndarray], mix: float, scale: float,
               offset: float) -> list[np.ndarray]:
    """The dense signal of the pair as one vector a store could hold (tried this session, not kept): for stored
    texts ``[sqrt(1 - mix) a, sqrt(mix scale) b, sqrt(-mix offset)] / n``, for queries the same with the last value
    negated, so the dot product is the standardised mix over ``n ** 2 = (1 - mix) + mix scale - mix offset`` (every
    vector of unit length, 769 dimensions): a dense weight of ``1 / n ** 2`` under the shipped weights."""
    norm2 = (1 - mix) + mix * scale - mix * offset
    return [((1 - mix) * a + mix * (scale * b + offset)) / norm2 for a, b in zip(first, second)]


def value(q: Question, dense: np.ndarray, w: dict[str, float], k: int) -> np.ndarray:
    """locomo_loco.py ``values`` with the dense signal given (and its weight ``scale``)."""
    _, keyword, neighbour = q.content[STRIP_IDF]
    content = w["scale"] * dense + w["keyword"] * keyword + SHIPPED.neighbour * neighbour
    lift = np.zeros_like(content)
    for name, v in q.signals.items():
        if w[name]:
            lift += w[name] * v
    lift *= RELEVANCE(content + SHIPPED.lift_gate)
    out = content + lift
    if w["answer"]:
        answered = out.copy()
        for s in top_k(out, k).tolist():
            r = int(q.reply[s])
            if r >= 0 and out[s] > 0:
                answered[r] = max(answered[r], w["answer"] * out[s])
        out = answered
    if SHIPPED.near and q.when:
        best = int(np.argmax(out))
        distance = turns_around(q.prev, q.next, best, SHIPPED.near_turns)
        if distance:
            around = list(distance)
            out[around] = np.maximum(out[around], near_shares(SHIPPED.near, list(distance.values())) * out[best])
    return out


def per_question(qs: list[Question], dense: list[np.ndarray], w: dict[str, float]) -> np.ndarray:
    out = np.zeros((len(qs), len(K)))
    for i, (q, d) in enumerate(zip(qs, dense)):
        ranked = np.argsort(-value(q, d, w, max(K)), kind="stable")[:max(K)]
        for j, k in enumerate(K):
            out[i, j] = q.evidence[ranked[:k]].sum() / q.evidence.sum()
    return out


def base_weights() -> dict[str, float]:
    w = weights_of(SHIPPED, 1)
    return {**{name: w[name] for name in SIGNALS}, "scale": SHIPPED.dense, "keyword": SHIPPED.keyword,
            "answer": SHIPPED.answer}


def chosen(qs: list[Question], combos: list[dict], per: list[np.ndarray], floor: np.ndarray, label: str) -> dict:
    """Per fold, the combination with the best train R@5 + R@10 among those lowering no category's train R@10 below
    ``floor``'s (per-question recalls of MiniLM as shipped); held out, pooled."""
    conv = np.array([q.conversation for q in qs])
    cats = np.array([str(q.category) for q in qs])
    held = np.zeros_like(per[0])
    picks: dict[str, dict] = {}
    for c in sorted(set(conv)):
        train = conv != c
        fits = [j for j, r in enumerate(per) if all(
            r[train & (cats == g), 1].mean() >= floor[train & (cats == g), 1].mean() - 1e-9 for g in set(cats))]
        pool = fits or list(range(len(per)))
        best = max(pool, key=lambda j: (per[j][train].mean(axis=0).sum(), -j))
        held[conv == c] = per[best][conv == c]
        picks[c] = {**combos[best], "constrained": bool(fits),
                    "train": round(float(per[best][train].mean(axis=0).sum()), 4)}
        print(f"  {label} held out {c}: chose {combos[best]} (train R@5+R@10 {picks[c]['train']:.4f}"
              f"{'' if fits else ', no point kept every category'})", flush=True)
    return {"chosen": picks, "held_out": {key: {str(k): round(v, 4) for k, v in row.items()}
                                          for key, row in pooled(qs, held, np.ones(len(qs), dtype=bool)).items()}}


def aligned(a: list[Question], b: list[Question]) -> None:
    assert len(a) == len(b), "the models' question lists differ"
    for x, y in zip(a, b):
        assert (x.conversation, x.category) == (y.conversation, y.category) and np.array_equal(x.evidence, y.evidence)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--models", default="e5-small")
    ap.add_argument("--pairs", default="minilm+e5-small")
    ap.add_argument("--cache", default=str(CACHE))
    ap.add_argument("--raw", action="store_true", help="also each model refit over its own cosines (not standardised: "
                    "the weights FusionWeights can hold)")
    args = ap.parse_args()
    cache = Path(args.cache)
    models = [spec_of(m).name for m in args.models.split(",") if m.strip()]
    pairs = [tuple(spec_of(m).name for m in p.split("+")) for p in args.pairs.split(",") if p.strip()]
    wanted = [MINILM] + [m for m in dict.fromkeys(models + [m for p in pairs for m in p]) if m != MINILM]
    qs = {m: questions(args.file, m, cache) for m in wanted}
    base = qs[MINILM]
    for m in wanted[1:]:
        aligned(base, qs[m])
    raw = {m: dense_of(qs[m]) for m in wanted}
    dense = {m: standardised(raw[m], raw[MINILM]) if m != MINILM else raw[m] for m in wanted}
    for m in wanted:
        d = np.concatenate(raw[m])
        print(f"{m}: cosine mean {d.mean():.3f}, sd {d.std():.3f}")
    shipped = base_weights()
    rows: dict[str, dict] = {}
    started = time.perf_counter()
    answer_combos = [{**shipped, "answer": a} for a in ANSWER_GRID]
    floor = per_question(base, raw[MINILM], shipped)
    rows["MiniLM shipped"] = chosen(base, answer_combos, [per_question(base, raw[MINILM], w) for w in answer_combos],
                                    floor, "MiniLM shipped")
    grid = [{**shipped, **dict(zip(GRID, c))} for c in product(*GRID.values())]
    for m in wanted:
        if m != MINILM:
            label = f"{m} shipped"
            rows[label] = chosen(base, answer_combos, [per_question(base, raw[m], w) for w in answer_combos], floor,
                                 label)
        label = f"{m} refit"
        rows[label] = chosen(base, grid, [per_question(base, dense[m], w) for w in grid], floor, label)
        if args.raw and m != MINILM:
            label = f"{m} refit, own cosines"
            rows[label] = chosen(base, grid, [per_question(base, raw[m], w) for w in grid], floor, label)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    for first, second in pairs:
        label = f"{first}+{second} refit"
        combos, per = [], []
        for mix in MIX:
            mixed = [(1 - mix) * a + mix * b for a, b in zip(dense[first], dense[second])]
            for w in grid:
                combos.append({**w, "mix": mix})
                per.append(per_question(base, mixed, w))
        rows[label] = chosen(base, combos, per, floor, label)
        scale, offset = affine(raw[second], raw[first])
        label = f"{first}+{second} as one vector (shipped weights)"
        combos, per = [], []
        for mix in MIX:
            mixed = as_shipped(raw[first], raw[second], mix, scale, offset)
            for w in answer_combos:
                combos.append({**w, "mix": mix, "pair_scale": round(scale, 4), "pair_offset": round(offset, 4)})
                per.append(per_question(base, mixed, w))
        rows[label] = chosen(base, combos, per, floor, label)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    print("\nheld out, pooled over the five folds, R@5 / R@10 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)")
    for label, row in rows.items():
        cells = "  ".join(f"{key} {v['5']:.3f}/{v['10']:.3f}" for key, v in row["held_out"].items())
        print(f"  {label:<48} {cells}")
    report("locomo_fit_models", {"file": args.file, "grid": GRID, "mix": MIX, "rows": rows}, quiet=True)


if __name__ == "__main__":
    main()
