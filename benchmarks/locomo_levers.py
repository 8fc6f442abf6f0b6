"""Two further levers for evidence across sessions (issue 29, second edition), measured by leave-one-conversation-out
on the LoCoMo dev split over memory search's own signals (benchmarks/locomo_loco.py ``gather_questions``, MiniLM,
the shipped weights with the answer stage).

    nice -n 10 .venv/bin/python benchmarks/locomo_levers.py [FILE] [--cache /tmp/qs.pkl]

- ``reply``: the other speaker's reply to each of the k best (the next turn, when another speaker said it) ranks at
  least ``reply`` times that hit's value: the answer stage (memory/answers.py) without its "the next turn asks"
  condition, for an exchange whose reply names nothing the question names.
- ``prf``: a second round from the best hit's own vector, weighted below the question: each turn of another session
  than the best hit's gains ``prf * max(cosine(turn, best hit), 0)`` (the first ``seeds`` hits' best cosine), so a
  fact told again in another session (multi-hop evidence spans sessions in 26 of 27 misses) comes up. Unlike session
  5's Rocchio (the hits' mean added to the query vector, every turn), only other sessions gain, and by the hit's own
  vector, not the query's.
- ``prf_q``: ``prf``'s gain times the turn's own dense similarity to the question (a turn must relate to both).

For each conversation held out, each lever's parameters are chosen on the other four (objective: R@5 + R@10 there,
among the choices that lower no category's R@10 there; the first in grid order among equals, so "off" wins ties)
and applied to the held-out one; pooled over the five folds, printed per category beside memory search as shipped
(the same questions, the same run). A lever is kept only if it raises held-out R@10 without lowering any category.

Measured (760 questions; the shipped search on all five: R@5 0.738, R@10 0.829; multi-hop 0.402 / 0.573, temporal
0.885 / 0.935, open-domain 0.445 / 0.587, single-hop 0.829 / 0.901; benchmarks/results/locomo_levers*.json), all
three left out:
- ``reply``: one fold (conv-26) chose 0.5, the others off; held out R@10 0.829 -> 0.828, open-domain 0.587 -> 0.576.
  On all five: 0.5 changes nothing, 0.6-0.9 lower R@5 to 0.737-0.710 and R@10 to 0.828-0.804.
- ``prf``: no fold chose it (every setting lowers a category's R@10 or R@5 + R@10 on the training folds). On all
  five: R@5 0.729-0.740, R@10 0.801-0.827 (best R@5 0.740 at 0.1 with one seed, R@10 0.822 there).
- ``prf_q``: no fold chose it. On all five: R@5 0.733-0.741, R@10 0.817-0.829 (0.1 with one seed: 0.740 / 0.829,
  +0.002 / +0.0002, not a gain the folds confirm).
A turn told again in another session is seldom near the best hit's own vector: the evidence the misses need is
another fact (a second activity, another trip), not a repetition of the first, so a second round from the best hit
brings up more of the same.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from locomo_loco import DEFAULT, K, SHIPPED, Question, gather_questions, values, weights_of  # noqa: E402

LEVERS = {"reply": {"reply": (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)},
          "prf": {"prf": (0.0, 0.05, 0.1, 0.15, 0.2, 0.3), "seeds": (1, 2, 3)},
          "prf_q": {"prf_q": (0.0, 0.1, 0.2, 0.3, 0.5), "seeds": (1, 2, 3)}}
SHIPPED_W = weights_of(SHIPPED, 1)


def lever_top(q: Question, lever: dict, k: int = max(K)) -> np.ndarray:
    """memory search's order (locomo_loco ``values``, the shipped weights) with a lever applied after its stages."""
    value = values(q, SHIPPED_W, k)
    if lever.get("reply"):
        lifted = value.copy()
        for s in np.argsort(-value, kind="stable")[:k].tolist():
            n = int(q.next[s])
            if n >= 0 and q.speaker[n] != q.speaker[s] and value[s] > 0:
                lifted[n] = max(lifted[n], lever["reply"] * value[s])
        value = lifted
    if lever.get("prf"):
        seeds = np.argsort(-value, kind="stable")[: int(lever["seeds"])]
        sims = np.clip(q.own @ q.own[seeds].T, 0.0, None)  # turns x seeds
        other = q.session[:, None] != q.session[seeds][None, :]
        value = value + lever["prf"] * (sims * other).max(axis=1)
    if lever.get("prf_q"):  # the same second round, times the turn's own similarity to the question
        seeds = np.argsort(-value, kind="stable")[: int(lever["seeds"])]
        sims = np.clip(q.own @ q.own[seeds].T, 0.0, None)
        other = q.session[:, None] != q.session[seeds][None, :]
        dense = np.clip(q.content[(1, 1)][0], 0.0, None)
        value = value + lever["prf_q"] * (sims * other).max(axis=1) * dense
    return np.argsort(-value, kind="stable")[:k]


