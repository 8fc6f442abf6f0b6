"""The candidates of a large namespace's ranking that can still reach the k best (issue 23 s3): a threshold rule
over what the first stage read, so the context vectors' inner products (the ``similarities`` stage: ~1,500 hashes a
query at 1,000,000 memories) are read only for those (memory/server_search.py ``_Query.rank``, large path only).

A candidate's fused value (memory/server_rank.py) is its content (dense = the mean of its own, pair and next pair
vectors' inner products with the query; its keyword and neighbours' keyword scores) plus its mention and time lifts
times the gate of its content. Before the context vectors are read, each candidate's own inner product, keyword,
neighbours' keyword and mention are known (read with the seeds); the time lifts are bounded by their weights; the
pair and next pair inner products by ``PAIR_BOUND``: at most the largest own inner product of the query's
candidates plus ``GLOBAL_MARGIN``, and at most the larger own inner product of the two turns the pair vector
embeds plus ``LOCAL_MARGIN``. So each candidate has an upper bound (``ub``). The ``BATCH`` candidates with the
largest bounds are read exactly (one ``similarities`` statement: their context vectors and every own vector not
read yet), their values without the lifts (which only add: time and mention weights are not negative, the second
stages only raise a value) are lower bounds, and the k-th best of these is a floor the final k-th best is above. A
candidate whose bound is below that floor cannot rank among the k best, and is left out; a second stage that wants
it (a reply to a best hit's question, a turn around a when-question's best hit) makes it a candidate again
(``_Query.rank``), read and ranked then.

The context bound is measured, not proven (a pair vector embeds the turn with the one before; nothing ties its
inner product to theirs): on the 200,000-memory benchmark store (60 LoCoMo questions, 42,162 candidates) the largest
context inner product of a query was below its largest own one in every question (by 0.003-0.126), and a pair
or next pair inner product exceeded the larger own inner product of its two turns by at most 0.100 (27,640 of each);
the margins are 0.05 and 0.15. The large path's ranking is approximate already (one round, pools of 100 / 150).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..engine.fusion import FusionWeights
from ..model import Node
from .search import time_values

GLOBAL_MARGIN = 0.05  # over the largest own inner product of the query's candidates
LOCAL_MARGIN = 0.15  # over the larger own inner product of the turn and its neighbour
BATCH = 3  # times k, at least MIN_BATCH: the candidates read first, whose values give the floor
MIN_BATCH = 30
SLACK = 1e-6  # the floor and bounds are sums of the same float32 values in other orders: rounding, kept safe
Read = Callable[[list[str]], dict[str, float]]


def _pair_hash(node: Node | None) -> str | None:
    return (node.props or {}).get("pair_hash") if node is not None else None


def _lift_weight(query: str, weights: FusionWeights) -> float | None:
    """The largest time lift a candidate can get for ``query`` (the weights of the signals it has), or None when a
    weight is negative or the gate does not grow with the content (no bound then)."""
    names = list(time_values(query, np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)))
    lifts = weights.lifts()
    if any(w < 0 for w in lifts.values()) or weights.dense < 0 or weights.keyword < 0 or weights.neighbour < 0:
        return None
    if weights.lift_gate is not None and weights.calibration.scale <= 0:
        return None
    return float(sum(lifts[n] for n in names))


def within_reach(query: str, k: int, candidates: Sequence[Node], nodes: dict[str, Node], following: dict[str, str],
                 sims: dict[str, float], raw: dict[str, float], scale: float, named: set[str],
                 weights: FusionWeights, read: Read) -> list[Node]:
    """The candidates that can still rank among the ``k`` best (module doc), in their order; ``sims`` (inner
    products by vector hash, NaN: no such vector) gains what the first batch read (``read``)."""
    time_lift = _lift_weight(query, weights)
    n, size = len(candidates), max(BATCH * k, MIN_BATCH)
    if time_lift is None or n <= size:
        return list(candidates)
    ids = [c.id for c in candidates]
    prevs = [(c.props or {}).get("prev") or "" for c in candidates]
    nexts = [following.get(i) or "" for i in ids]
    after = [nodes.get(x) if x else None for x in nexts]
    before = [nodes.get(p) if p else None for p in prevs]
    owns = [c.embed_hash for c in candidates]
    pairs = [_pair_hash(c) for c in candidates]
    follows = [_pair_hash(x) for x in after]
    around_owns = ([b.embed_hash if b is not None else None for b in before],
                   [x.embed_hash if x is not None else None for x in after])
    get = raw.get

    def scores(keys: list[str]) -> np.ndarray:
        return np.maximum(np.array([get(i, 0.0) for i in keys], dtype=np.float64), 0.0) * scale

    rest = weights.keyword * scores(ids) + weights.neighbour * (scores(prevs) + scores(nexts))
    mention = np.array([(c.title or "") in named for c in candidates], dtype=np.float64) * weights.mention
    lists = (owns, pairs, follows, *around_owns)
    got = [np.array([sims.get(h, np.inf) if h else np.nan for h in hs], dtype=np.float64) for hs in lists]

    def upper() -> np.ndarray:
        own_read, pair, follow, before_own, after_own = got  # inf: not read yet; NaN: no hash or no such vector
        own = np.nan_to_num(own_read, nan=0.0, posinf=np.inf)  # no own vector: 0, as the ranking holds it
        read_own = own[np.isfinite(own)]
        ceiling = float(read_own.max()) + GLOBAL_MARGIN if read_own.size else 1.0
        own = np.where(np.isinf(own), ceiling, own)
        bounds = [own]
        for part, other in ((pair, before_own), (follow, after_own)):
            local = np.fmax(own, np.where(np.isinf(other), ceiling, other)) + LOCAL_MARGIN
            part = np.where(np.isnan(part), -np.inf, part)
            bounds.append(np.where(np.isposinf(part), np.minimum(ceiling, local), part))
        content = weights.dense * _largest_mean(*bounds) + rest
        return content + (mention + time_lift) * np.asarray(weights.gate(content), dtype=np.float64)

    batch = np.argsort(-upper(), kind="stable")[:size]
    todo = [h for h in owns if h and h not in sims]  # every own vector not read yet, and the batch's context ones
    todo += [h for j in batch.tolist() for h in (owns[j], pairs[j], follows[j]) if h and h not in sims]
    if todo:
        todo = list(dict.fromkeys(todo))
        found = read(todo)
        sims.update({h: found.get(h, np.nan) for h in todo})
        for values, hs in zip(got, lists):  # what was not read before, read now or still not
            at = np.flatnonzero(np.isposinf(values))
            values[at] = [sims.get(hs[j], np.inf) for j in at.tolist()]
    ub = upper()
    own, pair, follow = np.nan_to_num(got[0][batch], nan=0.0), got[1][batch], got[2][batch]
    present = 1 + (pair == pair).astype(np.int64) + (follow == follow).astype(np.int64)
    dense = (own + np.nan_to_num(pair) + np.nan_to_num(follow)) / present
    content = weights.dense * dense + rest[batch]
    low = content + mention[batch] * np.asarray(weights.gate(content), dtype=np.float64)
    floor = float(np.sort(low)[-k])
    keep = ub >= floor - SLACK
    keep[batch] = True
    return [c for c, kept in zip(candidates, keep.tolist()) if kept]


def _largest_mean(own: np.ndarray, pair: np.ndarray, follow: np.ndarray) -> np.ndarray:
    """The largest mean of the own bound and any of the pair and next pair bounds that may exist (-inf: absent):
    a vector missing from the store makes a candidate's mean over fewer parts, which can be larger."""
    best = own.copy()
    has_pair, has_follow = np.isfinite(pair), np.isfinite(follow)
    best = np.where(has_pair, np.fmax(best, (own + pair) / 2), best)
    best = np.where(has_follow, np.fmax(best, (own + follow) / 2), best)
    return np.where(has_pair & has_follow, np.fmax(best, (own + pair + follow) / 3), best)
