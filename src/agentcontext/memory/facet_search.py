"""Memory search with the question's facets as extra candidates (``ranker="facets"``, issue 29): the clauses and the
time-free form of a question (memory/facets.py; its speakers and single words are not used: they gained nothing,
benchmarks/locomo_facets.py) each run their own search (the content signals alone: dense + keywords + neighbours,
no lifts), and the pools merge: the question's first ``KEEP`` hits stay where they are; after them, every hit of the
question's pool or of a facet's is ordered by its fused value for the question plus ``WEIGHT`` times its best value
for a facet (the fused values behind the calibrated scores, engine/fusion.py ``Calibration.value``; a hit outside the
question's pool counts the pool's last value, an upper bound). A question with no facet ranks as memory search does.
A hit found by a facet alone keeps the lower of its facet score and the question pool's last score (it ranked below
that pool for the question), so ``min_score`` keeps its meaning; its other signals are the facet search's. Every hit a
facet found names its best facet score (``facet``). The order after the first ``KEEP`` is the merge's, so scores
there need not fall monotonically (as with the learned ranker).

Backend-agnostic: it calls the same search the question ran (the server's or the in-process index's), so both
stores give the same order when their searches do (tests/test_facets.py)."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ..engine.fusion import RELEVANCE, Calibration, FusionWeights, mentioned
from .facets import facets
from .search import Hit

POOL = 50  # the candidates of the question and of each facet
KEEP = 5  # the question's first hits that stay first (R@5 as the question's)
WEIGHT = 0.3  # the best facet score's share (chosen on the dev split: benchmarks/locomo_facets.py)
KINDS = ("clause", "time")

Run = Callable[[str, int, FusionWeights], list[Hit]]


def content_only(weights: FusionWeights) -> FusionWeights:
    """``weights`` without the lifts and stages (mention, time, answer, near): a facet's own content ranking."""
    return replace(weights, mention=0.0, timed=0.0, when=0.0, date=0.0, answer=0.0, near=0.0)


def merge(question: Sequence[Hit], facet_hits: Sequence[Sequence[Hit]], k: int, keep: int = KEEP,
          weight: float = WEIGHT, calibration: Calibration = RELEVANCE) -> list[Hit]:
    """The first ``k`` of the question's hits (its order) merged with each facet's (module doc)."""
    if not facet_hits or k <= keep:
        return list(question[:k])
    first = list(question[:keep])
    placed = {h.id for h in first}
    own = {h.id: h for h in question}
    best: dict[str, float] = {}
    found: dict[str, Hit] = {}
    for hits in facet_hits:
        for h in hits:
            if h.score > best.get(h.id, -1.0):
                best[h.id], found[h.id] = h.score, h
    floor = question[-1].score if question else 0.0
    lowest = calibration.value(floor)
    order = [h.id for h in question[keep:]] + [i for i in found if i not in own]
    position = {i: n for n, i in enumerate(order)}
    value = {i: (calibration.value(own[i].score) if i in own else lowest)
             + (weight * calibration.value(best[i]) if i in best else 0.0) for i in order if i not in placed}
    rest = sorted(value, key=lambda i: (-value[i], position[i]))[: k - len(first)]
    out = first
    for i in rest:
        if i in own:
            h = own[i]
        else:
            h = Hit(i, min(found[i].score, floor), dict(found[i].signals))
        if i in best:
            h = Hit(h.id, h.score, {**h.signals, "facet": best[i]})
        out.append(h)
    return out


def named(query: str, titles: Sequence[str]) -> list[str]:
    """The speakers (memory titles) ``query`` names, in first-seen order (engine/fusion.py ``mentioned``)."""
    names = list(dict.fromkeys(t for t in titles if t))
    return [n for n, m in zip(names, mentioned(query, names).tolist()) if m]


def search_with_facets(run: Run, query: str, k: int, weights: FusionWeights,
                       titles: Callable[[list[Hit]], Sequence[str]] = lambda hits: ()) -> list[Hit]:
    """The ``k`` best for ``query`` (``run(text, k, weights)``: memory search with the caller's filters), its facets'
    candidates merged in (module doc). ``titles``: the titles of these hits' memories (their speakers: a name the
    question gives leaves its clauses, as it leaves memory search's dense query)."""
    question = run(query, max(k, POOL), weights)
    if not question or not any(f.kind in KINDS for f in facets(query)):  # names only take facets away: no read
        return question[:k]
    parts = [f for f in facets(query, named(query, titles(question))) if f.kind in KINDS]
    if not parts:
        return question[:k]
    own = content_only(weights)
    return merge(question, [run(f.text, POOL, own) for f in parts], k, calibration=weights.calibration)
