"""``ContextGraph``: seed 003's knowledge graph over the one store of record.

``ContextGraph()`` alone keeps everything in an in-memory SQLite store (nothing on disk);
``ContextGraph(workspace=ws)`` is the workspace graph, where knowledge docs, memories, entities
and decisions are nodes too. User node ids live in the namespace ``graph:<name>`` (store id
``graph:<name>/<node_id>``); nodes from other namespaces keep their store id as their visible id.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, Sequence, TypeVar

from ..errors import NotFoundError, ValidationError
from ..model import Edge, Node, edge_id, to_utc_iso, utcnow
from ..store.base import Capability, Store
from ..workspace import Workspace
from ..engine import traversal
from .algorithms import GraphAlgorithms
from .analytics import GraphAnalytics
from .extras import require_extras
from .records import edge_dict, node_dict, parse_edge_item, parse_node_item

DEFAULT_NODE_TYPE = "entity"
BRIEF_CACHE = 200_000  # node summaries kept for traversal results between changes
T = TypeVar("T")
DEEP_PAGE = 1000  # from this offset on, find_nodes pages through a cached id list
SQL_WALK_HOPS = 3  # walks this shallow may skip a stale CSR and ask the store frontier by frontier
SQL_WALKS_BEFORE_CSR = 3  # the third walk at the same change counter rebuilds the CSR


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
    ) -> None:
        if workspace is not None and store is not None:
            raise ValidationError("pass workspace= or store=, not both")
        flags = {"advanced_analytics": advanced_analytics, "centrality_analysis": centrality_analysis,
                 "community_detection": community_detection, "kg_algorithms": kg_algorithms,
                 "node_embeddings": node_embeddings}
        require_extras(flags)
        self._owns_workspace = workspace is None and store is None
        self.workspace = workspace or (Workspace(store) if store is not None else Workspace.in_memory())
        self.advanced_analytics = advanced_analytics
        self.centrality_analysis = centrality_analysis
        self.community_detection = community_detection
        self.node_embeddings = node_embeddings
        self.kg_algorithms = kg_algorithms
        self.actor = actor
        self.name = name or "default"
        self.namespace = f"graph:{self.name}"
        # An unnamed graph over a shared workspace sees the whole workspace; a named one only itself.
        self.scope: str | None = None if name is None else self.namespace
        self.graph_id = graph_id or f"{self.name}-{uuid.uuid4().hex[:8]}"
        self._prefix = self.namespace + "/"
        self._stale = (-1, 0)  # (change counter, walks since the CSR went stale)
        self.analytics = GraphAnalytics(self)
        self.algorithms = GraphAlgorithms(self)
        from .crossgraph import register

        register(self)

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
        return f"graph[{self.scope or '*'}]:{what}"

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
        return {i for i, n in found.items() if self.scope is None or n.namespace == self.scope}

    def resolve(self, node_id: str) -> str | None:
        """The store id of an existing node (own namespace first, then any store id in scope), or None."""
        own = self.store_id(node_id)
        live = self.workspace.peek(self._cache_key("ids"))
        if live is None:  # stale after a write: two point lookups beat reloading every id
            found = self.store.get_nodes([own, node_id])
            if own in found:
                return own
            hit = found.get(node_id)
            return node_id if hit is not None and (self.scope is None or hit.namespace == self.scope) else None
        if own in live:
            return own
        return node_id if node_id in live else None

    def require(self, node_id: str) -> str:
        """The store id of an existing node, or NotFoundError saying how to add it."""
        sid = self.resolve(node_id)
        if sid is None:
            raise NotFoundError(f"node {node_id!r} is not in graph {self.name!r}; add it with add_node() first",
                                node_id=node_id, graph=self.name)
        return sid

    # --- writing ---------------------------------------------------------------------------
    def _make_node(self, item: dict[str, Any]) -> Node:
        node_id = item["node_id"]
        props = dict(item.get("properties") or {})
        content = item.get("content")
        if content is None:
            content = str(props.get("content", node_id))
        node = Node(id=self.store_id(node_id), kind=item.get("node_type") or DEFAULT_NODE_TYPE,
                    namespace=self.namespace, key=str(node_id), title=str(props.get("name", node_id)),
                    content=str(content), props=props, tags=list(item.get("tags") or []),
                    valid_from=to_utc_iso(item.get("valid_from")), valid_until=to_utc_iso(item.get("valid_until")),
                    created_by=self.actor)
        if node.valid_from and node.valid_until and node.valid_until <= node.valid_from:
            raise ValidationError(f"node {node_id!r}: valid_until must be after valid_from", node_id=node_id)
        if item.get("embed"):
            node.embed_text = node.content
        return node

    def add_node(self, node_id: str, node_type: str = DEFAULT_NODE_TYPE, content: str | None = None,
                 properties: dict[str, Any] | None = None, valid_from: Any = None, valid_until: Any = None,
                 embed: bool = False, tags: Sequence[str] | None = None, **extra_properties: Any) -> None:
        """Add or update a node (an update appends a version; unchanged content keeps it)."""
        props = {**(properties or {}), **extra_properties}
        self.add_nodes([{"node_id": node_id, "node_type": node_type, "content": content, "properties": props,
                         "valid_from": valid_from, "valid_until": valid_until, "embed": embed, "tags": tags}])

    def add_nodes(self, nodes: Iterable[dict[str, Any]]) -> int:
        """Bulk add in one transaction; items use add_node's parameter names (or id/type). Returns the count."""
        parsed: dict[str, dict[str, Any]] = {}
        for i, raw in enumerate(nodes):
            item = parse_node_item(raw, i)
            parsed[item["node_id"]] = item  # a repeated id: the last one wins, as sequential adds would
        built = [self._make_node(item) for item in parsed.values()]
        if built:
            self.store.put_nodes(built, actor=self.actor)
        return len(built)

    def add_edge(self, source_id: str, target_id: str, edge_type: str = "related_to", weight: float = 1.0,
                 properties: dict[str, Any] | None = None, valid_from: Any = None, valid_until: Any = None,
                 **extra_properties: Any) -> None:
        """Add a directed edge; a repeated (source, type, target) updates it. Missing endpoints are created."""
        self.add_edges([{"source_id": source_id, "target_id": target_id, "edge_type": edge_type, "weight": weight,
                         "properties": {**(properties or {}), **extra_properties}, "valid_from": valid_from,
                         "valid_until": valid_until}])

    def add_edges(self, edges: Iterable[dict[str, Any]]) -> int:
        """Bulk add in one transaction (endpoints created as ``entity`` nodes if missing). Returns the count."""
        items = [parse_edge_item(raw, i) for i, raw in enumerate(edges)]
        live = self._live_among({x for item in items for end in item[:2] for x in (end, self._prefix + end)})
        sid_of: dict[str, str] = {}
        missing: dict[str, Node] = {}
        for item in items:
            for end in (item[0], item[1]):
                if end in sid_of:
                    continue
                own = self._prefix + end
                if own in live or end not in live:
                    sid_of[end] = own
                    if own not in live:
                        missing[own] = self._make_node({"node_id": end, "node_type": DEFAULT_NODE_TYPE})
                else:
                    sid_of[end] = end
        built: dict[tuple[str, str, str], Edge] = {}  # (src, type, dst): a repeat in one call, the last wins
        ns = self.namespace
        for src, dst, etype, weight, props, vf, vu in items:
            if vf is not None or vu is not None:
                vf, vu = to_utc_iso(vf), to_utc_iso(vu)
                if vf and vu and vu <= vf:
                    raise ValidationError("edge valid_until must be after valid_from", source_id=src, target_id=dst)
            s, d = sid_of[src], sid_of[dst]
            built[(s, etype, d)] = Edge(src=s, type=etype, dst=d, namespace=ns, weight=weight, props=props,
                                        valid_from=vf, valid_until=vu)
        with self.store.transaction():
            if missing:
                self.store.put_nodes(list(missing.values()), actor=self.actor)
            if built:
                self.store.put_edges(list(built.values()), actor=self.actor)
        return len(built)

    def retract_node(self, node_id: str, at: Any = None) -> int:
        """Withdraw a node and its edges; history stays (``as_of`` still sees them)."""
        return self.store.retract_nodes([self.require(node_id)], actor=self.actor, at=to_utc_iso(at))

    def retract_edge(self, source_id: str, target_id: str, edge_type: str = "related_to", at: Any = None) -> int:
        src, dst = self.require(source_id), self.require(target_id)
        return self.store.retract_edges([edge_id(src, edge_type, dst)], actor=self.actor, at=to_utc_iso(at))

    def purge_node(self, node_id: str, reason: str = "", at: Any = None,
                   erasure: str | None = None) -> dict[str, Any]:
        """Remove a node's content, versions, edges and vectors; leave a tombstone (``purged_at`` = at; marked
        with ``erasure``, the erased entity, when an erasure asks, so no import brings the node back)."""
        sid = self.resolve(node_id)
        if sid is None:
            own = self.store_id(node_id)
            stone = self.store.tombstone(own) or self.store.tombstone(node_id)
            return {"nodes": 0, "edges": 0, "versions": 0, "vectors": 0, "tombstone": stone}
        when = to_utc_iso(at) or utcnow()
        totals = self.store.purge_nodes([sid], reason=reason, actor=self.actor, at=when, erasure=erasure)
        return {**totals, "tombstone": self.store.tombstone(sid)}

    def tombstones(self) -> list[dict[str, Any]]:
        return [{**t, "node_id": self.user_id(t["id"])} for t in self.store.tombstones(self.scope)]

    def clear(self) -> None:
        """Reset the graph: a private in-memory graph gets a fresh store; a workspace graph purges its namespace."""
        if self._owns_workspace:
            embedder = self.workspace._embedder
            self.workspace.close()
            self.workspace = Workspace.in_memory(embedder)
            return
        ids = self.store.node_ids(self.namespace, include_retracted=True)
        if ids:
            self.store.purge_nodes(ids, reason="graph.clear", actor=self.actor)

    # --- reading ---------------------------------------------------------------------------
    def find_node(self, node_id: str, as_of: Any = None) -> dict[str, Any] | None:
        if as_of is None:
            sid = self.resolve(node_id)
            node = self.store.get_node(sid) if sid else None
        else:
            when = to_utc_iso(as_of)
            node = self.store.get_node(self.store_id(node_id), as_of=when) or self.store.get_node(node_id, as_of=when)
        return node_dict(node, self.user_id) if node else None

    def node_history(self, node_id: str) -> list[dict[str, Any]]:
        """Every stored version of a node, oldest first (retractions included)."""
        own = self.store.node_versions(self.store_id(node_id))
        return [node_dict(n, self.user_id) for n in (own or self.store.node_versions(node_id))]

    def find_nodes(self, node_type: str | None = None, skip: int = 0, limit: int | None = None,
                   as_of: Any = None) -> list[dict[str, Any]]:
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
        when = to_utc_iso(at_time) or utcnow()
        nodes = self.store.find_nodes(namespace=self.scope, kind=node_type, valid_at=when, offset=skip, limit=limit)
        return [node_dict(n, self.user_id) for n in nodes]

    def find_edges(self, edge_type: str | None = None, skip: int = 0, limit: int | None = None,
                   source_id: str | None = None, target_id: str | None = None, as_of: Any = None,
                   valid_at: Any = None) -> list[dict[str, Any]]:
        src = self.resolve(source_id) or self.store_id(source_id) if source_id is not None else None
        dst = self.resolve(target_id) or self.store_id(target_id) if target_id is not None else None
        edges = self.store.edges(src=src, dst=dst, type=edge_type, namespace=self.scope, as_of=to_utc_iso(as_of),
                                 valid_at=to_utc_iso(valid_at), offset=skip, limit=limit)
        return [edge_dict(e, self.user_id) for e in edges]

    def query(self, query: str, skip: int = 0, limit: int | None = 10) -> list[dict[str, Any]]:
        """Full-text search over node content (BM25 via the store's index), best first."""
        want = skip + (limit if limit is not None else 1000)
        hits = self.store.text_search(query, namespace=self.scope, limit=want)[skip:]
        nodes = self.store.get_nodes([h for h, _ in hits])
        out = []
        for sid, score in hits:
            if sid in nodes:
                d = node_dict(nodes[sid], self.user_id)
                out.append({"id": d["id"], "node": d, "score": score, "content": d["content"]})
        return out

    def stats(self) -> dict[str, Any]:
        nodes = self.store.count_nodes(self.scope)
        edges = self.store.count_edges(self.scope)
        return {"node_count": nodes, "edge_count": edges, "node_types": self.store.count_by_kind(self.scope),
                "edge_types": self.store.count_edges_by_type(self.scope), "density": _density(nodes, edges)}

    def density(self) -> float:
        return _density(self.store.count_nodes(self.scope), self.store.count_edges(self.scope))

    # --- traversal -------------------------------------------------------------------------
    def csr(self, as_of: Any = None) -> traversal.CSR:
        """The adjacency as it stands now (cached by the change counter) or as it stood ``as_of``."""
        if as_of is not None:  # built per call: caching every distinct as_of would grow without bound
            return traversal.load_adjacency(self.store, self.scope, as_of=to_utc_iso(as_of))
        return self.workspace.cached(self._cache_key("csr"), lambda: traversal.load_adjacency(
            self.store, self.scope, node_ids=sorted(self._live_ids())))

    def _walk(self, node_id: str, hops: int, relationship_types: Sequence[str] | None, min_weight: float | None,
              direction: str, as_of: Any) -> tuple[str, list[traversal.Step]]:
        """(anchor store id, steps). Uses the cached CSR when fresh; right after a write, small walks ask the
        store frontier by frontier instead of rebuilding the whole adjacency (rebuilt once reads dominate)."""
        if hops < 0:
            raise ValidationError(f"hops must be >= 0 (got {hops})", hops=hops)
        if as_of is not None:
            csr = self.csr(as_of)
            sid = self.store_id(node_id) if self.store_id(node_id) in csr.index else node_id
            if sid not in csr.index and self.find_node(node_id, as_of=as_of) is None:
                raise NotFoundError(f"node {node_id!r} did not exist at {as_of}", node_id=node_id)
            blocked: set[int] | frozenset[int] = frozenset()
        else:
            sid = self.require(node_id)
            if Capability.SERVER_QUERIES in self.store.capabilities:  # never mirror a server's adjacency
                return sid, traversal.sql_bfs(self.store, self.scope, sid, hops, direction, relationship_types,
                                              min_weight, utcnow())
            csr = self.workspace.peek(self._cache_key("csr"))
            if csr is None:
                counter = self.store.change_counter()
                self._stale = (counter, self._stale[1] + 1 if self._stale[0] == counter else 1)
                if hops <= SQL_WALK_HOPS and self._stale[1] < SQL_WALKS_BEFORE_CSR:
                    return sid, traversal.sql_bfs(self.store, self.scope, sid, hops, direction, relationship_types,
                                                  min_weight, utcnow())
                csr = self.csr()
            blocked = traversal.blocked_edges(csr, utcnow()) if csr.timed else frozenset()
        start = csr.index.get(sid)
        if start is None:  # an isolated node
            return sid, []
        types = traversal.type_codes(csr, relationship_types)
        return sid, traversal.csr_steps(csr, traversal.bfs(csr, start, hops, direction, types, min_weight, blocked))

    def get_neighbors(self, node_id: str, hops: int = 1, relationship_types: Sequence[str] | None = None,
                      min_weight: float | None = None, skip: int = 0, limit: int | None = None,
                      include_distance_metadata: bool = False, direction: str = "out",
                      as_of: Any = None) -> list[dict[str, Any]]:
        """BFS neighbours up to ``hops``, nearest first; never via retracted or expired edges unless ``as_of``."""
        anchor, steps = self._walk(node_id, hops, relationship_types, min_weight, direction, as_of)
        page = steps[skip: None if limit is None else skip + limit]
        briefs = self._briefs([s.sid for s in page], as_of)
        by_sid = {s.sid: s for s in steps}
        by_sid[anchor] = traversal.Step(anchor, 0, None, "", 1.0, 1.0)
        out: list[dict[str, Any]] = []
        missing = (DEFAULT_NODE_TYPE, "", {})
        for s in page:
            kind, content, props = briefs.get(s.sid, missing)
            uid = self.user_id(s.sid)
            entry: dict[str, Any] = {"id": uid, "node_id": uid, "type": kind, "content": content,
                                     "properties": dict(props), "relationship": s.rel, "weight": s.weight,
                                     "hop": s.hop}
            if include_distance_metadata:
                entry["hop_count"] = s.hop
                entry["distance_band"] = traversal.distance_band(s.hop)
                entry["confidence_decay"] = s.decay
                entry["path_to_anchor"] = [self.user_id(x) for x in traversal.step_path(by_sid, s.sid)]
            out.append(entry)
        return out

    def _briefs(self, sids: list[str], as_of: Any) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """(kind, content, props) per store id; current ones come from a cache reset by the change counter."""
        if as_of is not None:
            found = self.store.get_nodes(sids, as_of=to_utc_iso(as_of))
            return {k: (n.kind, n.content, n.props) for k, n in found.items()}
        cache: dict[str, tuple[str, str, dict[str, Any]]] = self.workspace.cached(self._cache_key("briefs"), dict)
        todo = [s for s in sids if s not in cache]
        if todo:
            if len(cache) > BRIEF_CACHE:
                cache.clear()
            cache.update(self.store.node_briefs(todo))
        return {s: cache[s] for s in sids if s in cache}

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
        _, steps = self._walk(node_id, max_hops if max_hops is not None else 1 << 30, None, None, direction, as_of)
        out = {node_id: 0}
        out.update({self.user_id(s.sid): s.hop for s in steps})
        return out

    def shortest_path(self, source_id: str, target_id: str, max_hops: int | None = None, direction: str = "out",
                      as_of: Any = None) -> list[str] | None:
        """Fewest-edges path as node ids, or None when ``target_id`` is unreachable (``kg_algorithms``)."""
        self.algorithms.check()
        if as_of is None and Capability.SERVER_QUERIES in self.store.capabilities:  # frontier by frontier
            path = traversal.sql_shortest_path(self.store, self.scope, self.require(source_id),
                                               self.require(target_id), max_hops, direction, utcnow())
            return None if path is None else [self.user_id(sid) for sid in path]
        csr = self.csr(as_of)
        s, t = self.require(source_id), self.require(target_id)
        if s not in csr.index or t not in csr.index:
            return [source_id] if s == t else None
        blocked = traversal.blocked_edges(csr, utcnow()) if as_of is None and csr.timed else frozenset()
        path = traversal.shortest_path(csr, csr.index[s], csr.index[t], max_hops, direction, blocked)
        return None if path is None else [self.user_id(csr.ids[i]) for i in path]

    def k_shortest_paths(self, source_id: str, target_id: str, k: int = 3, weighted: bool = False,
                         max_hops: int | None = None, direction: str = "out",
                         relationship_types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Up to ``k`` loopless paths, shortest first: ``path`` (node ids), ``length`` (edges, or the summed
        edge weights when ``weighted``) and ``hops`` (Yen's algorithm; ``kg_algorithms``)."""
        return self.algorithms.k_shortest_paths(source_id, target_id, k, weighted, max_hops, direction,
                                                relationship_types)

    def predict_links(self, node_id: str | None = None, top_k: int = 10, method: str = "adamic_adar",
                      relationship_types: Sequence[str] | None = None,
                      node_type: str | None = None) -> list[dict[str, Any]]:
        """The ``top_k`` most likely missing links (``source``, ``target``, ``score``), best first, from
        ``node_id`` or over the whole graph: adamic_adar, jaccard, resource_allocation or
        preferential_attachment on the undirected graph (``kg_algorithms``; engine/linkpred.py)."""
        return self.algorithms.predict_links(node_id, top_k, method, relationship_types, node_type)

    # --- analytics (graph/analytics.py over the igraph engine) -----------------------------------
    def pagerank(self, damping: float = 0.85, weighted: bool = True, top_k: int | None = None) -> dict[str, float]:
        """PageRank (igraph PRPACK) of every node, highest first; cached until the graph changes."""
        return self.analytics.pagerank(damping, weighted, top_k)

    def centrality(self, measure: str = "degree", top_k: int | None = None) -> dict[str, float]:
        """degree / in_degree / out_degree / betweenness / closeness / pagerank, highest first."""
        return self.analytics.centrality(measure, top_k)

    def get_node_centrality(self, node_id: str) -> dict[str, float]:
        return self.analytics.node_centrality(node_id)

    def detect_communities(self, algorithm: str = "louvain", resolution: float = 1.0) -> dict[str, Any]:
        """Communities on the undirected graph (Louvain or Leiden), largest first, with modularity."""
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

        save_graph(self, path, format)

    def load_from_file(self, path: str, format: str | None = None) -> dict[str, Any]:
        """Replace the graph's state from a saved graph; returns what was replayed (``skipped_erased``: the
        nodes an erasure removed, which a load never brings back)."""
        from .persistence import load_graph

        return load_graph(self, path, format)

    def build_from_conversations(self, conversations: Sequence[Any], link_entities: bool = True,
                                 **options: Any) -> dict[str, Any]:
        from .conversations import build_from_conversations

        return build_from_conversations(self, conversations, link_entities, **options)

    def link_graph(self, other_graph: "ContextGraph", source_node_id: str, target_node_id: str,
                   link_type: str = "CROSS_GRAPH") -> str:
        from .crossgraph import link_graph

        return link_graph(self, other_graph, source_node_id, target_node_id, link_type)

    def navigate_to(self, link_id: str) -> tuple["ContextGraph", str]:
        from .crossgraph import navigate_to

        return navigate_to(self, link_id)

    def resolve_links(self, graphs: dict[str, "ContextGraph"]) -> int:
        """Re-point saved links at live graphs, keyed by the saved graph_id or graph name."""
        from .crossgraph import resolve_links

        return resolve_links(self, graphs)

    def cross_graph_path(self, source_node_id: str, target_graph: "ContextGraph", target_node_id: str,
                         max_hops: int = 10) -> dict[str, Any]:
        from .crossgraph import cross_graph_path

        return cross_graph_path(self, source_node_id, target_graph, target_node_id, max_hops)

    def __repr__(self) -> str:
        return f"ContextGraph(name={self.name!r}, store={self.store.url!r})"


def _density(nodes: int, edges: int) -> float:
    return edges / (nodes * (nodes - 1)) if nodes > 1 else 0.0
