"""``ContextGraph``'s analytics: the igraph engine (``engine/analytics.py``) over the graph's cached CSR.

``GraphAnalytics`` is composed by the graph (``graph.analytics``); it checks the graph's feature
flags, caches every result through the workspace until the change counter moves, and maps CSR
indices back to the graph's user ids.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from ..engine import analytics as engine
from ..engine.traversal import CSR
from ..engine.vectors import top_k as rank_top
from ..errors import ValidationError


class AnalyzedGraph(Protocol):
    """What the analytics read of a graph (a ``ContextGraph`` is one)."""

    advanced_analytics: bool
    centrality_analysis: bool
    community_detection: bool

    def csr(self, as_of: Any = None) -> CSR: ...

    def user_id(self, store_id: str) -> str: ...

    def require(self, node_id: str) -> str: ...

    def cached(self, what: str, build: Callable[[], Any]) -> Any: ...


class GraphAnalytics:
    def __init__(self, graph: AnalyzedGraph) -> None:
        self.graph = graph

    def _check(self, flag: str) -> None:
        g = self.graph
        on = {"advanced_analytics": g.advanced_analytics, "centrality_analysis": g.centrality_analysis,
              "community_detection": g.community_detection}[flag]
        if not on:
            raise ValidationError(f"{flag} is off for this graph; construct ContextGraph({flag}=True)", option=flag)

    def _cached(self, what: str, build: Callable[[], Any]) -> Any:
        return self.graph.cached(what, build)

    def _igraph(self) -> Any:
        return self._cached("igraph", lambda: engine.to_igraph(self.graph.csr()))

    def _scored(self, values: np.ndarray, top_k: int | None) -> dict[str, float]:
        csr = self.graph.csr()
        order = rank_top(values, top_k if top_k is not None else values.size)
        return {self.graph.user_id(csr.ids[i]): float(values[i]) for i in order}

    def pagerank(self, damping: float = 0.85, weighted: bool = True, top_k: int | None = None) -> dict[str, float]:
        self._check("advanced_analytics")
        values = self._cached(f"pagerank:{damping}:{weighted}",
                              lambda: engine.pagerank(self.graph.csr(), self._igraph(), damping, weighted))
        return self._scored(values, top_k)

    def centrality(self, measure: str = "degree", top_k: int | None = None) -> dict[str, float]:
        self._check("advanced_analytics")
        if measure in ("betweenness", "closeness"):
            self._check("centrality_analysis")
        if measure == "pagerank":
            return self.pagerank(top_k=top_k)
        values = self._cached(f"centrality:{measure}",
                              lambda: engine.centrality(self.graph.csr(), self._igraph(), measure))
        return self._scored(values, top_k)

    def node_centrality(self, node_id: str) -> dict[str, float]:
        graph = self.graph
        uid = graph.user_id(graph.require(node_id))
        measures = ["degree", "in_degree", "out_degree", "pagerank"]
        if graph.centrality_analysis:
            measures += ["betweenness", "closeness"]
        return {m: self.centrality(m).get(uid, 0.0) for m in measures}

    def communities(self, algorithm: str = "louvain", resolution: float = 1.0) -> dict[str, Any]:
        self._check("community_detection")
        membership, modularity = self._cached(
            f"communities:{algorithm}:{resolution}",
            lambda: engine.communities(self.graph.csr(), self._igraph(), algorithm, resolution))
        csr = self.graph.csr()
        groups: dict[int, list[str]] = {}
        for i, c in enumerate(membership):
            groups.setdefault(c, []).append(self.graph.user_id(csr.ids[i]))
        ordered = sorted(groups.values(), key=lambda g: (-len(g), g[0]))
        member_of = {uid: k for k, group in enumerate(ordered) for uid in group}
        return {"algorithm": algorithm, "count": len(ordered), "communities": ordered, "membership": member_of,
                "modularity": modularity}
