"""Cross-graph navigation: links from a node in one ContextGraph to a node in another.

A link is a record in the source graph's store (kind ``graph_link``), so it persists with the
graph; the live target graph is found through a process-wide registry of graphs by ``graph_id``.
Every graph reached acts as the principal of the graph the call started from: navigating into a graph it
may not read is denied, and a path never continues through one.
"""
from __future__ import annotations

import uuid
import weakref
from collections import deque
from typing import Any

from ..errors import NotFoundError, ValidationError
from ..model import utcnow
from ..engine import traversal
from ..store.base import Capability
from .protocol import GraphLike

LINK_KIND = "graph_link"
_REGISTRY: "weakref.WeakValueDictionary[str, GraphLike]" = weakref.WeakValueDictionary()


def register(graph: GraphLike) -> None:
    _REGISTRY[graph.graph_id] = graph


def _key(graph: GraphLike, link_id: str) -> str:
    return f"{graph.namespace}:{link_id}"


def links(graph: GraphLike) -> list[dict[str, Any]]:
    """Every cross-graph link leaving this graph."""
    return [value for _, value in graph.store.list_records(LINK_KIND, prefix=graph.namespace + ":")]


def link_graph(graph: GraphLike, other: GraphLike, source_node_id: str, target_node_id: str,
               link_type: str = "CROSS_GRAPH") -> str:
    """Create a navigable link; both endpoints must exist. Returns the link id."""
    if other is None or not hasattr(other, "graph_id"):
        raise ValidationError("other_graph must be a ContextGraph", got=type(other).__name__)
    graph.require(source_node_id)
    seen = other.acting_as(graph.principal)
    seen.check("read", "graph.link", target_node_id)
    if seen.resolve(target_node_id) is None:
        raise NotFoundError(f"target node {target_node_id!r} is not in graph {other.name!r}",
                            node_id=target_node_id, graph=other.name)
    register(other)
    link_id = "xlink_" + uuid.uuid4().hex[:16]
    record = {"link_id": link_id, "source_node_id": source_node_id, "target_node_id": target_node_id,
              "link_type": link_type, "other_graph_id": other.graph_id, "other_graph_name": other.name,
              "created_at": utcnow()}
    graph.store.put_record(LINK_KIND, _key(graph, link_id), record, actor=graph.actor)
    return link_id


def resolve_links(graph: GraphLike, graphs: dict[str, GraphLike]) -> int:
    """Re-point links at live graphs (after load_from_file): ``{saved graph_id or name: graph}``."""
    count = 0
    for record in links(graph):
        target = graphs.get(record["other_graph_id"]) or graphs.get(record.get("other_graph_name", ""))
        if target is not None:
            register(target)
            record = {**record, "other_graph_id": target.graph_id}
            graph.store.put_record(LINK_KIND, _key(graph, record["link_id"]), record, actor=graph.actor)
            count += 1
    return count


def navigate_to(graph: GraphLike, link_id: str) -> tuple[GraphLike, str]:
    record = graph.store.get_record(LINK_KIND, _key(graph, link_id))
    if record is None:
        raise NotFoundError(f"no cross-graph link {link_id!r} from graph {graph.name!r}; create it with "
                            "link_graph()", link_id=link_id)
    target = _REGISTRY.get(record["other_graph_id"])
    if target is None:
        raise NotFoundError(f"link {link_id!r} points at graph {record.get('other_graph_name')!r} "
                            f"({record['other_graph_id']}), which is not loaded in this process; load it and "
                            "call resolve_links()", link_id=link_id, graph_id=record["other_graph_id"])
    target = target.acting_as(graph.principal)
    target.check("read", "graph.navigate", link_id)
    return target, record["target_node_id"]


def cross_graph_path(graph: GraphLike, source_node_id: str, target_graph: GraphLike,
                     target_node_id: str, max_hops: int = 10) -> dict[str, Any]:
    """Fewest-hops path across linked graphs (an in-graph edge and a cross-graph link each count one hop); it
    walks only graphs the principal may read."""
    graph.require(source_node_id)
    target_graph = target_graph.acting_as(graph.principal)
    target_graph.check("read", "graph.path", target_node_id)
    target_graph.require(target_node_id)
    start = (graph.graph_id, source_node_id)
    goal = (target_graph.graph_id, target_node_id)
    graphs = {graph.graph_id: graph, target_graph.graph_id: target_graph}
    parent: dict[tuple[str, str], tuple[tuple[str, str] | None, str | None, float]] = {start: (None, None, 1.0)}
    queue = deque([(start, 0)])
    found = start == goal
    while queue and not found:
        (gid, node), hops = queue.popleft()
        if hops >= max_hops:
            continue
        g = graphs[gid]
        for nxt_graph, nxt_node, via, weight in _moves(g, node):
            graphs.setdefault(nxt_graph.graph_id, nxt_graph)
            key = (nxt_graph.graph_id, nxt_node)
            if key in parent:
                continue
            parent[key] = ((gid, node), via, parent[(gid, node)][2] * weight)
            if key == goal:
                found = True
                break
            queue.append((key, hops + 1))
    if not found:
        return {"reachable": False, "hop_count": 0, "path": [], "links_used": [], "cross_graph_links_used": 0,
                "confidence_decay": 0.0, "distance_band": traversal.distance_band(max_hops + 1)}
    steps: list[tuple[str, str]] = []
    used: list[str] = []
    key: tuple[str, str] | None = goal
    while key is not None:
        steps.append(key)
        prev, via, _ = parent[key]
        if via:
            used.append(via)
        key = prev
    steps.reverse()
    used.reverse()
    hop_count = len(steps) - 1
    return {"reachable": True, "hop_count": hop_count,
            "path": [{"graph": graphs[gid].name, "graph_id": gid, "node_id": nid} for gid, nid in steps],
            "links_used": used, "cross_graph_links_used": len(used), "confidence_decay": parent[goal][2],
            "distance_band": traversal.distance_band(hop_count)}


def _moves(g: GraphLike, node_id: str) -> list[tuple[GraphLike, str, str | None, float]]:
    """In-graph out-neighbours (active edges only) and cross-graph links leaving ``node_id``."""
    out: list[tuple[GraphLike, str, str | None, float]] = []
    sid = g.resolve(node_id)
    # The node's edges from the server, for a principal who sees everything (a restricted one walks its CSR,
    # which holds only what it sees: the server's rows are not filtered by principal).
    if sid is not None and Capability.SERVER_QUERIES in g.store.capabilities and not g.restricted:
        now = utcnow()
        for _src, dst, _type, w, ns, vf, vu in g.store.edges_touching([sid], "src"):
            if (g.scope is None or ns == g.scope) and traversal.usable(vf, vu, now):
                out.append((g, g.user_id(dst), None, float(w)))
    elif sid is not None:
        csr = g.csr()
        if sid in csr.index:
            blocked = traversal.blocked_edges(csr, utcnow()) if csr.timed else set()
            i = csr.index[sid]
            for p in range(int(csr.ptr[i]), int(csr.ptr[i + 1])):
                if p not in blocked:
                    out.append((g, g.user_id(csr.ids[int(csr.dst[p])]), None, float(csr.weight[p])))
    for record in links(g):
        if record["source_node_id"] == node_id:
            target = _REGISTRY.get(record["other_graph_id"])
            if target is not None:
                target = target.acting_as(g.principal)
                hidden = target.principal is not None and target.resolve(record["target_node_id"]) is None
                if target.readable() and not hidden:
                    out.append((target, record["target_node_id"], record["link_id"], 1.0))
    return out
