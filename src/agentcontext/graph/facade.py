"""AgentContext graph methods: ``load_graph`` and proximity blending for retrieval and precedents.

Proximity: the query's anchors are the graph nodes its text matches (BM25 over the graph's text
index, relevance scaled to 0..1); a node's proximity is ``max over anchors of relevance / (1 + hops)``
within ``max_expansion_hops`` edges in either direction (0 beyond). Blending gives
``combined_score = (1 - w) * semantic_score + w * proximity_score``.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..errors import ValidationError


class GraphMethods:
    knowledge_graph: Any
    proximity_weight: float
    max_expansion_hops: int

    def _init_graph(self) -> None:
        """Nothing to wire: the graph is ``knowledge_graph`` (created on demand by ``load_graph``)."""

    def _graph(self) -> Any:
        if self.knowledge_graph is None:
            from .context_graph import ContextGraph

            self.knowledge_graph = ContextGraph()
        return self.knowledge_graph

    def load_graph(self, path: str, format: str | None = None) -> dict[str, Any]:
        """Replace the knowledge graph's state from a saved graph (JSON file or Markdown directory)."""
        graph = self._graph()
        graph.load_from_file(path, format=format)
        return graph.stats()

    def query_anchors(self, query: str, limit: int = 5) -> dict[str, float]:
        """Graph nodes the query text matches, with relevance scaled so the best is 1.0."""
        if self.knowledge_graph is None or not query.strip():
            return {}
        hits = self.knowledge_graph.query(query, limit=limit)
        top = max((h["score"] for h in hits), default=0.0)
        return {h["id"]: (h["score"] / top if top > 0 else 0.0) for h in hits}

    def proximity_scores(self, query: str, node_ids: Iterable[str], hops: int | None = None,
                         anchors: dict[str, float] | None = None) -> dict[str, float]:
        """Graph proximity (0..1) of each node to the query's anchors; 0 for nodes the graph does not hold."""
        wanted = list(dict.fromkeys(node_ids))
        scores = {nid: 0.0 for nid in wanted}
        graph = self.knowledge_graph
        if graph is None or not wanted:
            return scores
        depth = self.max_expansion_hops if hops is None else hops
        for anchor, relevance in (anchors if anchors is not None else self.query_anchors(query)).items():
            if graph.resolve(anchor) is None:
                continue
            distances = graph.hop_distances(anchor, max_hops=depth, direction="both")
            for nid in wanted:
                h = distances.get(nid)
                if h is not None:
                    scores[nid] = max(scores[nid], relevance / (1.0 + h))
        return scores

    def blend_proximity(self, results: Sequence[dict[str, Any]], query: str, proximity_weight: float | None = None,
                        id_key: str = "id", score_key: str = "score",
                        hops: int | None = None) -> list[dict[str, Any]]:
        """Add ``semantic_score``, ``proximity_score``, ``combined_score`` and re-rank by the combined score.

        ``score`` becomes the combined score. With weight 0 the order is the semantic order.
        """
        w = self.proximity_weight if proximity_weight is None else float(proximity_weight)
        if not 0.0 <= w <= 1.0:
            raise ValidationError(f"proximity_weight must be in [0, 1], got {w}", proximity_weight=w)
        prox = self.proximity_scores(query, [str(r[id_key]) for r in results], hops) if w > 0 else {}
        out = []
        for r in results:
            sem = float(r.get("semantic_score", r[score_key]))
            p = prox.get(str(r[id_key]), 0.0)
            combined = (1.0 - w) * sem + w * p
            out.append({**r, "semantic_score": sem, "proximity_score": p, "combined_score": combined,
                        score_key: combined})
        out.sort(key=lambda r: -r["combined_score"])
        return out
