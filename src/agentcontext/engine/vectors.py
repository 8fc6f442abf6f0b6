"""Exact vector search over the store's vectors: one float32 matrix, one matmul per query.

``load_matrix`` builds the matrix from ``store.load_vectors``; the caller caches it by the change
counter (``Workspace.cached``). With ``use_faiss`` the same rows go into a faiss ``IndexFlatIP``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..store.base import Store


@dataclass
class VectorMatrix:
    ids: list[str]
    matrix: np.ndarray
    faiss_index: Any = None

    def search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        if not self.ids or k <= 0:
            return []
        k = min(k, len(self.ids))
        if self.faiss_index is not None:
            scores, rows = self.faiss_index.search(query.reshape(1, -1).astype(np.float32), k)
            return [(self.ids[int(r)], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
        scores = self.matrix @ query
        part = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        order = part[np.lexsort((part, -scores[part]))]
        return [(self.ids[int(i)], float(scores[i])) for i in order]


def load_matrix(store: Store, model: str, namespace: str | Sequence[str] | None = None,
                kind: str | Sequence[str] | None = None, use_faiss: bool = False) -> VectorMatrix:
    """The matrix of every active node's vector in ``namespace``/``kind`` for ``model``."""
    ids, matrix = store.load_vectors(model, namespace, kind)
    index = None
    if use_faiss and ids:
        import faiss  # checked at VectorStore construction

        index = faiss.IndexFlatIP(matrix.shape[1])
        index.add(np.ascontiguousarray(matrix, dtype=np.float32))
    return VectorMatrix(ids, matrix, index)
