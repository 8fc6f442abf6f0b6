"""The candidates of a large namespace's ranking that can still reach the k best (issue 23 s3): a threshold rule
over what the first stage read, so the context vectors' inner products (the ``similarities`` stage: ~1,500 hashes a
query at 1,000,000 memories) are read only for those (memory/server_search.py ``_Query.rank``, large path only).

A candidate's fused value (memory/server_rank.py) is its content (dense = the mean of its own, pair and next pair
vectors' inner products with the query; its keyword and neighbours' keyword scores) plus its mention and time lifts
times the gate of its content. Before the context vectors are read, each candidate's own inner product, keyword,
neighbours' keyword and mention are known (the own vectors' inner products are read ahead with the seeds' other
reads; a candidate whose own is not, a named speaker's turn, is bounded as below); the time lifts are bounded by
their weights; the pair and next pair inner products by at most the largest own inner product of the query's
candidates plus ``GLOBAL_MARGIN``, and at most the larger own inner product of the two turns the pair vector
embeds plus ``LOCAL_MARGIN``. So each candidate has an upper bound. The context vectors of the best seeds (the
dense pool's first ``AHEAD_NEAREST``, the text pool's first ``AHEAD_TEXT``) and of their neighbours are read
ahead with the own vectors (``_Query._sims_ahead``, on the second connection: no round trip of its own); those
candidates' values without the lifts (which only add: time and mention weights are not negative, the second stages
only raise a value) are lower bounds, and the k-th best of these is a floor the final k-th best is above. A
candidate whose bound is below that floor cannot rank among the k best, and is left out (its context vectors are
not read, it is not ranked); a second stage that wants it (a reply to a best hit's question, a turn around a
when-question's best hit) makes it a candidate again (``_Query.rank``), read and ranked then. The context vectors
are then read in two batches where they were one: an int8 row's inner product can come a float32 step apart
(store/pg_q8.py ``scores``; the largest score difference on the benchmark questions: 3e-9).

The context bound is measured, not proven (a pair vector embeds the turn with the one before; nothing ties its
inner product to theirs): on the 200,000-memory benchmark store (60 LoCoMo questions, 42,162 candidates) the largest
context inner product of a query was below its largest own one in every question (by 0.003-0.126), and a pair
or next pair inner product exceeded the larger own inner product of its two turns by at most 0.100 (27,640 of each);
the margins are 0.05 and 0.15. The large path's ranking is approximate already (one round, pools of 100 / 150).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..engine.fusion import FusionWeights
from ..model import Node
from .search import time_values

GLOBAL_MARGIN = 0.05  # over the largest own inner product of the query's candidates
LOCAL_MARGIN = 0.15  # over the larger own inner product of the turn and its neighbour
MIN_CANDIDATES = 30  # fewer: every one ranked
# the seeds whose context vectors are read ahead with the own vectors (``_Query._sims_ahead``), with their neighbours:
# the dense pool's best and the text pool's best; their values give the floor
AHEAD_NEAREST, AHEAD_TEXT = 20, 10
SLACK = 1e-6  # the floor and bounds are sums of the same float32 values in other orders: rounding, kept safe


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
                 weights: FusionWeights) -> list[Node]:
    """The candidates that can still rank among the ``k`` best (module doc), in their order; ``sims``: the inner
    products read so far by vector hash (NaN: no such vector), the context vectors' of some candidates among them
    (those give the floor)."""
    time_lift = _lift_weight(query, weights)
    if time_lift is None or len(candidates) <= MIN_CANDIDATES:
        return list(candidates)
    sget, rget, fget, nget = sims.get, raw.get, following.get, nodes.get
    inf, nan = np.inf, np.nan
    rows = []  # a candidate's own, pair, next pair inner products (inf: not read; NaN: none), its neighbours' own
    for c in candidates:  # ones, its keyword, its neighbours' keywords, whether it speaks as a named speaker
        props = c.props or {}
        before = nget(p) if (p := props.get("prev")) else None
        after = nget(x) if (x := fget(c.id)) else None
        h, hp = c.embed_hash, props.get("pair_hash")
        hf = (after.props or {}).get("pair_hash") if after is not None else None
        hb = before.embed_hash if before is not None else None
        ha = after.embed_hash if after is not None else None
        rows.append((sget(h, inf) if h else nan, sget(hp, inf) if hp else nan, sget(hf, inf) if hf else nan,
                     sget(hb, inf) if hb else nan, sget(ha, inf) if ha else nan, rget(c.id, 0.0),
                     rget(p, 0.0) if p else 0.0, rget(x, 0.0) if x else 0.0, (c.title or "") in named))
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 9)
    got = [table[:, j] for j in range(5)]
    keyword = np.maximum(table[:, 5:8], 0.0) * scale
    rest = weights.keyword * keyword[:, 0] + weights.neighbour * (keyword[:, 1] + keyword[:, 2])
    mention = table[:, 8] * weights.mention

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

    exact = np.flatnonzero(~np.isposinf(got[0]) & ~np.isposinf(got[1]) & ~np.isposinf(got[2]))
    if exact.size < k:
        return list(candidates)
    own, pair, follow = np.nan_to_num(got[0][exact], nan=0.0), got[1][exact], got[2][exact]
    present = 1 + (pair == pair).astype(np.int64) + (follow == follow).astype(np.int64)
    dense = (own + np.nan_to_num(pair) + np.nan_to_num(follow)) / present
    content = weights.dense * dense + rest[exact]
    low = content + mention[exact] * np.asarray(weights.gate(content), dtype=np.float64)
    floor = float(np.sort(low)[-k])
    keep = upper() >= floor - SLACK
    return [c for c, kept in zip(candidates, keep.tolist()) if kept]


def _largest_mean(own: np.ndarray, pair: np.ndarray, follow: np.ndarray) -> np.ndarray:
    """The largest mean of the own bound and any of the pair and next pair bounds that may exist (-inf: absent):
    a vector missing from the store makes a candidate's mean over fewer parts, which can be larger."""
    best = own.copy()
    has_pair, has_follow = np.isfinite(pair), np.isfinite(follow)
    best = np.where(has_pair, np.fmax(best, (own + pair) / 2), best)
    best = np.where(has_follow, np.fmax(best, (own + follow) / 2), best)
    return np.where(has_pair & has_follow, np.fmax(best, (own + pair + follow) / 3), best)
