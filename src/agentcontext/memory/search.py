"""Hybrid memory search: dense (with conversation context) + keywords (BM25 as query coverage) + speaker mentions
+ time (memories that state when, dates the query names; memory/dates.py), fused linearly and calibrated into an
absolute relevance in [0, 1] (engine/fusion.py says how); a turn answering a question ranks at least a share of the
value of the turn the question followed, when that one is among the best (memory/answers.py ``answer_best``); for a
query that asks when, the turns around the best hit rank at least a share of its value (``near_best``); with
``FusionWeights.bridge`` set, the rare names of the first hits pull up the other memories naming them
(memory/bridge.py ``bridge_best``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..engine.fusion import (FusionWeights, fuse, keyword_coverage, keyword_scores, meaning_keywords, mentioned,
                             neighbour_sum, without_names)
from ..engine.vectors import top_k
from ..workspace import Workspace
from .answers import answer_best
from .bridge import bridge_best
from .dates import TIMED, asks_when, date_matches, month_named, named_dates
from .index import MemoryIndex
from .records import KIND

BM25_LIMIT = 1000


@dataclass
class Hit:
    id: str
    score: float
    signals: dict[str, float]


@dataclass
class Signals:
    """The absolute signals of the candidate rows (``rows``, indexes into the memory index) for one query, plus
    what each hit also reports: the query vector (for its own-vector cosine) and the raw BM25 of every row."""

    rows: np.ndarray
    values: dict[str, np.ndarray]  # signal name -> one value per candidate row
    query_vector: np.ndarray
    bm25: np.ndarray  # raw BM25 of every row of the index (0 = not matched)


def candidate_rows(index: MemoryIndex, conversation_id: str | None, user_id: str | None,
                   where: Callable[[dict[str, Any]], bool] | None) -> np.ndarray | None:
    """Rows passing the filters, or None for every row (no copy of the matrix needed)."""
    rows = index.rows_of(conversation_id, user_id)
    if rows is None:
        if where is None:
            return None
        rows = np.arange(len(index), dtype=np.int64)
    if where is not None and rows.size:
        keep = np.fromiter((where(index.props[i]) for i in rows), dtype=bool, count=rows.size)
        rows = rows[keep]
    return rows


def _bm25(ws: Workspace, index: MemoryIndex, namespace: str, keywords: str,
          idf: bool = True) -> tuple[np.ndarray, float]:
    """Raw BM25 of every row, and the coverage of the keywords by the best hit (what scales BM25 to absolute), each
    keyword weighted by its idf (``idf``; False: unweighted, as before issue 11 s5 (b))."""
    n = len(index)
    raw = np.zeros(n, dtype=np.float32)
    if not keywords:
        return raw, 0.0
    best = None
    for nid, score in ws.store.text_search(keywords, namespace=namespace, kind=KIND, limit=BM25_LIMIT):
        i = index.row.get(nid)
        if i is not None:
            raw[i] = score
            if best is None:
                best = nid
    if best is None:
        return raw, 0.0
    node = ws.store.get_node(best)
    text = " ".join((node.title or "", node.summary or "", node.content or "")) if node is not None else ""
    return raw, keyword_coverage(keywords, text, index.df if idf else None, n)


def gather(ws: Workspace, index: MemoryIndex, namespace: str, query: str, rows: np.ndarray | None,
           timing: bool = True, mention: bool = True, idf: bool = True) -> Signals:
    """Every signal of the candidate rows (None = all rows) for ``query``; the time signals only with ``timing``
    (``search`` adds them to the rows that can reach the top k: ``top_with_time``). With ``mention`` (the mention
    signal is weighed), the speakers the query names are the mention signal's alone: the dense and the keyword query
    are the query without their names (engine/fusion.py ``without_names``; the text index holds each memory's speaker,
    so a name left among the keywords would give every memory of that speaker keyword content). ``idf`` False: the
    keyword coverage unweighted (as before issue 11 s5 (b); benchmarks/locomo_loco.py's baseline)."""
    n = len(index)
    every = rows is None
    cand = np.arange(n, dtype=np.int64) if rows is None else rows
    named = mentioned(query, index.title_names) if mention and len(index.title_names) > 1 else None
    speakers = [index.title_names[i] for i in np.flatnonzero(named)] if named is not None else []
    meaning = without_names(query, speakers)
    qv = ws.embed_query(meaning)
    dense = index.rows.scores(qv, None if every else cand, plane=index.dense_plane)[: cand.size]
    raw, coverage = _bm25(ws, index, namespace, meaning_keywords(query, meaning, index.df, n), idf)
    keyword = keyword_scores(raw, coverage)
    values = {"dense": dense, "keyword": keyword[cand],
              "neighbour": neighbour_sum(keyword, index.prev, index.next)[cand]}
    if speakers:
        values["mention"] = named[index.title_codes[cand]]
    if timing:
        values.update(time_signals(query, index, None if every else cand))
    return Signals(cand, values, qv, raw)


def time_signals(query: str, index: MemoryIndex, rows: np.ndarray | None) -> dict[str, np.ndarray]:
    """``timed`` (and ``when`` if the query asks when), ``date`` if it names a month or year (engine/fusion.py),
    for these rows of the index, in their order (None: every row, in index order, without copies)."""
    if rows is None:
        return time_values(query, index.refs, index.months, index.months_before)
    return time_values(query, index.refs[rows], index.months[rows], index.months_before[rows])


def time_values(query: str, refs: np.ndarray, months: np.ndarray, before: np.ndarray) -> dict[str, np.ndarray]:
    """The time signals of memories given their time bits and month columns (memory/dates.py)."""
    timed = (refs & TIMED).astype(np.float32)
    out = {"timed": timed}
    if asks_when(query):
        out["when"] = timed
    named = named_dates(query)
    if named:
        out["date"] = date_matches(named, months, before, refs)
    return out


def time_weights(query: str, weights: FusionWeights) -> dict[str, float]:
    """The weights of the time signals that apply to ``query`` (``when`` if it asks when, ``date`` if it names one)."""
    return {"timed": weights.timed, "when": weights.when if asks_when(query) else 0.0,
            "date": weights.date if weights.date and named_dates(query) else 0.0}


def turns_around(prev: np.ndarray, nxt: np.ndarray, row: int, turns: int) -> dict[int, int]:
    """The rows within ``turns`` previous / next links of ``row`` (``prev`` / ``nxt``: -1 = none), ``row`` left out,
    each with its distance in links (the nearer way when both reach it), nearest first on each side."""
    out: dict[int, int] = {}
    for links in (prev, nxt):
        at = row
        for distance in range(1, max(turns, 0) + 1):
            at = int(links[at])
            if at < 0:
                break
            if at != row:
                out[at] = min(out.get(at, distance), distance)
    return out


def near_shares(near: float, distances: list[int]) -> np.ndarray:
    """The share of the best hit's value a turn ``d`` links from it ranks at least: ``near ** d`` (0.8, 0.64,
    0.51 at near 0.8), so the reply next to the best hit is lifted most and one three turns away less."""
    return near ** np.asarray(distances, dtype=np.float64)


def near_best(query: str, index: MemoryIndex, rows: np.ndarray, best: np.ndarray, values: np.ndarray,
              fused: np.ndarray, gate: Callable[[np.ndarray], np.ndarray], weights: FusionWeights,
              k: int) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """For a query that asks when, the turns within ``weights.near_turns`` of the best hit (``best[0]``, value
    ``values[0]``) rank at least ``weights.near ** d`` times its value, ``d`` links away (engine/fusion.py,
    ``near_shares``): (the ``k`` best positions then,
    their values, the positions so raised). ``fused`` and ``gate`` as ``top_with_time`` takes them; a turn outside the
    candidate ``rows`` (a filter left it out) stays out."""
    if not weights.near or best.size == 0 or not asks_when(query):
        return best, values, set()
    distance = turns_around(index.prev, index.next, int(rows[best[0]]), weights.near_turns)
    around = np.array(list(distance), dtype=np.int64)
    pos = around if rows.size == len(index) else np.flatnonzero(np.isin(rows, around))
    if pos.size == 0:
        return best, values, set()
    own = fused[pos] + fuse(time_signals(query, index, rows[pos]), time_weights(query, weights)) * gate(pos)
    shares = near_shares(weights.near, [distance[int(r)] for r in rows[pos].tolist()])
    lifted = np.maximum(own, shares * float(values[0]))
    value = dict(zip(best.tolist(), values.tolist()))  # a turn lifted already (an answer) keeps the higher value
    now = [value.get(p, a) for p, a in zip(pos.tolist(), own.tolist())]
    raised = {int(p) for p, a, b in zip(pos.tolist(), now, lifted.tolist()) if b > a}
    value.update({p: max(a, b) for p, a, b in zip(pos.tolist(), now, lifted.tolist())})
    at = np.array(list(value), dtype=np.int64)
    got = np.array(list(value.values()), dtype=np.float64)
    order = np.lexsort((at, -got))[:k]  # ties by position, as top_k
    return at[order], got[order], raised & set(at[order].tolist())


def top_with_time(query: str, index: MemoryIndex, rows: np.ndarray, fused: np.ndarray,
                  gate: Callable[[np.ndarray], np.ndarray], weights: FusionWeights,
                  k: int) -> tuple[np.ndarray, np.ndarray]:
    """(the ``k`` best positions in ``fused`` once the weighted time signals are added, each times the gate of its
    position (``gate(positions)``, engine/fusion.py: at most 1), their fused values), exact, at
    the cost of reading only rows that can gain: the first ``k`` by ``fused``, with their time signals added, give a
    floor the final k-th best is above; a row outside them gains only if it states a time (its ``refs``) or its own
    month is one the query names, and only if within the weights of that floor. A negative time weight reads every
    row."""
    first = top_k(fused, k)
    named = named_dates(query) if weights.date else []
    w = time_weights(query, weights)
    if not any(w.values()) or first.size == 0:
        return first, fused[first]
    if min(w.values()) < 0:
        pool = np.arange(fused.size)
    elif first.size < fused.size:
        floor = float((fused[first] + fuse(time_signals(query, index, rows[first]), w) * gate(first)).min())
        every = rows.size == len(index)  # every row (candidate rows are distinct): no copies
        gains = (index.refs if every else index.refs[rows]) != 0  # the rows that can gain: a time expression,
        if w["date"]:  # or a month of their own the query names
            gains |= month_named(named, index.months if every else index.months[rows])
        gains &= fused >= floor - sum(w.values())
        gains[first] = True
        pool = np.flatnonzero(gains)
    else:  # every candidate is among the first k
        pool = np.sort(first)
    values = fused[pool] + fuse(time_signals(query, index, rows[pool]), w) * gate(pool)
    order = top_k(values, k)
    return pool[order], values[order]


def search(ws: Workspace, index: MemoryIndex, namespace: str, query: str, k: int, rows: np.ndarray | None,
           weights: FusionWeights = FusionWeights()) -> list[Hit]:
    """The ``k`` best candidate rows (None = all) for ``query``, each with its calibrated score and its signals."""
    if len(index) == 0 or k <= 0 or (rows is not None and rows.size == 0):
        return []
    sig = gather(ws, index, namespace, query, rows, timing=False, mention=bool(weights.mention))
    content = fuse(sig.values, weights.content())
    fused = content  # + the lifts times their gate, computed only where a lift is (the time lifts: top_with_time)
    mention = sig.values.get("mention")
    if mention is not None and weights.mention:
        at = np.flatnonzero(mention)
        fused = content.copy()
        fused[at] += weights.mention * mention[at] * weights.gate(content[at])
    gate = lambda at: weights.gate(content[at])  # noqa: E731
    wanted = max(k, weights.bridge_hits) if weights.bridge else k  # the bridge stage reads the first bridge_hits
    best, values = top_with_time(query, index, sig.rows, fused, gate, weights, wanted)
    def own(at: np.ndarray) -> np.ndarray:  # the values of these positions with their time lifts
        return fused[at] + fuse(time_signals(query, index, sig.rows[at]), time_weights(query, weights)) * gate(at)

    best, values, answered = answer_best(index.next, index.asks, sig.rows, best, values, own, weights, wanted)
    best, values, raised = near_best(query, index, sig.rows, best, values, fused, gate, weights, wanted)
    best, fused, bridged = bridge_best(ws, index, namespace, query, sig.rows, best, values, own, weights, k)
    timing = time_signals(query, index, sig.rows[best])
    scores = weights.calibration(fused)
    out: list[Hit] = []
    for n, (j, score) in enumerate(zip(best.tolist(), np.atleast_1d(scores).tolist())):
        i = int(sig.rows[j])
        dense = float(sig.values["dense"][j])
        signals: dict[str, float] = {"dense": float(index.own[i] @ sig.query_vector)}
        if abs(dense - signals["dense"]) > 1e-6:
            signals["dense_context"] = dense
        if sig.bm25[i] > 0:
            signals["bm25"] = float(sig.bm25[i])
            signals["keyword"] = float(sig.values["keyword"][j])
        if sig.values["neighbour"][j] > 0:
            signals["neighbours"] = float(sig.values["neighbour"][j])
        mention = sig.values.get("mention")
        if mention is not None and mention[j]:
            signals["mention"] = 1.0
        for name in ("timed", "date"):
            if name in timing and timing[name][n]:
                signals[name] = 1.0
        if j in raised:
            signals["near"] = 1.0
        if j in answered:
            signals["answer"] = 1.0
        if j in bridged:
            signals["bridge"] = 1.0
        out.append(Hit(index.ids[i], float(score), signals))
    return out
