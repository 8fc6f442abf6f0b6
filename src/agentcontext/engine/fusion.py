"""Fusion: normalise dense and BM25 signals, smooth over neighbours, fuse, blend, rank.

Pure numpy over candidate rows; services decide which rows are candidates. The defaults were
tuned on the LoCoMo development split (see ``eval_locomo.py`` and the benchmark notes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

import numpy as np

# Words that carry no topic in a question; dropped from the BM25 query (the dense query keeps them).
STOPWORDS = frozenset(
    "a an the is are was were be been being am do does did doing done have has had having i me my mine we us our "
    "you your yours he him his she her hers it its they them their what which who whom whose when where why how "
    "this that these those to of in on at by for with about from as into onto over under and or but if then so "
    "than too very can could would should will shall may might must not no nor yes any some all each every other "
    "such only own same just also ever there here up down out off again once s t don ve ll re d m".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class FusionWeights:
    """How the signals combine: ``dense`` + (1 - ``dense``) BM25, plus the mention boost."""

    dense: float = 0.5
    neighbour: float = 0.4  # share of a neighbouring turn's BM25 score a turn inherits
    mention: float = 0.2  # boost when the query names the memory's speaker/title


# In a large store, a word found in more than COMMON_SHARE of the memories is left out of the BM25
# query: SQLite scores every row a term matches (O(matches)), and such a word's IDF is low anyway.
# Measured at 100k memories: a 4-word query over words in ~5% of rows costs 30-50 ms in FTS5 alone.
COMMON_SHARE = 0.01
COMMON_MIN_DOCS = 20000


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def keyword_query(query: str, df: Mapping[str, int] | None = None, total: int = 0) -> str:
    """The query's content words for BM25: stopwords removed and, in a store of at least
    ``COMMON_MIN_DOCS`` memories, words found in more than ``COMMON_SHARE`` of them (they barely
    change BM25's order but make SQLite score every row). A query of stopwords only keeps them."""
    kept = [w for w in words(query) if w not in STOPWORDS] or words(query)
    if df is not None and total >= COMMON_MIN_DOCS:
        kept = [w for w in kept if df.get(w, 0) <= COMMON_SHARE * total]
    return " ".join(kept)


def relative(values: np.ndarray) -> np.ndarray:
    """Clip at zero and divide by the maximum, so the best candidate of a signal scores 1."""
    clipped = np.clip(values, 0.0, None)
    top = float(clipped.max()) if clipped.size else 0.0
    return clipped / top if top > 0 else clipped


def smooth_neighbours(scores: np.ndarray, prev: np.ndarray, nxt: np.ndarray, weight: float) -> np.ndarray:
    """Each row gains ``weight`` times the scores of its previous and next rows (index -1 = none)."""
    if weight == 0 or scores.size == 0:
        return scores
    out = scores.copy()
    has_prev = prev >= 0
    has_next = nxt >= 0
    out[has_prev] += weight * scores[prev[has_prev]]
    out[has_next] += weight * scores[nxt[has_next]]
    return out


def mentioned(query: str, names: list[str]) -> np.ndarray:
    """1.0 where the row's name (a speaker, a title) appears in the query as a whole word."""
    out = np.zeros(len(names), dtype=np.float32)
    if not names:
        return out
    words = set(_WORD.findall(query.lower()))
    cache: dict[str, bool] = {}
    for i, name in enumerate(names):
        if not name:
            continue
        hit = cache.get(name)
        if hit is None:
            parts = _WORD.findall(name.lower())
            hit = cache[name] = bool(parts) and all(p in words for p in parts)
        if hit:
            out[i] = 1.0
    return out


def fuse(dense: np.ndarray, bm25: np.ndarray, mention: np.ndarray | None, weights: FusionWeights) -> np.ndarray:
    """The fused score of every candidate row."""
    score = weights.dense * relative(dense) + (1.0 - weights.dense) * relative(bm25)
    if mention is not None and weights.mention:
        score = score + weights.mention * mention
    return score


def blend(first: float, second: float, weight: float) -> float:
    """``(1 - weight) * first + weight * second``: how one score is mixed into another (graph, structure)."""
    return (1.0 - weight) * first + weight * second


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Ids by score, best first, ties by id (the deterministic order every ranked list uses)."""
    return sorted(scores, key=lambda i: (-scores[i], i))
