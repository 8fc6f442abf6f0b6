"""A second stage over memory search's first candidates: a stronger model's cosine blended with their rank.

No cross-encoder or late-interaction reranker ships its weights in a package on PyPI (surveyed for issue 29:
flashrank, mxbai-rerank, local-reranker, bge-m3-lite, fastretrieval and the others download theirs at run time;
small-hybrid-reranker ships a pickled scikit-learn model, not a cross-encoder): so the reranker is a stronger
bi-encoder that does ship, all-mpnet-base-v2 (embed/mpnet_onnx.py), over the first ``POOL`` candidates:

    value = (1 - WEIGHT) * (1 - first-stage rank / POOL) + WEIGHT * max(cosine(query, candidate), 0)

(rank 0 for the best. Blending with the first-stage score instead lowered recall at every weight: its calibrated
scores saturate near 1 at the top, so the first stage's order is lost in them.)

Measured by leave-one-conversation-out on the LoCoMo dev split (benchmarks/rerank_loco.py: pool 10, 15, 20, 30 and
weight 0 to 1 by 0.1, chosen on four conversations, applied to the fifth): every fold chose pool 30, weight 0.5 in
four and 0.3 in one; pooled held out R@5 0.729 -> 0.737, R@10 0.820 -> 0.828 (multi-hop 0.401 / 0.573 -> 0.411 /
0.579, temporal 0.885 / 0.935 -> 0.885 / 0.950, open-domain 0.445 / 0.564 -> 0.485 / 0.561, single-hop 0.811 / 0.888
-> 0.818 / 0.894). Shipped: the mode, pool 30, weight 0.5; off by default (it costs a second model).
With the answer stage (memory/answers.py; measured together in the second edition, the same protocol over memory
search as shipped since): every fold chose pool 30, weight 0.5; held out R@5 0.738 -> 0.745, R@10 0.829 -> 0.837,
every category up (multi-hop 0.402 / 0.573 -> 0.415 / 0.583, temporal 0.885 / 0.935 -> 0.888 / 0.950, open-domain
0.445 / 0.587 -> 0.485 / 0.595, single-hop 0.829 / 0.901 -> 0.831 / 0.906).

Results keep their first-stage ``score`` (the absolute relevance ``min_score`` applies to) and come in the blended
order; the cosine is among their ``signals`` as ``rerank`` and the blended value as ``reranked``. The candidates'
vectors are cached in the store by content hash under the reranking model's name (embed/cache.py), so a memory is
embedded by it once: ``prepare`` does it when memories are stored with the reranker on; a retrieve never writes (the
store may be a read replica): it embeds the candidates the store has no vector for (stored before the reranker was
on) and keeps them in memory (``VectorCache``, per workspace).

On by a setting: ``AgentMemory(rerank=True)`` or ``AGENTCONTEXT_RERANK=1``; ``AGENTCONTEXT_RERANK_MODEL`` names
another registered model (embed/models.py).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..embed.cache import embed_texts
from ..embed.models import MPNET, QueryEmbedder, load_model, spec_of
from ..model import content_hash

ENV = "AGENTCONTEXT_RERANK"
MODEL_ENV = "AGENTCONTEXT_RERANK_MODEL"
POOL = 30
WEIGHT = 0.5


def enabled(flag: bool | None) -> bool:
    """``flag`` when given, else ``AGENTCONTEXT_RERANK`` (1/true/yes/on)."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def reranker() -> Any:
    """The reranking model's embedder (``AGENTCONTEXT_RERANK_MODEL`` or all-mpnet-base-v2), its files checked."""
    return load_model(spec_of(os.environ.get(MODEL_ENV, "").strip() or MPNET).name)


def query_vector(embedder: Any, text: str) -> np.ndarray:
    return embedder.embed_query(text) if isinstance(embedder, QueryEmbedder) else embedder.embed([text])[0]


def blend(cosines: np.ndarray, weight: float = WEIGHT) -> np.ndarray:
    """The blended value of candidates given in first-stage order (rank 0 first) with these reranker cosines."""
    n = len(cosines)
    ranks = 1.0 - np.arange(n, dtype=np.float64) / max(n, 1)
    return (1.0 - weight) * ranks + weight * np.clip(np.asarray(cosines, dtype=np.float64), 0.0, 1.0)


def prepare(store: Any, texts: Sequence[str]) -> None:
    """Cache the reranking model's vectors of ``texts`` (what memories embed) in the store."""
    if texts:
        embed_texts(store, reranker(), list(texts))


class VectorCache:
    """The reranking model's vectors of texts the store holds none for (stored before the reranker was on), kept in
    memory, at most ``size`` of them: a retrieve never writes to the store (it may be a read replica)."""

    def __init__(self, size: int = 20_000) -> None:
        self.size, self._vectors = size, OrderedDict()  # type: ignore[var-annotated]
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            vec = self._vectors.get(key)
            if vec is not None:
                self._vectors.move_to_end(key)
            return vec

    def put(self, key: str, vec: np.ndarray) -> None:
        with self._lock:
            self._vectors[key] = vec
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)


def candidate_vectors(store: Any, embedder: Any, texts: Sequence[str], cache: VectorCache) -> np.ndarray:
    """The reranking model's vectors of ``texts``: from the store (``prepare``), else ``cache``, else computed."""
    hashes = [content_hash(t) for t in texts]
    known = store.get_vectors(list(dict.fromkeys(hashes)), embedder.name)
    for h in hashes:
        if h not in known and (vec := cache.get(h)) is not None:
            known[h] = vec
    todo = {h: t for h, t in zip(hashes, texts) if h not in known}
    if todo:
        for h, vec in zip(todo, embedder.embed(list(todo.values()))):
            cache.put(h, vec)
            known[h] = vec
    return np.stack([known[h] for h in hashes]).astype(np.float32)


def rerank(store: Any, query: str, texts: Sequence[str], cache: VectorCache,
           weight: float = WEIGHT) -> tuple[np.ndarray, np.ndarray]:
    """(blended values, cosines) of the candidates ``texts``, given in first-stage order: sort by the values."""
    embedder = reranker()
    cosines = candidate_vectors(store, embedder, texts, cache) @ query_vector(embedder, query)
    return blend(cosines, weight), cosines
