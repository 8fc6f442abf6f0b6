"""``ContextGraph``'s structural node embeddings (``node_embeddings=True``): Node2Vec over the graph.

The vectors come from engine/node2vec.py (biased walks + skip-gram, numpy) over the undirected graph the
principal's CSR holds, and are cached through the workspace cache until the change counter moves, one
entry per parameter set. ``similarity`` is the cosine of two nodes' vectors; decisions use the vectors
as ``Decision.node2vec_embedding`` and as the structural part of precedent similarity (decisions/).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..engine import linkpred
from ..engine.node2vec import Node2VecParams, node2vec
from ..engine.traversal import CSR, blocked_edges
from ..errors import ValidationError
from ..model import utcnow


class EmbeddingGraph(Protocol):
    node_embeddings: bool

    def csr(self, as_of: Any = None) -> CSR: ...

    def resolve(self, node_id: str) -> str | None: ...

    def require(self, node_id: str) -> str: ...

    def user_id(self, store_id: str) -> str: ...

    def cached(self, what: str, build: Callable[[], Any]) -> Any: ...


class NodeEmbeddings:
    def __init__(self, graph: EmbeddingGraph) -> None:
        self.graph = graph

    def check(self) -> None:
        if not self.graph.node_embeddings:
            raise ValidationError("node_embeddings is off for this graph (Node2Vec structural embeddings); "
                                  "construct ContextGraph(node_embeddings=True)", option="node_embeddings")

    def params(self, **given: Any) -> Node2VecParams:
        try:
            params = Node2VecParams(**given)
            params.check()
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"node2vec: {exc}", **{k: v for k, v in given.items() if isinstance(v, (int, float))}
                                  ) from exc
        return params

    def matrix(self, params: Node2VecParams) -> tuple[CSR, np.ndarray]:
        """The CSR and one unit vector per node of it (cached until the graph changes)."""
        self.check()
        csr = self.graph.csr()

        def build() -> np.ndarray:
            blocked = blocked_edges(csr, utcnow()) if csr.timed else set()
            return node2vec(linkpred.neighbour_sets(csr, None, blocked), params)

        return csr, self.graph.cached(f"node2vec:{params}", build)

    def vectors(self, node_ids: Sequence[str] | None = None, **params: Any) -> dict[str, list[float]]:
        """Node id -> structural vector (every node, or those of ``node_ids`` that exist; isolated ones: zeros)."""
        csr, m = self.matrix(self.params(**params))
        if node_ids is None:
            return {self.graph.user_id(sid): m[i].tolist() for i, sid in enumerate(csr.ids)}
        out = {}
        for node_id in node_ids:
            sid = self.graph.resolve(node_id)
            if sid is not None:
                i = csr.index.get(sid)
                out[node_id] = m[i].tolist() if i is not None else [0.0] * m.shape[1]
        return out

    def by_store_id(self, store_ids: Sequence[str], params: Node2VecParams | None = None) -> dict[str, np.ndarray]:
        """Store id -> vector for the ids that are nodes of the CSR (the form decisions read)."""
        csr, m = self.matrix(params or Node2VecParams())
        return {sid: m[csr.index[sid]] for sid in store_ids if sid in csr.index}

    def similar(self, node_id: str, top_k: int = 10, **params: Any) -> list[dict[str, Any]]:
        """The ``top_k`` nodes structurally most like ``node_id`` (cosine of their vectors), best first; a node
        the graph does not hold (or the principal does not see) is a NotFoundError, an isolated one has none."""
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise ValidationError(f"top_k must be a positive integer (got {top_k!r})", top_k=top_k)
        csr, m = self.matrix(self.params(**params))
        i = csr.index.get(self.graph.require(node_id))
        if i is None or not m[i].any():
            return []
        sims = m @ m[i]
        sims[i] = -np.inf
        order = np.argsort(-sims, kind="stable")[:top_k]
        return [{"id": self.graph.user_id(csr.ids[j]), "similarity": float(sims[j])} for j in order
                if np.isfinite(sims[j]) and m[j].any()]
