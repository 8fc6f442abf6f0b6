"""``ContextGraph``'s knowledge-graph algorithms (``kg_algorithms=True``): link prediction and path-finding.

``GraphAlgorithms`` is composed by the graph (``graph.algorithms``); the computation is in
``engine/linkpred.py`` and ``engine/paths.py`` over the graph's cached CSR (which, for a principal
who may not read everything, holds only what it sees). The undirected neighbour sets that link
prediction reads are cached through the workspace until the change counter moves.

On a server-side store (PostgreSQL: ``SERVER_QUERIES``), for a principal who sees everything (a
restricted view keeps its filtered CSR, as the walks do), no adjacency is loaded where the answer is
local: ``k_shortest_paths`` asks the store for the edges of a BFS level (or of the head of Dijkstra's
queue) per query, and ``predict_links(node_id)`` reads the node's two-hop neighbourhood by frontier
queries (``linkpred.predict_near``). ``predict_links`` over the whole graph (``node_id=None``) and
preferential attachment (every node ranked by degree) still build the whole CSR in this process.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..engine import linkpred, paths
from ..engine.traversal import CSR, blocked_edges, type_codes
from ..errors import ValidationError
from ..model import utcnow
from ..store.base import Capability, Store


class AlgorithmGraph(Protocol):
    """What the algorithms read of a graph (a ``ContextGraph`` is one)."""

    kg_algorithms: bool

    @property
    def restricted(self) -> bool: ...

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

    def served(self) -> bool:
        """Whether to ask the store frontier by frontier instead of loading the adjacency (a server-side store,
        and a principal who sees everything)."""
        return Capability.SERVER_QUERIES in self.graph.store.capabilities and not self.graph.restricted

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
        if node_id is not None and method != "preferential_attachment" and self.served():
            return self._predict_near(node_id, top_k, method, relationship_types, node_type)
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

    def _predict_near(self, node_id: str, top_k: int, method: str, relationship_types: Sequence[str] | None,
                      node_type: str | None) -> list[dict[str, Any]]:
        g = self.graph
        linkpred.check(method, top_k)
        sid = g.require(node_id)
        scope = g.scope
        namespace = scope if isinstance(scope, str) else None
        allowed = None
        if node_type is not None:
            def allowed(cands: list[str]) -> set[str]:
                found = g.store.get_nodes(cands)
                return {v for v, n in found.items() if n.kind == node_type and (namespace is None
                                                                               or n.namespace == namespace)}
        found = linkpred.predict_near(g.store, namespace, sid, method, top_k, relationship_types, utcnow(), allowed)
        return [{"source": g.user_id(sid), "target": g.user_id(v),
                 "score": float(score), "method": method} for v, score in found]

    # --- paths ------------------------------------------------------------------------------
    def k_shortest_paths(self, source_id: str, target_id: str, k: int = 3, weighted: bool = False,
                         max_hops: int | None = None, direction: str = "out",
                         relationship_types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        self.check()
        if max_hops is not None and max_hops < 0:
            raise ValidationError(f"max_hops must be >= 0 (got {max_hops})", max_hops=max_hops)
        if self.served():
            return self._paths_near(source_id, target_id, k, weighted, max_hops, direction, relationship_types)
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

    def _paths_near(self, source_id: str, target_id: str, k: int, weighted: bool, max_hops: int | None,
                    direction: str, relationship_types: Sequence[str] | None) -> list[dict[str, Any]]:
        g = self.graph
        s, t = g.require(source_id), g.require(target_id)
        if s == t:
            return [{"path": [source_id], "length": 0.0, "hops": 0}]
        scope = g.scope
        nbrs = paths.StoreNeighbours(g.store, scope if isinstance(scope, str) else None, direction,
                                     relationship_types, utcnow())
        found = paths.k_shortest(nbrs, s, t, k, weighted, max_hops, nbrs.prefetch)
        return [{"path": [g.user_id(x) for x in p], "length": float(cost), "hops": len(p) - 1} for p, cost in found]

    def weighted_path(self, source_id: str, target_id: str, max_hops: int | None = None,
                      direction: str = "out") -> list[str] | None:
        found = self.k_shortest_paths(source_id, target_id, 1, True, max_hops, direction)
        return found[0]["path"] if found else None

