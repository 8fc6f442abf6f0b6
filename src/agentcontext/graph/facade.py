"""AgentContext graph methods: ``load_graph`` and proximity blending for retrieval and precedents.

Proximity: the query's anchors are the graph nodes it names (relevance 1) and its best BM25 matches
in the graph's text index (relevance scaled to 0..1). A result is placed in the graph by its own id
(memories and decisions can be nodes) and by the nodes its content names; its proximity is
``max relevance / (1 + hops)`` over anchors and placements, within ``max_expansion_hops`` edges in
either direction (0 beyond). Blending gives
``combined_score = (1 - w) * semantic_score + w * proximity_score``.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from ..errors import ValidationError

_WORD = re.compile(r"\w+")


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

    def _name_index(self) -> dict[str, list[str]]:
        """Lower-cased node names (key and title) -> node ids, cached until the graph changes."""
        graph = self.knowledge_graph

        def build() -> dict[str, list[str]]:
            index: dict[str, list[str]] = {}
            for node in graph.store.find_nodes(namespace=graph.scope, with_content=False, order="none"):
                for name in {node.key, node.title}:
                    words = " ".join(_WORD.findall(name.lower()))
                    if words and len(words) > 1:
                        index.setdefault(words, []).append(graph.user_id(node.id))
            return index

        return graph.workspace.cached(graph._cache_key("names"), build)

    def mentioned_nodes(self, text: str, max_words: int = 4) -> list[str]:
        """Graph nodes whose name appears in ``text`` as whole words (n-grams up to ``max_words``)."""
        if self.knowledge_graph is None:
            return []
        index = self._name_index()
        words = _WORD.findall(text.lower())
        found: dict[str, None] = {}
        for n in range(1, max_words + 1):
            for i in range(len(words) - n + 1):
                for nid in index.get(" ".join(words[i:i + n]), ()):
                    found[nid] = None
        return list(found)

    def query_anchors(self, query: str, limit: int = 5) -> dict[str, float]:
        """The query's anchors: nodes it names (relevance 1.0) and its best text matches (scaled to 0..1)."""
        if self.knowledge_graph is None or not query.strip():
            return {}
        hits = self.knowledge_graph.query(query, limit=limit)
        top = max((h["score"] for h in hits), default=0.0)
        anchors = {h["id"]: (h["score"] / top if top > 0 else 0.0) for h in hits}
        anchors.update({nid: 1.0 for nid in self.mentioned_nodes(query)})
        return anchors

    def proximity_scores(self, query: str, node_ids: Iterable[str], hops: int | None = None,
                         anchors: dict[str, float] | None = None,
                         texts: dict[str, str] | None = None) -> dict[str, float]:
        """Graph proximity (0..1) of each item to the query's anchors.

        An item is placed in the graph by its own id (when it is a node) and by the nodes its text
        (``texts[id]``) names; it scores ``max relevance / (1 + hops)`` over those placements and anchors.
        """
        wanted = list(dict.fromkeys(node_ids))
        scores = {nid: 0.0 for nid in wanted}
        graph = self.knowledge_graph
        if graph is None or not wanted:
            return scores
        depth = self.max_expansion_hops if hops is None else hops
        places = {nid: ([nid] if graph.resolve(nid) is not None else [])
                  + self.mentioned_nodes((texts or {}).get(nid, "")) for nid in wanted}
        for anchor, relevance in (anchors if anchors is not None else self.query_anchors(query)).items():
            if graph.resolve(anchor) is None:
                continue
            distances = graph.hop_distances(anchor, max_hops=depth, direction="both")
            for nid, spots in places.items():
                for spot in spots:
                    h = distances.get(spot)
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
        texts = {str(r[id_key]): str(r.get("content", "")) for r in results}
        prox = self.proximity_scores(query, list(texts), hops, texts=texts) if w > 0 else {}
        out = []
        for r in results:
            sem = float(r.get("semantic_score", r[score_key]))
            p = prox.get(str(r[id_key]), 0.0)
            combined = (1.0 - w) * sem + w * p
            out.append({**r, "semantic_score": sem, "proximity_score": p, "combined_score": combined,
                        score_key: combined})
        out.sort(key=lambda r: -r["combined_score"])
        return out
