"""``GraphCore``: what every part of the graph service stands on: who acts and what it sees, node ids, the
cache, the adjacency, and the checked write and read paths (writes.py, reads.py).

``ContextGraph`` (context_graph.py) is the seed's graph API over this core: traversal, analytics, decisions,
persistence, mentions and cross-graph links, each handed to a part of the service. The access rules are the ones
context_graph.py's docstring states.
"""
from __future__ import annotations

import copy
import uuid
from typing import Any, Callable, Iterable, Sequence, TypeVar

from .. import access
from ..errors import NotFoundError, ValidationError
from ..model import Node, to_utc_iso
from ..seams import principal_of
from ..store.base import Capability, Store
from ..workspace import Workspace
from ..engine import traversal
from .algorithms import GraphAlgorithms
from .analytics import GraphAnalytics
from .embeddings import NodeEmbeddings
from .extras import require_extras
from .walks import DEFAULT_NODE_TYPE, GraphWalks
from . import reads, writes

T = TypeVar("T")


class GraphCore:
    """The graph's core: principal and sight, ids, cache, adjacency, writes and reads (see the module)."""

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
        self._base: GraphCore | None = None  # the graph this one acts for (``acting_as``)
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

    def acting_as(self, principal: str | None) -> "GraphCore":
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
        return reads.live_ids(self)

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
        elif self._owns_workspace:
            embedder = self.workspace._embedder
            self.workspace.close()
            self.workspace = Workspace.in_memory(embedder)
        else:
            writes.purge_namespace(self)

    # --- reading (graph/reads.py) ----------------------------------------------------------
    def find_node(self, node_id: str, as_of: Any = None) -> dict[str, Any] | None:
        self.check("read", "graph.read", node_id)
        return reads.find_node(self, node_id, as_of)

    def node_history(self, node_id: str) -> list[dict[str, Any]]:
        """Every stored version of a node, oldest first (retractions included)."""
        self.check("read", "graph.read", node_id)
        return reads.node_history(self, node_id)

    def find_nodes(self, node_type: str | None = None, skip: int = 0, limit: int | None = None,
                   as_of: Any = None) -> list[dict[str, Any]]:
        self.check("read", "graph.read")
        return reads.find_nodes(self, node_type, skip, limit, as_of)

    def find_active_nodes(self, node_type: str | None = None, at_time: Any = None, skip: int = 0,
                          limit: int | None = None) -> list[dict[str, Any]]:
        """Nodes whose validity window contains ``at_time`` (default now)."""
        self.check("read", "graph.read")
        return reads.find_active_nodes(self, node_type, at_time, skip, limit)

    def find_edges(self, edge_type: str | None = None, skip: int = 0, limit: int | None = None,
                   source_id: str | None = None, target_id: str | None = None, as_of: Any = None,
                   valid_at: Any = None) -> list[dict[str, Any]]:
        self.check("read", "graph.read")
        return reads.find_edges(self, edge_type, skip, limit, source_id, target_id, as_of, valid_at)

    def _seen_ids(self, as_of: Any = None) -> set[str]:
        return reads.seen_ids(self, as_of)

    def query(self, query: str, skip: int = 0, limit: int | None = 10) -> list[dict[str, Any]]:
        """Full-text search over node content (BM25 via the store's index), best first."""
        self.check("read", "graph.read")
        return reads.query(self, query, skip, limit)

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
