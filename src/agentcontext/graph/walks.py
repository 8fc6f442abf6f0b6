"""``ContextGraph``'s walks: breadth-first neighbours, hop distances and shortest paths over the graph's CSR.

``GraphWalks`` is composed by the graph (``graph.walks``) and reads it through ``WalkedGraph``. It walks the
adjacency the graph gives it, which for a principal who may not read everything holds only what it sees; right
after a write, small walks ask the store frontier by frontier instead of rebuilding the whole adjacency, and a
server-side store (PostgreSQL) is always walked frontier by frontier, never mirrored (both for a principal who
sees everything only: a restricted walk always uses its filtered CSR, as the SQL walks do not filter).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from ..engine import traversal
from ..errors import NotFoundError, ValidationError
from ..model import to_utc_iso, utcnow
from ..store.base import Capability, Store

BRIEF_CACHE = 200_000  # node summaries kept for traversal results between changes
SQL_WALK_HOPS = 3  # walks this shallow may skip a stale CSR and ask the store frontier by frontier
SQL_WALKS_BEFORE_CSR = 3  # the third walk at the same change counter rebuilds the CSR
DEFAULT_NODE_TYPE = "entity"


class WalkedGraph(Protocol):
    """What the walks read of a graph (a ``ContextGraph`` is one)."""

    scope: Any

    @property
    def store(self) -> Store: ...

    @property
    def restricted(self) -> bool: ...

    def csr(self, as_of: Any = None) -> traversal.CSR: ...

    def fresh_csr(self) -> traversal.CSR | None: ...

    def require(self, node_id: str) -> str: ...

    def store_id(self, node_id: str) -> str: ...

    def user_id(self, store_id: str) -> str: ...

    def find_node(self, node_id: str, as_of: Any = None) -> dict[str, Any] | None: ...

    def cached(self, what: str, build: Callable[[], Any]) -> Any: ...


class GraphWalks:
    def __init__(self, graph: WalkedGraph) -> None:
        self.graph = graph
        self._stale = (-1, 0)  # (change counter, walks since the CSR went stale)

    def walk(self, node_id: str, hops: int, relationship_types: Sequence[str] | None, min_weight: float | None,
             direction: str, as_of: Any) -> tuple[str, list[traversal.Step]]:
        """(anchor store id, steps), nearest first."""
        g = self.graph
        if hops < 0:
            raise ValidationError(f"hops must be >= 0 (got {hops})", hops=hops)
        if as_of is not None:
            csr = g.csr(as_of)
            sid = g.store_id(node_id) if g.store_id(node_id) in csr.index else node_id
            if sid not in csr.index and g.find_node(node_id, as_of=as_of) is None:
                raise NotFoundError(f"node {node_id!r} did not exist at {as_of}", node_id=node_id)
            blocked: set[int] | frozenset[int] = frozenset()
        else:
            sid = g.require(node_id)
            if Capability.SERVER_QUERIES in g.store.capabilities and not g.restricted:  # never mirror a server
                return sid, traversal.sql_bfs(g.store, g.scope, sid, hops, direction, relationship_types,
                                              min_weight, utcnow())
            csr = g.fresh_csr()
            if csr is None:
                counter = g.store.change_counter()
                self._stale = (counter, self._stale[1] + 1 if self._stale[0] == counter else 1)
                if hops <= SQL_WALK_HOPS and self._stale[1] < SQL_WALKS_BEFORE_CSR and not g.restricted:
                    return sid, traversal.sql_bfs(g.store, g.scope, sid, hops, direction, relationship_types,
                                                  min_weight, utcnow())
                csr = g.csr()
            blocked = traversal.blocked_edges(csr, utcnow()) if csr.timed else frozenset()
        start = csr.index.get(sid)
        if start is None:  # an isolated node
            return sid, []
        types = traversal.type_codes(csr, relationship_types)
        return sid, traversal.csr_steps(csr, traversal.bfs(csr, start, hops, direction, types, min_weight, blocked))

    def neighbors(self, node_id: str, hops: int, relationship_types: Sequence[str] | None, min_weight: float | None,
                  skip: int, limit: int | None, include_distance_metadata: bool, direction: str,
                  as_of: Any) -> list[dict[str, Any]]:
        g = self.graph
        anchor, steps = self.walk(node_id, hops, relationship_types, min_weight, direction, as_of)
        page = steps[skip: None if limit is None else skip + limit]
        briefs = self._briefs([s.sid for s in page], as_of)
        by_sid = {s.sid: s for s in steps}
        by_sid[anchor] = traversal.Step(anchor, 0, None, "", 1.0, 1.0)
        out: list[dict[str, Any]] = []
        missing = (DEFAULT_NODE_TYPE, "", {})
        for s in page:
            kind, content, props = briefs.get(s.sid, missing)
            uid = g.user_id(s.sid)
            entry: dict[str, Any] = {"id": uid, "node_id": uid, "type": kind, "content": content,
                                     "properties": dict(props), "relationship": s.rel, "weight": s.weight,
                                     "hop": s.hop}
            if include_distance_metadata:
                entry["hop_count"] = s.hop
                entry["distance_band"] = traversal.distance_band(s.hop)
                entry["confidence_decay"] = s.decay
                entry["path_to_anchor"] = [g.user_id(x) for x in traversal.step_path(by_sid, s.sid)]
            out.append(entry)
        return out

    def _briefs(self, sids: list[str], as_of: Any) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """(kind, content, props) per store id; current ones come from a cache reset by the change counter."""
        g = self.graph
        if as_of is not None:
            found = g.store.get_nodes(sids, as_of=to_utc_iso(as_of))
            return {k: (n.kind, n.content, n.props) for k, n in found.items()}
        cache: dict[str, tuple[str, str, dict[str, Any]]] = g.cached("briefs", dict)
        todo = [s for s in sids if s not in cache]
        if todo:
            if len(cache) > BRIEF_CACHE:
                cache.clear()
            cache.update(g.store.node_briefs(todo))
        return {s: cache[s] for s in sids if s in cache}

    def hop_distances(self, node_id: str, max_hops: int | None, direction: str, as_of: Any) -> dict[str, int]:
        _, steps = self.walk(node_id, max_hops if max_hops is not None else 1 << 30, None, None, direction, as_of)
        out = {node_id: 0}
        out.update({self.graph.user_id(s.sid): s.hop for s in steps})
        return out

    def shortest_path(self, source_id: str, target_id: str, max_hops: int | None, direction: str,
                      as_of: Any) -> list[str] | None:
        g = self.graph
        if as_of is None and Capability.SERVER_QUERIES in g.store.capabilities and not g.restricted:
            path = traversal.sql_shortest_path(g.store, g.scope, g.require(source_id), g.require(target_id),
                                               max_hops, direction, utcnow())  # frontier by frontier
            return None if path is None else [g.user_id(sid) for sid in path]
        csr = g.csr(as_of)
        s, t = g.require(source_id), g.require(target_id)
        if s not in csr.index or t not in csr.index:
            return [source_id] if s == t else None
        blocked = traversal.blocked_edges(csr, utcnow()) if as_of is None and csr.timed else frozenset()
        path = traversal.shortest_path(csr, csr.index[s], csr.index[t], max_hops, direction, blocked)
        return None if path is None else [g.user_id(csr.ids[i]) for i in path]
