"""Answers to questions (issue 29, elliptical turns): a turn whose previous turn asks a question ranks at least
``FusionWeights.answer`` times the value of the turn that question followed up on, when that turn is among the best
k. In a conversation the reply to "What did you think of it?" ("Super good! Rich and creamy") names nothing a query
about the coconut milk ice cream names; the turn two before it ("Coconut milk ice cream is at the top of my list")
does. The question itself is not lifted (its text is found by its own words), nor a reply to a turn that asks
nothing. Measured by leave-one-conversation-out on LoCoMo's dev split (benchmarks/locomo_loco.py, issue 29).

Exact in the top k: a reply is lifted only above ``answer`` times its source's value, so it can enter the k best only
if its source is among them (values above 0: a source of value 0 or below lifts nothing). The in-process search
lifts the replies of the k best (``answer_best``); the server's (memory/server_search.py) makes them candidates and
lifts them the same way (``lifted``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..engine.fusion import FusionWeights


def asks(text: str | None) -> bool:
    """Whether a memory's text asks a question (holds a question mark): the turn after it is an answer."""
    return bool(text) and "?" in text


def lifted(share: float, own: float, source: float) -> float:
    """A reply's value: its own, or ``share`` of its source's when that is more (a source of value <= 0 lifts
    nothing)."""
    return max(own, share * source) if source > 0 else own


def replies(nxt: np.ndarray, asked: np.ndarray, row: int) -> int:
    """The row answering the question that follows ``row`` (its next turn asks, the one after answers), or -1;
    ``nxt``, ``asked``: the memory index's next links and ``asks`` column (memory/index.py)."""
    question = int(nxt[row])
    if question < 0 or not asked[question]:
        return -1
    return int(nxt[question])


def answer_best(nxt: np.ndarray, asked: np.ndarray, rows: np.ndarray, best: np.ndarray, values: np.ndarray,
                own: Callable[[np.ndarray], np.ndarray], weights: FusionWeights,
                k: int) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """The replies to the questions that follow the ``k`` best (``best``, positions in ``rows``, with ``values``;
    ``nxt``, ``asked``: as ``replies`` takes them)
    rank at least ``weights.answer`` times their source's value: (the ``k`` best positions then, their values, the
    positions so raised, among the k best or not: a later stage may bring one in, and the server flags it so too).
    ``own(positions)``: those positions' values before this stage (their time lifts added, as memory/search.py
    ``top_with_time`` adds them); a reply outside the candidate ``rows`` (a filter left it out) stays out."""
    if not weights.answer or best.size == 0:
        return best, values, set()
    source: dict[int, float] = {}  # reply row -> its best source's value
    for j, value in zip(best.tolist(), values.tolist()):
        reply = replies(nxt, asked, int(rows[j]))
        if reply >= 0 and value > 0:
            source[reply] = max(source.get(reply, 0.0), value)
    if not source:
        return best, values, set()
    every = rows.size == nxt.size
    pos = np.array(sorted(source), dtype=np.int64) if every else np.flatnonzero(np.isin(rows, list(source)))
    if pos.size == 0:
        return best, values, set()
    value = dict(zip(best.tolist(), values.tolist()))
    raised: set[int] = set()
    for p, mine in zip(pos.tolist(), own(pos).tolist()):
        value[p] = lifted(weights.answer, mine, source[int(rows[p])])
        if value[p] > mine:
            raised.add(p)
    at = np.array(list(value), dtype=np.int64)
    got = np.array(list(value.values()), dtype=np.float64)
    order = np.lexsort((at, -got))[:k]  # ties by position, as top_k
    return at[order], got[order], raised
