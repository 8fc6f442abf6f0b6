"""``ContextGraph``'s knowledge-graph algorithms (``kg_algorithms=True``): link prediction and path-finding.

``GraphAlgorithms`` is composed by the graph (``graph.algorithms``); the computation is in
``engine/linkpred.py`` and ``engine/paths.py`` over the graph's cached CSR (which, for a principal
who may not read everything, holds only what it sees). The undirected neighbour sets that link
prediction reads are cached through the workspace until the change counter moves.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..engine import linkpred, paths
from ..engine.traversal import CSR, blocked_edges, type_codes
from ..errors import ValidationError
from ..model import utcnow
from ..store.base import Store


class AlgorithmGraph(Protocol):
    """What the algorithms read of a graph (a ``ContextGraph`` is one)."""

    kg_algorithms: bool

    def csr(self, as_of: Any = None) -> CSR: ...

    def user_id(self, store_id: str) -> str: ...

    def require(self, node_id: str) -> str: ...

    def cached(self, what: str, build: Callable[[], Any]) -> Any: ...

    @property
    def store(self) -> Store: ...

    @property
    def scope(self) -> Any: ...


class GraphAlgorithms:
    def __init__(self, graph: AlgorithmGraph) -> None:
        self.graph = graph

    def check(self) -> None:
        if not self.graph.kg_algorithms:
            raise ValidationError("kg_algorithms is off for this graph (path-finding and link prediction); "
                                  "construct ContextGraph(kg_algorithms=True)", option="kg_algorithms")

    def _blocked(self, csr: CSR) -> set[int]:
        return blocked_edges(csr, utcnow()) if csr.timed else set()

    def _index(self, csr: CSR, node_id: str) -> int | None:
        return csr.index.get(self.graph.require(node_id))

    def node_kinds(self) -> dict[str, str]:
        """Store id -> node type of every node in the graph's scope (cached until the store changes)."""
        return self.graph.cached("kinds", lambda: {n.id: n.kind for n in self.graph.store.find_nodes(
            namespace=self.graph.scope, with_content=False, order="none")})

    # --- link prediction --------------------------------------------------------------------
    def predict_links(self, node_id: str | None = None, top_k: int = 10, method: str = "adamic_adar",
                      relationship_types: Sequence[str] | None = None,
                      node_type: str | None = None) -> list[dict[str, Any]]:
        self.check()
        csr = self.graph.csr()
        types = None if relationship_types is None else tuple(sorted(relationship_types))
        nbrs = self.graph.cached(f"linkpred-neighbours:{types}", lambda: linkpred.neighbour_sets(
            csr, type_codes(csr, types), self._blocked(csr)))
        start = None
        if node_id is not None:
            start = self._index(csr, node_id)
            if start is None:  # an isolated node: no neighbours, nothing to predict from
                return []
        mask = None
        if node_type is not None:
            kinds = self.node_kinds()
            mask = np.fromiter((kinds.get(sid) == node_type for sid in csr.ids), dtype=bool, count=csr.n)
        found = linkpred.predict(csr, nbrs, method, top_k, start, mask)
        uid = self.graph.user_id
        return [{"source": uid(csr.ids[u]), "target": uid(csr.ids[v]), "score": float(s), "method": method}
                for u, v, s in found]

    # --- paths ------------------------------------------------------------------------------
    def k_shortest_paths(self, source_id: str, target_id: str, k: int = 3, weighted: bool = False,
                         max_hops: int | None = None, direction: str = "out",
                         relationship_types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        self.check()
        if max_hops is not None and max_hops < 0:
            raise ValidationError(f"max_hops must be >= 0 (got {max_hops})", max_hops=max_hops)
        csr = self.graph.csr()
        s, t = self.graph.require(source_id), self.graph.require(target_id)
        if s == t:
            return [{"path": [source_id], "length": 0.0, "hops": 0}]
        if s not in csr.index or t not in csr.index:
            return []
        nbrs = paths.neighbours(csr, direction, type_codes(csr, relationship_types), self._blocked(csr))
        found = paths.k_shortest(nbrs, csr.index[s], csr.index[t], k, weighted, max_hops)
        uid = self.graph.user_id
        return [{"path": [uid(csr.ids[i]) for i in p], "length": float(cost), "hops": len(p) - 1}
                for p, cost in found]

    def weighted_path(self, source_id: str, target_id: str, max_hops: int | None = None,
                      direction: str = "out") -> list[str] | None:
        found = self.k_shortest_paths(source_id, target_id, 1, True, max_hops, direction)
        return found[0]["path"] if found else None