def per_question(qs: list[Question], lever: dict) -> np.ndarray:
    out = np.zeros((len(qs), len(K)))
    for i, q in enumerate(qs):
        ranked = lever_top(q, lever)
        for j, k in enumerate(K):
            out[i, j] = q.evidence[ranked[:k]].sum() / q.evidence.sum()
    return out


def table(qs: list[Question], r: np.ndarray) -> dict[str, dict[str, float]]:
    cats = np.array([str(q.category) for q in qs])
    return {key: {str(k): round(float(r[cats == key if key != "all" else slice(None), j].mean()), 4)
                  for j, k in enumerate(K)} for key in [*sorted(set(cats)), "all"]}


def allowed(r: np.ndarray, off: np.ndarray, train: np.ndarray, cats: np.ndarray) -> bool:
    """No category's R@10 on the training questions below the shipped search's."""
    return all(r[train & (cats == g), 1].mean() >= off[train & (cats == g), 1].mean() - 1e-9
               for g in sorted(set(cats[train])))


def loco(qs: list[Question], grid: dict[str, tuple]) -> tuple[np.ndarray, dict[str, dict], np.ndarray]:
    """(held-out per-question recalls pooled over the folds, each fold's choice, the shipped recalls)."""
    combos = [dict(zip(grid, c)) for c in product(*grid.values())]
    first = next(iter(grid))
    combos = [c for i, c in enumerate(combos) if i == 0 or c[first]]  # off (the first value, 0) once
    per = [per_question(qs, c) for c in combos]
    off = per[0]
    conv = np.array([q.conversation for q in qs])
    cats = np.array([str(q.category) for q in qs])
    held = np.zeros_like(off)
    chosen = {}
    for c in sorted(set(conv)):
        train = conv != c

        fits = [j for j, r in enumerate(per) if allowed(r, off, train, cats)]
        best = max(fits, key=lambda j: (per[j][train].mean(axis=0).sum(), -j))
        chosen[c] = combos[best]
        held[conv == c] = per[best][conv == c]
        print(f"  held out {c}: chose {combos[best]} (train R@5 + R@10 {off[train].mean(axis=0).sum():.4f} -> "
              f"{per[best][train].mean(axis=0).sum():.4f})", flush=True)
    fitted = {str(c): table(qs, r)["all"] for c, r in zip(combos, per)}
    return held, {"chosen": chosen, "fitted_on_all": fitted}, off


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--cache", default="", help="a pickle of the gathered questions (read if it exists, else written)")
    ap.add_argument("--only", default="", help="only these levers (comma-separated)")
    args = ap.parse_args()
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        qs = pickle.loads(cache.read_bytes())
    else:
        qs = gather_questions(args.file)
        if cache is not None:
            cache.write_bytes(pickle.dumps(qs))
    out: dict = {"file": args.file, "questions": len(qs), "levers": {}}
    for name, grid in LEVERS.items():
        if args.only and name not in args.only.split(","):
            continue
        print(f"lever {name}: grid {grid}", flush=True)
        held, info, off = loco(qs, grid)
        before, after = table(qs, off), table(qs, held)
        for key in before:
            b, a = before[key], after[key]
            print(f"  category {key:>3}: shipped R@5 {b['5']:.3f} / R@10 {b['10']:.3f} -> held out {a['5']:.3f} / "
                  f"{a['10']:.3f} ({a['10'] - b['10']:+.3f})")
        kept = after["all"]["10"] > before["all"]["10"] and all(after[c]["10"] >= before[c]["10"] for c in before)
        print(f"  {name}: {'kept' if kept else 'left out'}", flush=True)
        out["levers"][name] = {"grid": grid, **info, "shipped": before, "held_out": after, "kept": kept}
    report("locomo_levers" + (f"_{args.only.replace(',', '_')}" if args.only else ""), out, quiet=True)


if __name__ == "__main__":
    main()
