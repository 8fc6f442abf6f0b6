"""Memory search's hits put in the reranker's order (engine/rerank.py): the first candidates' texts, as they were
embedded ("Speaker: text"), scored again by the reranking model and blended with their first-stage score."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..engine import rerank as reranking
from ..model import Node
from .records import memory_text
from .search import Hit


def reranked(workspace: Any, query: str, hits: Sequence[Hit], nodes: dict[str, Node]) -> list[Hit]:
    """``hits`` (first-stage order) in the blended order; each keeps its score, and its signals gain the reranking
    model's cosine (``rerank``) and the blended value (``reranked``)."""
    kept = [h for h in hits if h.id in nodes]
    if not kept:
        return list(hits)
    texts = [memory_text(nodes[h.id].title or "", nodes[h.id].content or "") for h in kept]
    cache = workspace.held("rerank:vectors", reranking.VectorCache)
    values, cosines = reranking.rerank(workspace.store, query, texts, cache)
    out = []
    for i in np.argsort(-values, kind="stable"):
        h = kept[int(i)]
        out.append(Hit(h.id, h.score, {**h.signals, "rerank": float(cosines[i]), "reranked": float(values[i])}))
    return out
