"""The bridge stage (issue 29, evidence across sessions; off unless ``FusionWeights.bridge`` is set): the rare names
the first hits hold and the query does not pull up the other memories that hold them.

A multi-hop question's evidence lies in more than one session (26 of 27 multi-hop misses of the issue's failure
analysis): one turn is found through the question's words, and the turn of another session that names the same
place, person or event again is the rest of the answer, though it names nothing the question does. So each of the
first ``bridge_hits`` hits (value above 0) gives its capitalised words (``names``: the entities it names, and a
sentence's first word) that the query does not hold, that are no speaker's name nor a stopword, and that 1 to
``bridge_rare`` memories of the namespace hold (the memory index's word counts, by stem); every other candidate
memory holding one of them (found by the text index: a rare word's memories are few) gains ``bridge`` times that
hit's value, once per hit, and reports ``bridge``. Measured by leave-one-conversation-out on LoCoMo's dev split
(benchmarks/locomo_bridge.py: hits, rarity, weight and variants chosen per fold): held out R@5 / R@10 0.741 / 0.830
-> 0.746 / 0.832, every category up or equal (multi-hop R@5 0.401 -> 0.415, open-domain 0.445 -> 0.456); with the
option's values on all five (``agentcontext eval locomo --bridge``) 0.748 / 0.834. An option, not the default: the
gain is small, and a store that searches itself (PostgreSQL, memory/server_search.py) has no such stage, so the
default would break the parity of the two backends' rankings (``recall`` refuses the weight there rather than
ignore it). Cost: one read of the first hits' texts and one text-index query per rare name; retrieve p50 at 10,000
memories 1.01x without it (benchmarks/memory_cost.py --bridge, same run; its facts hold few rare names), on LoCoMo's
conversations 1.05-1.20x (benchmarks/locomo_bridge_cost.py, three runs at load 10-13).
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ..engine.fusion import STOPWORDS, FusionWeights, stemmed, words
from ..workspace import Workspace
from .index import MemoryIndex
from .records import KIND

CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
BRIDGE = 0.2  # the option's weight (``FusionWeights(bridge=BRIDGE)``; ``agentcontext eval locomo --bridge``)


def names(text: str, first: bool = True) -> list[str]:
    """The capitalised words of ``text``; without ``first``, not those that open a sentence (the text's first word,
    or one after ".", "!" or "?")."""
    out = []
    for m in CAPITALISED.finditer(text or ""):
        before = text[:m.start()].rstrip()
        if first or (before and before[-1] not in ".!?"):
            out.append(m.group())
    return out


def rare_names(text: str, skip: set[str], df: dict[str, int] | object, rare: int,
               first: bool = True) -> dict[str, str]:
    """The capitalised words of ``text`` (``names``; stem -> the word as written, lower case) whose stem is not in
    ``skip`` nor a stopword, held by 1 to ``rare`` memories (``df``: the memory index's counts by stem)."""
    out: dict[str, str] = {}
    for word in names(text, first):
        low = word.lower()
        s = stemmed(low)
        if low in STOPWORDS or s in skip or s in out:
            continue
        if 0 < int(df.get(s, 0)) <= rare:  # type: ignore[attr-defined]
            out[s] = low
    return out


def bridge_best(ws: Workspace, index: MemoryIndex, namespace: str, query: str, rows: np.ndarray, best: np.ndarray,
                values: np.ndarray, own: Callable[[np.ndarray], np.ndarray], weights: FusionWeights,
                k: int) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """(the ``k`` best positions in ``rows`` after the stage, their values, the positions it raised). ``best`` /
    ``values``: the ranking so far (at least ``weights.bridge_hits`` long when there are as many candidates);
    ``own(positions)``: the values of positions outside it (their time lifts added, as memory/search.py computes
    them); a memory outside the candidate ``rows`` (a filter left it out) stays out."""
    if not weights.bridge or best.size == 0:
        return best[:k], values[:k], set()
    first = [(int(p), float(v)) for p, v in zip(best[:weights.bridge_hits].tolist(),
                                               values[:weights.bridge_hits].tolist()) if v > 0]
    nodes = ws.store.get_nodes([index.ids[int(rows[p])] for p, _ in first])
    skip = {stemmed(w) for w in words(query)} | {stemmed(w) for name in index.title_names for w in words(name)}
    holders: dict[str, list[int]] = {}  # a rare word's memories (rows of the index)
    gain: dict[int, float] = {}  # row -> what it gains
    for p, v in first:
        node = nodes.get(index.ids[int(rows[p])])
        if node is None:
            continue
        pulled: set[int] = set()
        for s, word in rare_names(node.content or "", skip, index.df, weights.bridge_rare).items():
            if s not in holders:
                found = ws.store.text_search(word, namespace=namespace, kind=KIND, limit=weights.bridge_rare + 1)
                holders[s] = [index.row[nid] for nid, _ in found if nid in index.row]
            pulled.update(holders[s])
        pulled.discard(int(rows[p]))
        for r in pulled:
            gain[r] = gain.get(r, 0.0) + weights.bridge * v
    if not gain:
        return best[:k], values[:k], set()
    every = rows.size == len(index)
    pos = np.array(sorted(gain), dtype=np.int64) if every else np.flatnonzero(np.isin(rows, list(gain)))
    if pos.size == 0:
        return best[:k], values[:k], set()
    value = dict(zip(best.tolist(), values.tolist()))
    outside = [p for p in pos.tolist() if p not in value]
    if outside:
        value.update(zip(outside, own(np.array(outside, dtype=np.int64)).tolist()))
    for p in pos.tolist():
        value[p] += gain[int(rows[p])]
    at = np.array(list(value), dtype=np.int64)
    got = np.array(list(value.values()), dtype=np.float64)
    order = np.lexsort((at, -got))[:k]  # ties by position, as top_k
    return at[order], got[order], {int(p) for p in pos.tolist()} & set(at[order].tolist())
