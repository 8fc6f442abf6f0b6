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

import copy
import uuid
from collections import Counter
from typing import Any, Callable, Iterable, Sequence, TypeVar

from .. import access
from ..errors import NotFoundError, ValidationError
from ..model import Node, to_utc_iso, utcnow
from ..seams import principal_of
from ..store.base import Capability, Store
from ..workspace import Workspace
from ..engine import traversal
from .algorithms import GraphAlgorithms
from .analytics import GraphAnalytics
from .embeddings import NodeEmbeddings
from .extras import require_extras
from .walks import DEFAULT_NODE_TYPE, GraphWalks
from .records import edge_dict, node_dict
from . import writes

T = TypeVar("T")
DEEP_PAGE = 1000  # from this offset on, find_nodes pages through a cached id list


class ContextGraph:
    """Nodes and typed, weighted, time-bounded edges; traversal, analytics, persistence, cross-graph links."""

    def __init__(
        self,
        advanced_analytics: bool = True,
        centrality_analysis: bool = True,
        community_detection: bool = True,
        node_embeddings: bool = True,
        workspace: Workspace | None = None,
        store: Store | None = None,
        name: str | None = None,
        actor: str = "",
        kg_algorithms: bool = True,
        graph_id: str | None = None,
        principal: str | None = None,
    ) -> None:
        if workspace is not None and store is not None:
            raise ValidationError("pass workspace= or store=, not both")
        flags = {"advanced_analytics": advanced_analytics, "centrality_analysis": centrality_analysis,
                 "community_detection": community_detection, "kg_algorithms": kg_algorithms,
                 "node_embeddings": node_embeddings}
        require_extras(flags)
        self._owns_workspace = workspace is None and store is None
        self._base: ContextGraph | None = None  # the graph this one acts for (``acting_as``)
        self._workspace = workspace or (Workspace(store) if store is not None else Workspace.in_memory())
        self.advanced_analytics = advanced_analytics
        self.centrality_analysis = centrality_analysis
        self.community_detection = community_detection
        self.node_embeddings = node_embeddings
        self.kg_algorithms = kg_algorithms
        # Who acts: checked on every call (``actor`` is the older name of the same thing).
        self.principal = principal_of(principal, actor)
        self.name = name or "default"
        self.namespace = f"graph:{self.name}"
        # An unnamed graph over a shared workspace sees the whole workspace; a named one only itself.
        self._own_scope: str | None = None if name is None else self.namespace
        self.graph_id = graph_id or f"{self.name}-{uuid.uuid4().hex[:8]}"
        self._prefix = self.namespace + "/"
        self.analytics = GraphAnalytics(self)
        self.algorithms = GraphAlgorithms(self)
        self.walks = GraphWalks(self)
        self.embeddings = NodeEmbeddings(self)
        from .crossgraph import register

        register(self)

    @property
    def flags(self) -> dict[str, bool]:
        """The feature flags the graph was built with (``ContextGraph(**graph.flags)`` builds one alike)."""
        return {"advanced_analytics": self.advanced_analytics, "centrality_analysis": self.centrality_analysis,
                "community_detection": self.community_detection, "kg_algorithms": self.kg_algorithms,
                "node_embeddings": self.node_embeddings}

    # --- who acts, and what it sees -------------------------------------------------------------
    @property
    def actor(self) -> str:
        """The older name of ``principal``, as audit rows spell who acted ("" for the owner)."""
        return self.principal or ""

    @property
    def workspace(self) -> Workspace:
        return self._base.workspace if self._base is not None else self._workspace

    @workspace.setter
    def workspace(self, ws: Workspace) -> None:
        self._workspace = ws

    def acting_as(self, principal: str | None) -> "ContextGraph":
        """This graph as ``principal`` uses it (itself when it already acts for ``principal`` or for nobody in
        particular and none is given); a graph acting for someone else is refused."""
        if principal is None or principal == self.principal:
            return self
        if self.principal is not None:
            raise ValidationError(f"this graph acts as {self.principal!r}, not {principal!r}; open the graph for "
                                  f"{principal!r} instead", principal=principal)
        view = copy.copy(self)
        view._base = self._base or self
        view.principal = principal
        view.analytics, view.walks, view.algorithms = GraphAnalytics(view), GraphWalks(view), GraphAlgorithms(view)
        view.embeddings = NodeEmbeddings(view)
        return view

    def check(self, level: str, action: str, target: str = "") -> None:
        """Raise AccessDeniedError (audited) unless the principal holds ``level`` on this graph's namespace."""
        access.require(self.workspace, self.principal, self.namespace, level, action, target)

    def readable(self) -> bool:
        """Whether the principal may read this graph at all (checks nothing into the audit log)."""
        return access.can(self.workspace, self.principal, self.namespace, "read")

    def _audit(self, action: str, target: str, detail: dict[str, Any] | None = None) -> None:
        access.record(self.workspace, self.principal, action, target, detail)

    def _sight(self) -> access.Sight | None:
        return access.sight(self.workspace, self.principal)

    @property
    def scope(self) -> str | list[str] | None:
        """The namespaces this graph reads: its own (a named graph), every one (the workspace graph), or for a
        principal who may not read everything, the ones it may read whole."""
        sight = self._sight()
        if sight is None or self._own_scope is not None:
            return self._own_scope
        return sight.namespaces()

    def _in_scope(self, namespace: str) -> bool:
        scope = self.scope
        return scope is None or (namespace == scope if isinstance(scope, str) else namespace in scope)

    def sees(self, node: Node) -> bool:
        """Whether ``node`` is part of this graph's world for its principal."""
        sight = self._sight()
        return sight is None or (self._in_scope(node.namespace) and sight.node(node))

    # --- ids -------------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        return self.workspace.store

    def store_id(self, node_id: str) -> str:
        """The store id a user node id of this graph maps to (``graph:<name>/<node_id>``)."""
        return self._prefix + str(node_id)

    def user_id(self, store_id: str) -> str:
        return store_id[len(self._prefix):] if store_id.startswith(self._prefix) else store_id

    def _cache_key(self, what: str) -> str:
        sight = self._sight()
        return f"graph[{self._own_scope or '*'}{'' if sight is None else '|' + sight.who}]:{what}"

    def cached(self, what: str, build: Callable[[], T]) -> T:
        """``build()``'s result for this graph's scope, kept in the workspace cache until the store changes."""
        return self.workspace.cached(self._cache_key(what), build)

    def _live_ids(self) -> set[str]:
        return self.workspace.cached(self._cache_key("ids"), lambda: set(self.store.node_ids(self.scope)))

    def _live_among(self, ids: set[str]) -> set[str]:
        """Which of ``ids`` are live nodes of this graph's scope (on a server, asked of it: no id list mirrored)."""
        if Capability.SERVER_QUERIES not in self.store.capabilities:
            return self._live_ids() & ids
        found = self.store.get_nodes(sorted(ids))
        return {i for i, n in found.items() if self._in_scope(n.namespace)}

    def resolve(self, node_id: str) -> str | None:
        """The store id of an existing node (own namespace first, then any store id in scope), or None."""
        own = self.store_id(node_id)
        live = self.workspace.peek(self._cache_key("ids"))
        if live is None:  # stale after a write: two point lookups beat reloading every id
            found = self.store.get_nodes([own, node_id])
            if own in found and self.sees(found[own]):
                return own
            hit = found.get(node_id)
            return node_id if hit is not None and self._in_scope(hit.namespace) and self.sees(hit) else None
        if own in live:
            return own
        return node_id if node_id in live else None

    def require(self, node_id: str) -> str:
        """The store id of an existing node, or NotFoundError saying how to add it (a node the principal does not
        see answers like a missing one)."""
        sid = self.resolve(node_id)
        if sid is None:
            raise NotFoundError(f"node {node_id!r} is not in graph {self.name!r}; add it with add_node() first",
                                node_id=node_id, graph=self.name)
        return sid

    # --- writing ---------------------------------------------------------------------------
    def add_node(self, node_id: str, node_type: str = DEFAULT_NODE_TYPE, content: str | None = None,
                 properties: dict[str, Any] | None = None, valid_from: Any = None, valid_until: Any = None,
                 embed: bool = False, tags: Sequence[str] | None = None, **extra_properties: Any) -> None:
        """Add or update a node (an update appends a version; unchanged content keeps it)."""
        props = {**(properties or {}), **extra_properties}
        self.add_nodes([{"node_id": node_id, "node_type": node_type, "content": content, "properties": props,
                         "valid_from": valid_from, "valid_until": valid_until, "embed": embed, "tags": tags}])

    def add_nodes(self, nodes: Iterable[dict[str, Any]]) -> int:
        """Bulk add in one transaction; items use add_node's parameter names (or id/type). Returns the count."""
        self.check("write", "graph.node.add")
        return writes.add_nodes(self, nodes)

    def add_edge(self, source_id: str, target_id: str, edge_type: str = "related_to", weight: float = 1.0,
                 properties: dict[str, Any] | None = None, valid_from: Any = None, valid_until: Any = None,
                 **extra_properties: Any) -> None:
        """Add a directed edge; a repeated (source, type, target) updates it. Missing endpoints are created."""
        self.add_edges([{"source_id": source_id, "target_id": target_id, "edge_type": edge_type, "weight": weight,
                         "properties": {**(properties or {}), **extra_properties}, "valid_from": valid_from,
                         "valid_until": valid_until}])

    def add_edges(self, edges: Iterable[dict[str, Any]]) -> int:
        """Bulk add in one transaction (endpoints created as ``entity`` nodes if missing). Returns the count."""
        self.check("write", "graph.edge.add")
        return writes.add_edges(self, edges)

    def retract_node(self, node_id: str, at: Any = None) -> int:
        """Withdraw a node of this graph and its edges; history stays (``as_of`` still sees them)."""
        self.check("write", "graph.node.retract", node_id)
        return writes.retract_node(self, node_id, at)

    def retract_edge(self, source_id: str, target_id: str, edge_type: str = "related_to", at: Any = None) -> int:
        """Withdraw an edge this graph holds (its history stays)."""
        self.check("write", "graph.edge.retract", f"{source_id} {edge_type} {target_id}")
        return writes.retract_edge(self, source_id, target_id, edge_type, at)

    def purge_node(self, node_id: str, reason: str = "", at: Any = None,
                   erasure: str | None = None) -> dict[str, Any]:
        """Remove a node's content, versions, edges and vectors; leave a tombstone (``purged_at`` = at; marked
        with ``erasure``, the erased entity, when an erasure asks, so no import brings the node back).

        Needs write on this graph; a node of another namespace (an erasure reaching a doc or a memory) needs
        admin on that namespace, and a ``pkg:`` doc is read-only to everyone (ReadOnlyError)."""
        self.check("write", "graph.purge", node_id)
        return writes.purge_node(self, node_id, reason, at, erasure)

    def tombstones(self) -> list[dict[str, Any]]:
        self.check("read", "graph.read")
        return [{**t, "node_id": self.user_id(t["id"])} for t in self.store.tombstones(self.scope)]

    def clear(self) -> None:
        """Reset the graph: a private in-memory graph gets a fresh store; a workspace graph purges its namespace."""
        self.check("write", "graph.clear")
        if self._base is not None:  # a graph acting for a principal clears the graph it acts for
            self._base.clear()
            return
        if self._owns_workspace:
            embedder = self.workspace._embedder
            self.workspace.close()
            self.workspace = Workspace.in_memory(embedder)
            return
        ids = self.store.node_ids(self.namespace, include_retracted=True)
        if ids:
            with self.store.transaction():
                self.store.purge_nodes(ids, reason="graph.clear", actor=self.actor)
                self._audit("graph.clear", self.namespace, {"nodes": len(ids)})

    # --- reading ---------------------------------------------------------------------------
    def find_node(self, node_id: str, as_of: Any = None) -> dict[str, Any] | None:
        self.check("read", "graph.read", node_id)
        if as_of is None:
            sid = self.resolve(node_id)
            node = self.store.get_node(sid) if sid else None
        else:
            when = to_utc_iso(as_of)
            node = self.store.get_node(self.store_id(node_id), as_of=when) or self.store.get_node(node_id, as_of=when)
        return node_dict(node, self.user_id) if node and self.sees(node) else None

    def node_history(self, node_id: str) -> list[dict[str, Any]]:
        """Every stored version of a node, oldest first (retractions included)."""
        self.check("read", "graph.read", node_id)
        versions = self.store.node_versions(self.store_id(node_id)) or self.store.node_versions(node_id)
        return [node_dict(n, self.user_id) for n in versions if self.sees(n)]

    def find_nodes(self, node_type: str | None = None, skip: int = 0, limit: int | None = None,
                   as_of: Any = None) -> list[dict[str, Any]]:
        self.check("read", "graph.read")
        if skip >= DEEP_PAGE and limit is not None and as_of is None:
            # deep pages: OFFSET would walk every skipped row; slice a cached, ordered id list instead
            order = self.workspace.cached(self._cache_key(f"ids-by-type:{node_type}"), lambda: [
                n.id for n in self.store.find_nodes(namespace=self.scope, kind=node_type, with_content=False)])
            page = order[skip: skip + limit]
            found = self.store.get_nodes(page)
            return [node_dict(found[i], self.user_id) for i in page if i in found]
        nodes = self.store.find_nodes(namespace=self.scope, kind=node_type, offset=skip, limit=limit,
                                      as_of=to_utc_iso(as_of))
        return [node_dict(n, self.user_id) for n in nodes]

    def find_active_nodes(self, node_type: str | None = None, at_time: Any = None, skip: int = 0,
                          limit: int | None = None) -> list[dict[str, Any]]:
        """Nodes whose validity window contains ``at_time`` (default now)."""
        self.check("read", "graph.read")
        when = to_utc_iso(at_time) or utcnow()
        nodes = self.store.find_nodes(namespace=self.scope, kind=node_type, valid_at=when, offset=skip, limit=limit)
        return [node_dict(n, self.user_id) for n in nodes]

    def find_edges(self, edge_type: str | None = None, skip: int = 0, limit: int | None = None,
                   source_id: str | None = None, target_id: str | None = None, as_of: Any = None,
                   valid_at: Any = None) -> list[dict[str, Any]]:
        self.check("read", "graph.read")
        src = self.resolve(source_id) or self.store_id(source_id) if source_id is not None else None
        dst = self.resolve(target_id) or self.store_id(target_id) if target_id is not None else None
        sight = self._sight()
        if sight is None:
            edges = self.store.edges(src=src, dst=dst, type=edge_type, namespace=self.scope,
                                     as_of=to_utc_iso(as_of), valid_at=to_utc_iso(valid_at), offset=skip, limit=limit)
        else:  # only edges between nodes the principal sees (paged after that filter)
            seen = self._seen_ids(as_of)
            edges = [e for e in self.store.edges(src=src, dst=dst, type=edge_type, namespace=self.scope,
                                                 as_of=to_utc_iso(as_of), valid_at=to_utc_iso(valid_at))
                     if e.src in seen and e.dst in seen][skip: None if limit is None else skip + limit]
        return [edge_dict(e, self.user_id) for e in edges]

    def _seen_ids(self, as_of: Any = None) -> set[str]:
        """Ids of the nodes in this graph's world (now, or as it stood ``as_of``)."""
        if as_of is None:
            return self._live_ids()
        return {n.id for n in self.store.find_nodes(namespace=self.scope, as_of=to_utc_iso(as_of), order="none",
                                                    with_content=False)}

    def query(self, query: str, skip: int = 0, limit: int | None = 10) -> list[dict[str, Any]]:
        """Full-text search over node content (BM25 via the store's index), best first."""
        self.check("read", "graph.read")
        want = skip + (limit if limit is not None else 1000)
        hits = self.store.text_search(query, namespace=self.scope, limit=want)[skip:]
        nodes = self.store.get_nodes([h for h, _ in hits])
        out = []
        for sid, score in hits:
            if sid in nodes:
                d = node_dict(nodes[sid], self.user_id)
                out.append({"id": d["id"], "node": d, "score": score, "content": d["content"]})
        return out

    def search_nodes(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """The nodes best matching ``query`` by meaning, words and name, best first, each with an absolute
        ``score`` in [0, 1], its ``signals`` and its ``store_id`` (graph/node_search.py; what GraphRAG retrieval
        starts from). Only nodes the principal sees."""
        from .node_search import search_nodes

        return [{"id": self.user_id(h.node.id), "store_id": h.node.id, "node": node_dict(h.node, self.user_id),
                 "score": h.score, "signals": h.signals} for h in search_nodes(self, query, limit)]

    def stats(self) -> dict[str, Any]:
        self.check("read", "graph.read")
        nodes = self.store.count_nodes(self.scope)
        if self._sight() is None:
            edges = self.store.count_edges(self.scope)
            edge_types = self.store.count_edges_by_type(self.scope)
        else:  # the edges a principal sees are those of its CSR (between nodes it sees)
            csr = self.csr()
            edges, edge_types = csr.m, dict(sorted(Counter(csr.types[int(t)] for t in csr.etype).items()))
        return {"node_count": nodes, "edge_count": edges, "node_types": self.store.count_by_kind(self.scope),
                "edge_types": edge_types, "density": _density(nodes, edges)}

    def density(self) -> float:
        return self.stats()["density"]

    # --- traversal -------------------------------------------------------------------------
    def csr(self, as_of: Any = None) -> traversal.CSR:
        """The adjacency as it stands now (cached by the change counter) or as it stood ``as_of``; for a principal
        who may not read everything, only the edges between nodes it sees."""
        self.check("read", "graph.read")
        restricted = self._sight() is not None
        if as_of is not None:  # built per call: caching every distinct as_of would grow without bound
            return traversal.load_adjacency(self.store, self.scope, as_of=to_utc_iso(as_of),
                                            only=self._seen_ids(as_of) if restricted else None)

        def build() -> traversal.CSR:
            live = self._live_ids()
            return traversal.load_adjacency(self.store, self.scope, node_ids=sorted(live),
                                            only=live if restricted else None)

        return self.workspace.cached(self._cache_key("csr"), build)

    def fresh_csr(self) -> traversal.CSR | None:
        """The cached adjacency if it is still fresh, else None (the walks decide whether to rebuild it)."""
        return self.workspace.peek(self._cache_key("csr"))

    @property
    def restricted(self) -> bool:
        """Whether the principal sees less than everything (its world is filtered)."""
        return self._sight() is not None

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
        from .mentions import link_nodes

        self.check("write", "graph.link_mentions")
        skipped: list[str] = []
        if namespaces is None:
            scope = self.scope
            namespaces = [ns for ns in self.store.namespaces()
                          if scope is None or (ns == scope if isinstance(scope, str) else ns in scope)]
            if self.principal is not None:
                skipped = [ns for ns in namespaces if ns.startswith("memory:")
                           and not access.can(self.workspace, self.principal, ns, "write")]
                namespaces = [ns for ns in namespaces if ns not in skipped]
        else:
            for ns in namespaces:
                access.require(self.workspace, self.principal, ns, "read", "graph.link_mentions", ns)
                if ns.startswith("memory:"):
                    access.require(self.workspace, self.principal, ns, "write", "graph.link_mentions", ns)
        found = link_nodes(self, namespaces, kinds, actor=self.actor, progress=progress)
        return {**found, "skipped": skipped} if skipped else found

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


def _density(nodes: int, edges: int) -> float:
    return edges / (nodes * (nodes - 1)) if nodes > 1 else 0.0


def workspace_graph(ws: Workspace, principal: str | None = None, name: str | None = None) -> ContextGraph:
    """The workspace's graph (``graph:default``, held by the workspace and reused across calls) or the graph
    ``name`` of the workspace (``graph:<name>``, seeing only its own nodes), acting as ``principal``: what the
    CLI, MCP and the web console call it through."""
    if name is None:
        graph = ws.held("graph:default", lambda: ContextGraph(workspace=ws))
        return graph.acting_as(access.effective_principal(ws, principal))
    return ContextGraph(workspace=ws, name=name, principal=access.effective_principal(ws, principal))
