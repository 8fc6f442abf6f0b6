"""The graph's write path: graph items become store nodes and edges, and a graph retracts or purges its own.

``ContextGraph`` checks the principal's grant at its door and hands itself to these functions (one line each);
they build nodes (``make_node``), resolve edge endpoints (an id of this graph first, then a store id in scope,
else a new ``entity`` node), write in one transaction, and audit. A graph changes only its own namespace's
records (``require_own``); purging another namespace's node needs admin there (``access.require_own``).
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol

from .. import access
from ..errors import ValidationError
from ..model import Edge, Node, edge_id, reserved_namespace, to_utc_iso, utcnow
from .protocol import GraphLike
from .records import parse_edge_item, parse_node_item
from .walks import DEFAULT_NODE_TYPE


class WritingGraph(GraphLike, Protocol):
    _prefix: str  # ``graph:<name>/``: the store-id prefix of this graph's own nodes

    def _live_among(self, ids: set[str]) -> set[str]: ...

    def _audit(self, action: str, target: str, detail: dict[str, Any] | None = None) -> None: ...


def make_node(graph: WritingGraph, item: dict[str, Any]) -> Node:
    node_id = item["node_id"]
    props = dict(item.get("properties") or {})
    content = item.get("content")
    if content is None:
        content = str(props.get("content", node_id))
    node = Node(id=graph.store_id(node_id), kind=item.get("node_type") or DEFAULT_NODE_TYPE,
                namespace=graph.namespace, key=str(node_id), title=str(props.get("name", node_id)),
                content=str(content), props=props, tags=list(item.get("tags") or []),
                valid_from=to_utc_iso(item.get("valid_from")), valid_until=to_utc_iso(item.get("valid_until")),
                created_by=graph.actor)
    if node.valid_from and node.valid_until and node.valid_until <= node.valid_from:
        raise ValidationError(f"node {node_id!r}: valid_until must be after valid_from", node_id=node_id)
    # Every node is found by meaning too (graph/node_search.py): the store keeps a vector of its text current.
    node.embed_text = node.content if item.get("embed") else node_text(node)
    return node


def node_text(node: Node) -> str:
    """What a graph node is found by: its name and its content, each once."""
    return " ".join(dict.fromkeys(p for p in (node.title, node.content) if p))


def add_nodes(graph: WritingGraph, nodes: Iterable[dict[str, Any]]) -> int:
    parsed: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(nodes):
        item = parse_node_item(raw, i)
        parsed[item["node_id"]] = item  # a repeated id: the last one wins, as sequential adds would
    built = [make_node(graph, item) for item in parsed.values()]
    if built:
        with graph.store.transaction():
            graph.store.put_nodes(built, actor=graph.actor)
            if len(built) == 1:
                graph._audit("graph.node.add", built[0].id, {"type": built[0].kind})
            else:
                graph._audit("graph.node.add", graph.namespace, {"nodes": len(built)})
    return len(built)


def add_edges(graph: WritingGraph, edges: Iterable[dict[str, Any]]) -> int:
    items = [parse_edge_item(raw, i) for i, raw in enumerate(edges)]
    live = graph._live_among({x for item in items for end in item[:2] for x in (end, graph._prefix + end)})
    sid_of: dict[str, str] = {}
    missing: dict[str, Node] = {}
    for item in items:
        for end in (item[0], item[1]):
            if end in sid_of:
                continue
            own = graph._prefix + end
            if own in live or end not in live:
                sid_of[end] = own
                if own not in live:
                    missing[own] = make_node(graph, {"node_id": end, "node_type": DEFAULT_NODE_TYPE})
            else:
                sid_of[end] = end
    built: dict[tuple[str, str, str], Edge] = {}  # (src, type, dst): a repeat in one call, the last wins
    ns = graph.namespace
    for src, dst, etype, weight, props, vf, vu in items:
        if vf is not None or vu is not None:
            vf, vu = to_utc_iso(vf), to_utc_iso(vu)
            if vf and vu and vu <= vf:
                raise ValidationError("edge valid_until must be after valid_from", source_id=src, target_id=dst)
        s, d = sid_of[src], sid_of[dst]
        built[(s, etype, d)] = Edge(src=s, type=etype, dst=d, namespace=ns, weight=weight, props=props,
                                    valid_from=vf, valid_until=vu)
    with graph.store.transaction():
        if missing:
            graph.store.put_nodes(list(missing.values()), actor=graph.actor)
        if built:
            graph.store.put_edges(list(built.values()), actor=graph.actor)
            if len(built) == 1:
                (s, t, d), edge = next(iter(built.items()))
                graph._audit("graph.edge.add", f"{graph.namespace}/{graph.user_id(s)} {t} {graph.user_id(d)}",
                             {"weight": edge.weight})
            else:
                graph._audit("graph.edge.add", graph.namespace, {"edges": len(built)})
    return len(built)


def require_own(graph: WritingGraph, sid: str, what: str) -> None:
    """Refuse to change a record of another namespace through this graph (a doc, a memory, another graph's)."""
    node = graph.store.get_node(sid)
    if node is not None and node.namespace != graph.namespace:
        raise ValidationError(f"{what} {graph.user_id(sid)!r} is not a node of {graph.namespace} and this graph "
                              "changes only its own nodes; change it through its own capability (a doc with "
                              "doc put, a memory with forget)", node_id=graph.user_id(sid), graph=graph.name)


def retract_node(graph: WritingGraph, node_id: str, at: Any = None) -> int:
    sid = graph.require(node_id)
    require_own(graph, sid, "node")
    with graph.store.transaction():
        count = graph.store.retract_nodes([sid], actor=graph.actor, at=to_utc_iso(at))
        graph._audit("graph.node.retract", sid)
    return count


def retract_edge(graph: WritingGraph, source_id: str, target_id: str, edge_type: str = "related_to",
                 at: Any = None) -> int:
    src, dst = graph.require(source_id), graph.require(target_id)
    eid = edge_id(src, edge_type, dst)
    if any(e.id == eid and e.namespace != graph.namespace for e in graph.store.edges(src=src, dst=dst,
                                                                                     type=edge_type)):
        raise ValidationError(f"the edge {source_id} -{edge_type}-> {target_id} is not held by {graph.namespace}; "
                              "this graph retracts only its own edges", graph=graph.name)
    with graph.store.transaction():
        count = graph.store.retract_edges([eid], actor=graph.actor, at=to_utc_iso(at))
        graph._audit("graph.edge.retract", f"{graph.namespace}/{source_id} {edge_type} {target_id}")
    return count


def retracted_node(graph: Any, node_id: str) -> str | None:
    """The store id of a retracted (not purged) node of ``graph``'s own namespace named ``node_id``, or None."""
    sid = graph.store_id(node_id)
    node = graph.store.get_node(sid, include_retracted=True)
    return sid if node is not None and node.retracted_at is not None and node.namespace == graph.namespace else None


def purge_node(graph: WritingGraph, node_id: str, reason: str = "", at: Any = None,
               erasure: str | None = None) -> dict[str, Any]:
    reserved = reserved_namespace(node_id)  # an id that names its namespace is checked before the lookup
    if reserved is not None:
        access.require_own(graph.workspace, graph.principal, graph.namespace, reserved, node_id, "graph.purge")
    sid = graph.resolve(node_id)
    if sid is None:  # a node retracted before: purging removes the history it left
        sid = retracted_node(graph, node_id)
    if sid is not None:
        found = graph.store.get_node(sid, include_retracted=True)
        if found is not None:
            access.require_own(graph.workspace, graph.principal, graph.namespace, found.namespace, sid,
                               "graph.purge")
    if sid is None:
        own = graph.store_id(node_id)
        stone = graph.store.tombstone(own) or graph.store.tombstone(node_id)
        return {"nodes": 0, "edges": 0, "versions": 0, "vectors": 0, "tombstone": stone}
    when = to_utc_iso(at) or utcnow()
    totals = graph.store.purge_nodes([sid], reason=reason, actor=graph.actor, at=when, erasure=erasure)
    return {**totals, "tombstone": graph.store.tombstone(sid)}


def purge_namespace(graph: WritingGraph) -> None:
    """``clear()`` of a workspace graph: every node of its namespace purged (retracted ones too), audited."""
    ids = graph.store.node_ids(graph.namespace, include_retracted=True)
    if ids:
        with graph.store.transaction():
            graph.store.purge_nodes(ids, reason="graph.clear", actor=graph.actor)
            graph._audit("graph.clear", graph.namespace, {"nodes": len(ids)})
