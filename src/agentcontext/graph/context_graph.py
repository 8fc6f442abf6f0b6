"""``ContextGraph``: seed 003's knowledge graph over the one store of record.

``ContextGraph()`` alone keeps everything in an in-memory SQLite store (nothing on disk);
``ContextGraph(workspace=ws)`` is the workspace graph, where knowledge docs, memories, entities
and decisions are nodes too. User node ids live in the namespace ``graph:<name>`` (store id
``graph:<name>/<node_id>``); nodes from other namespaces keep their store id as their visible id.

Access: a graph is checked under its namespace (``graph:<name>``; the workspace graph is ``graph:default``)
for its ``principal`` (None = the owner) on every call: reading and traversing need ``read``, adding and
retracting need ``write``, and the graph writes only its own namespace's nodes (purging another namespace's
node, as an erasure does, needs admin on that namespace; ``pkg:`` docs never). For a principal who may not
read everything, the graph's world is what it sees (``access.Sight``): the workspace graph spans the
namespaces it may read whole, a named graph its own namespace, and edges count only between nodes it sees,
so every traversal, path and analytic returns only those and never walks through anything else.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import access
from ..workspace import Workspace
from . import reads
from .core import GraphCore
from .records import node_dict


class ContextGraph(GraphCore):
    """Nodes and typed, weighted, time-bounded edges; traversal, analytics, persistence, cross-graph links
    (graph/core.py holds who acts, ids, the cache, the adjacency and the write and read paths)."""

    def search_nodes(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """The nodes best matching ``query`` by meaning, words and name, best first, each with an absolute
        ``score`` in [0, 1], its ``signals`` and its ``store_id`` (graph/node_search.py; what GraphRAG retrieval
        starts from). Only nodes the principal sees."""
        from .node_search import search_nodes

        return [{"id": self.user_id(h.node.id), "store_id": h.node.id, "node": node_dict(h.node, self.user_id),
                 "score": h.score, "signals": h.signals} for h in search_nodes(self, query, limit)]

    def stats(self) -> dict[str, Any]:
        self.check("read", "graph.read")
        return reads.stats(self)

    def density(self) -> float:
        return self.stats()["density"]

    def get_neighbors(self, node_id: str, hops: int = 1, relationship_types: Sequence[str] | None = None,
                      min_weight: float | None = None, skip: int = 0, limit: int | None = None,
                      include_distance_metadata: bool = False, direction: str = "out",
                      as_of: Any = None) -> list[dict[str, Any]]:
        """BFS neighbours up to ``hops``, nearest first; never via retracted or expired edges unless ``as_of``."""
        self.check("read", "graph.neighbors", node_id)
        return self.walks.neighbors(node_id, hops, relationship_types, min_weight, skip, limit,
                                    include_distance_metadata, direction, as_of)

    def get_neighbor_distances(self, node_id: str, hops: int = 3, relationship_types: Sequence[str] | None = None,
                               min_confidence: float = 0.0, direction: str = "out",
                               as_of: Any = None) -> list[dict[str, Any]]:
        """Neighbours with distance metadata, nearest hop first, then strongest confidence decay."""
        found = self.get_neighbors(node_id, hops=hops, relationship_types=relationship_types,
                                   include_distance_metadata=True, direction=direction, as_of=as_of)
        kept = [n for n in found if n["confidence_decay"] >= min_confidence]
        return sorted(kept, key=lambda n: (n["hop_count"], -n["confidence_decay"]))

    def hop_distances(self, node_id: str, max_hops: int | None = None, direction: str = "out",
                      as_of: Any = None) -> dict[str, int]:
        """BFS hop count from ``node_id`` to every reachable node (the anchor at 0)."""
        self.check("read", "graph.neighbors", node_id)
        return self.walks.hop_distances(node_id, max_hops, direction, as_of)

    def shortest_path(self, source_id: str, target_id: str, max_hops: int | None = None, direction: str = "out",
                      as_of: Any = None) -> list[str] | None:
        """Fewest-edges path as node ids, or None when ``target_id`` is unreachable (``kg_algorithms``)."""
        self.algorithms.check()
        self.check("read", "graph.path", f"{source_id} {target_id}")
        return self.walks.shortest_path(source_id, target_id, max_hops, direction, as_of)

    def k_shortest_paths(self, source_id: str, target_id: str, k: int = 3, weighted: bool = False,
                         max_hops: int | None = None, direction: str = "out",
                         relationship_types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Up to ``k`` loopless paths, shortest first: ``path`` (node ids), ``length`` (edges, or the summed
        edge weights when ``weighted``) and ``hops`` (Yen's algorithm; ``kg_algorithms``). On PostgreSQL the paths
        are searched by batched neighbour queries, never by loading the adjacency."""
        self.check("read", "graph.path", f"{source_id} {target_id}")
        return self.algorithms.k_shortest_paths(source_id, target_id, k, weighted, max_hops, direction,
                                                relationship_types)

    def predict_links(self, node_id: str | None = None, top_k: int = 10, method: str = "adamic_adar",
                      relationship_types: Sequence[str] | None = None,
                      node_type: str | None = None) -> list[dict[str, Any]]:
        """The ``top_k`` most likely missing links (``source``, ``target``, ``score``), best first, from
        ``node_id`` or over the whole graph: adamic_adar, jaccard, resource_allocation or
        preferential_attachment on the undirected graph (``kg_algorithms``; engine/linkpred.py).

        On PostgreSQL, ``node_id`` with a neighbourhood index reads only the node's two-hop neighbourhood from
        the server; over the whole graph (``node_id=None``) and with preferential attachment (which ranks every
        node by degree) the whole adjacency is loaded into this process."""
        self.check("read", "graph.analytics", node_id or "")
        return self.algorithms.predict_links(node_id, top_k, method, relationship_types, node_type)

    def node2vec(self, node_ids: Sequence[str] | None = None, **params: Any) -> dict[str, list[float]]:
        """Node2Vec structural embeddings (``node_embeddings``): node id -> unit vector, from biased random
        walks + skip-gram (engine/node2vec.py; ``dimensions``, ``walk_length``, ``num_walks``, ``p``, ``q``,
        ``window``, ``negatives``, ``epochs``, ``seed``); cached until the graph changes."""
        self.check("read", "graph.read")
        return self.embeddings.vectors(node_ids, **params)

    def structurally_similar(self, node_id: str, top_k: int = 10, **params: Any) -> list[dict[str, Any]]:
        """The nodes whose Node2Vec vectors are closest to ``node_id``'s (``id``, ``similarity``), best first."""
        self.check("read", "graph.read", node_id)
        return self.embeddings.similar(node_id, top_k, **params)

    # --- analytics (graph/analytics.py over the igraph engine) -----------------------------------
    def pagerank(self, damping: float = 0.85, weighted: bool = True, top_k: int | None = None) -> dict[str, float]:
        """PageRank (igraph PRPACK) of every node, highest first; cached until the graph changes."""
        self.check("read", "graph.analytics")
        return self.analytics.pagerank(damping, weighted, top_k)

    def centrality(self, measure: str = "degree", top_k: int | None = None) -> dict[str, float]:
        """degree / in_degree / out_degree / betweenness / closeness / pagerank, highest first."""
        self.check("read", "graph.analytics")
        return self.analytics.centrality(measure, top_k)

    def get_node_centrality(self, node_id: str) -> dict[str, float]:
        self.check("read", "graph.analytics", node_id)
        return self.analytics.node_centrality(node_id)

    def detect_communities(self, algorithm: str = "louvain", resolution: float = 1.0) -> dict[str, Any]:
        """Communities on the undirected graph (Louvain or Leiden), largest first, with modularity."""
        self.check("read", "graph.analytics")
        return self.analytics.communities(algorithm, resolution)

    # --- decisions (the decisions service owns the logic) ---------------------------------------
    def record_decision(self, category: str, scenario: str, reasoning: str, outcome: str, confidence: float,
                        entities: Sequence[str] | None = None, decision_maker: str = "", **kwargs: Any) -> str:
        from ..decisions import recorder

        return recorder.record_decision(self, category=category, scenario=scenario, reasoning=reasoning,
                                        outcome=outcome, confidence=confidence, entities=entities,
                                        decision_maker=decision_maker, **kwargs)

    def find_precedents_by_scenario(self, scenario: str, category: str | None = None, limit: int = 10,
                                    use_semantic_search: bool = True, as_of: Any = None,
                                    **kwargs: Any) -> list[dict[str, Any]]:
        from ..decisions import recorder

        return recorder.find_precedents_by_scenario(self, scenario=scenario, category=category, limit=limit,
                                                    use_semantic_search=use_semantic_search, as_of=as_of, **kwargs)

    # --- persistence, conversations, cross-graph links -----------------------------------------
    def save_to_file(self, path: str, format: str = "json") -> None:
        from .persistence import save_graph

        self.check("read", "graph.save")
        save_graph(self, path, format)

    def load_from_file(self, path: str, format: str | None = None) -> dict[str, Any]:
        """Replace the graph's state from a file: a saved graph (JSON, Markdown directory), networkx node-link
        JSON, plain ``{"nodes": [...], "edges": [...]}`` JSON or GraphML (``format`` = json, markdown, node_link,
        plain, graphml; by default from the path and the content). Returns what was loaded (``skipped_erased``:
        the nodes an erasure removed, which a load never brings back); a bad file is a ValidationError naming
        the file and the element, and leaves the graph as it was."""
        from .persistence import load_graph

        self.check("write", "graph.load")
        return load_graph(self, path, format)

    def build_from_conversations(self, conversations: Sequence[Any], link_entities: bool = True) -> dict[str, Any]:
        from .conversations import build_from_conversations

        self.check("write", "graph.build")
        return build_from_conversations(self, conversations, link_entities)

    # --- entities named in text (graph/mentions.py) -------------------------------------------------
    def find_mentions(self, text: str) -> list[dict[str, Any]]:
        """The known entities ``text`` names, in order of appearance: ``entity`` (node id), ``surface`` (as
        written), ``rule`` (exact_name, legal_suffix, alias, acronym), ``score``, ``count``, ``ambiguous``."""
        from .mentions import find

        self.check("read", "graph.read")
        return [{"entity": self.user_id(e), "surface": m.surface, "rule": m.rule, "score": m.score,
                 "count": m.count, "ambiguous": m.ambiguous} for m in find(self, text) for e in m.entities]

    def link_mentions(self, namespaces: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Link the records already stored (memories, pack docs, messages, decisions...) of ``namespaces``
        (default: every namespace the graph reads) to the known entities their text names: ``mentions``
        edges, which a second run does not duplicate. Returns ``scanned`` and ``linked`` counts.

        Needs ``write`` on the graph, ``read`` on every namespace scanned and ``write`` on a memory store (its
        links are stored in it): a namespace given that the principal may not use so is an AccessDeniedError;
        by default such a memory store is left out and listed in ``skipped`` (a key present only then).
        ``progress(done, total)`` is told as the records are read."""
        from .mentions import link_mentions

        self.check("write", "graph.link_mentions")
        return link_mentions(self, namespaces, kinds, progress)

    def link_graph(self, other_graph: "ContextGraph", source_node_id: str, target_node_id: str,
                   link_type: str = "CROSS_GRAPH") -> str:
        from .crossgraph import link_graph

        self.check("write", "graph.link", source_node_id)
        return link_graph(self, other_graph, source_node_id, target_node_id, link_type)

    def navigate_to(self, link_id: str) -> tuple["ContextGraph", str]:
        from .crossgraph import navigate_to

        self.check("read", "graph.navigate", link_id)
        return navigate_to(self, link_id)

    def resolve_links(self, graphs: dict[str, "ContextGraph"]) -> int:
        """Re-point saved links at live graphs, keyed by the saved graph_id or graph name."""
        from .crossgraph import resolve_links

        self.check("write", "graph.link")
        return resolve_links(self, graphs)

    def cross_graph_path(self, source_node_id: str, target_graph: "ContextGraph", target_node_id: str,
                         max_hops: int = 10) -> dict[str, Any]:
        from .crossgraph import cross_graph_path

        self.check("read", "graph.path", source_node_id)
        return cross_graph_path(self, source_node_id, target_graph, target_node_id, max_hops)

    def __repr__(self) -> str:
        return f"ContextGraph(name={self.name!r}, store={self.store.url!r})"


def workspace_graph(ws: Workspace, principal: str | None = None, name: str | None = None) -> ContextGraph:
    """The workspace's graph (``graph:default``, held by the workspace and reused across calls) or the graph
    ``name`` of the workspace (``graph:<name>``, seeing only its own nodes), acting as ``principal``: what the
    CLI, MCP and the web console call it through."""
    if name is None:
        graph = ws.held("graph:default", lambda: ContextGraph(workspace=ws))
        return graph.acting_as(access.effective_principal(ws, principal))
    return ContextGraph(workspace=ws, name=name, principal=access.effective_principal(ws, principal))
