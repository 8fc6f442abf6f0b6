"""Hybrid memory search: dense (with conversation context) + BM25 (FTS5) + speaker mentions, fused."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..engine.fusion import FusionWeights, fuse, keyword_query, mentioned, smooth_neighbours
from ..engine.vectors import top_k
from ..workspace import Workspace
from .index import MemoryIndex
from .records import KIND

BM25_LIMIT = 1000


@dataclass
class Hit:
    id: str
    score: float
    signals: dict[str, float]


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


def search(ws: Workspace, index: MemoryIndex, namespace: str, query: str, k: int, rows: np.ndarray | None,
           weights: FusionWeights = FusionWeights()) -> list[Hit]:
    """The ``k`` best candidate rows (None = all) for ``query``, each with the signals behind its score."""
    n = len(index)
    if rows is None:
        rows = np.arange(n, dtype=np.int64)
        every = True
    else:
        every = False
    if rows.size == 0 or k <= 0:
        return []
    qv = ws.embed_query(query)
    dense = index.rows.scores(qv, None if every else rows, plane=index.dense_plane)[: rows.size]
    bm25_raw = np.zeros(n, dtype=np.float32)
    keywords = keyword_query(query, index.df, n)
    hits = ws.store.text_search(keywords, namespace=namespace, kind=KIND, limit=BM25_LIMIT) if keywords else []
    for nid, score in hits:
        i = index.row.get(nid)
        if i is not None:
            bm25_raw[i] = score
    bm25_all = smooth_neighbours(bm25_raw, index.prev, index.next, weights.neighbour)
    bm25 = bm25_all[rows]
    mention = None
    if weights.mention and len(index.title_names) > 1:
        named = mentioned(query, index.title_names)
        if named.any():
            mention = named[index.title_codes[rows]]
    fused = fuse(dense, bm25, mention, weights)
    out: list[Hit] = []
    for j in top_k(fused, k):
        i = int(rows[j])
        signals: dict[str, float] = {"dense": float(index.own[i] @ qv)}
        if abs(float(dense[j]) - signals["dense"]) > 1e-6:
            signals["dense_context"] = float(dense[j])
        if bm25_raw[i] > 0:
            signals["bm25"] = float(bm25_raw[i])
        if bm25[j] > bm25_raw[i]:
            signals["bm25_neighbours"] = float(bm25[j] - bm25_raw[i])
        if mention is not None and mention[j]:
            signals["mention"] = weights.mention
        out.append(Hit(index.ids[i], float(fused[j]), signals))
    return out
