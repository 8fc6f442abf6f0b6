"""The graph explorer: search a node of a graph the principal reads (``graph:default`` or a named graph), draw its
neighbourhood N hops out with the edge types and their validity (now, or as the graph stood at a date), filter
it by node type and namespace, open a node (properties, versions, the memories that mention it, the decisions
linked to it), with PageRank as size and communities as colour. Every read goes through ``ContextGraph`` acting
as the session's principal, so a graph it may not read answers 404 and a node it may not see is not there."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import access
from ...errors import NotFoundError, ValidationError
from ...graph.context_graph import ContextGraph, workspace_graph
from ...graph.records import node_dict
from ...model import to_utc_iso, utcnow
from ..layout import layered
from ..render import page, with_query
from ..requests import console, principal
from . import int_param, text_param

DEFAULT_LIMIT = 150
MAX_LIMIT = 2000
LABEL_CHARS = 28
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]


def readable_graphs(ws: Any, who: str) -> list[str]:
    """The graph names (``default`` first) whose namespace the principal may read."""
    names = {ns[len("graph:"):] for ns in ws.store.namespaces() if ns.startswith("graph:")} | {"default"}
    return [n for n in sorted(names, key=lambda n: (n != "default", n)) if access.can(ws, who, f"graph:{n}", "read")]


def open_graph(ws: Any, who: str, name: str) -> ContextGraph:
    """The graph ``name`` acting as ``who``; one it may not read answers like a missing one."""
    graph = workspace_graph(ws, who, None if name == "default" else name)
    if not graph.readable():
        raise NotFoundError(f"no graph {name!r} here")
    return graph


def explore_url(**query: Any) -> str:
    return with_query("/graph", **query)


def _label(node: dict[str, Any]) -> str:
    props = node.get("properties") or {}
    text = str(props.get("title") or props.get("name") or node["id"])
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _holds(item: dict[str, Any], when: str) -> bool:
    """Whether a node or edge is valid at ``when`` (ISO UTC)."""
    start, end = item.get("valid_from"), item.get("valid_until")
    return (not start or str(start) <= when) and (not end or when < str(end)) and not item.get("retracted_at")


def neighbourhood(graph: ContextGraph, focus: str, hops: int, as_of: str | None, limit: int) -> dict[str, Any]:
    """The nodes within ``hops`` of ``focus`` (both directions, nearest first, at most ``limit``) and the edges
    between them, as the graph stands now or stood ``as_of``: read in bulk from the graph's adjacency (only the
    edges between nodes the principal sees) and one batched node lookup."""
    distances = graph.hop_distances(focus, hops, "both", as_of)
    ids = sorted(distances, key=lambda i: (distances[i], i))[:limit]
    csr = graph.csr(as_of)
    sid_of = {graph.user_id(s): s for s in csr.ids}
    sids = [sid_of[i] for i in ids if i in sid_of]
    if focus in ids and focus not in sid_of:  # an isolated node is not in the adjacency
        sids.append(graph.require(focus))
    found = graph.store.get_nodes(sids, as_of=as_of)
    nodes = {graph.user_id(s): node_dict(found[s], graph.user_id) for s in sids if s in found and graph.sees(found[s])}
    keep = {sid_of[i] for i in nodes if i in sid_of}
    edges: list[dict[str, Any]] = []
    for sid in keep:
        a = csr.index[sid]
        for pos in range(int(csr.ptr[a]), int(csr.ptr[a + 1])):
            dst = csr.ids[int(csr.dst[pos])]
            if dst in keep:
                start, end = csr.timed.get(pos, (None, None))
                edges.append({"source": graph.user_id(sid), "target": graph.user_id(dst),
                              "type": csr.types[int(csr.etype[pos])], "weight": round(float(csr.weight[pos]), 4),
                              "valid_from": start, "valid_until": end})
    edges.sort(key=lambda e: (distances.get(e["source"], 0), e["source"], e["type"], e["target"]))
    return {"distances": distances, "nodes": nodes, "edges": edges, "truncated": len(distances) > limit}


def _analytics(graph: ContextGraph) -> tuple[dict[str, float], dict[str, int]]:
    ranks = graph.pagerank() if graph.advanced_analytics else {}
    membership = graph.detect_communities()["membership"] if graph.community_detection else {}
    return ranks, membership


def drawing(graph: ContextGraph, hood: dict[str, Any], focus: str, when: str) -> dict[str, Any]:
    """vis-network nodes and edges: rows by hop distance, spaced by label width; size by PageRank, colour by
    community; an edge not valid at ``when`` is drawn dashed and grey."""
    ranks, membership = _analytics(graph)
    top = max((ranks.get(n, 0.0) for n in hood["nodes"]), default=0.0) or 1.0
    labels = {n: _label(node) for n, node in hood["nodes"].items()}
    tree = [(e["target"], e["source"]) for e in hood["edges"]
            if hood["distances"].get(e["target"], 0) == hood["distances"].get(e["source"], 0) + 1]
    tree += [(e["source"], e["target"]) for e in hood["edges"]
             if hood["distances"].get(e["source"], 0) == hood["distances"].get(e["target"], 0) + 1]
    pos = layered(list(hood["nodes"]), tree, labels=labels)
    out_nodes = []
    for nid, node in hood["nodes"].items():
        community = membership.get(nid)
        out_nodes.append({
            "id": nid, "label": labels[nid], "kind": node["type"], "x": pos[nid][0], "y": pos[nid][1],
            "focus": nid == focus, "cycle": False, "missing": False, "shape": "dot",
            "size": round(8 + 16 * ranks.get(nid, 0.0) / top, 1),
            "color": PALETTE[community % len(PALETTE)] if community is not None else "#888888",
            "url": explore_url(graph=graph.name, node=nid)})
    out_edges = [{"from": e["source"], "to": e["target"], "type": e["type"], "holds": _holds(e, when)}
                 for e in hood["edges"]]
    return {"nodes": out_nodes, "edges": out_edges, "explore": True}


def node_panel(graph: ContextGraph, ws: Any, focus: str, as_of: str | None) -> dict[str, Any]:
    """A node's properties, its versions, and its direct neighbours that are memories or decisions."""
    node = graph.find_node(focus, as_of=as_of)
    if node is None:
        raise NotFoundError(f"no node {focus!r} in graph {graph.name!r}" + (f" at {as_of}" if as_of else ""))
    near = graph.get_neighbors(focus, hops=1, direction="both", as_of=as_of, limit=500)
    memories = [n for n in near if n["type"] == "memory"]
    decisions = [n for n in near if n["type"] == "decision"]
    if node["type"] == "decision":
        decisions = [node] + decisions
    return {"node": node, "versions": graph.node_history(focus), "memories": memories[:50],
            "decisions": decisions[:50]}


async def explore_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    names = readable_graphs(ws, who)
    name = text_param(q, "graph") or "default"
    graph = open_graph(ws, who, name)
    focus, query = text_param(q, "node"), text_param(q, "q")
    hops = int_param(q, "hops", 2, 0, 6) or 0
    limit = int_param(q, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT) or DEFAULT_LIMIT
    as_of = text_param(q, "as_of")
    if as_of is not None:
        try:
            as_of = to_utc_iso(as_of)
        except (ValueError, TypeError):
            raise ValidationError(f"as_of must be a date like 2026-01-31 or 2026-01-31T12:00, got {as_of[:40]!r}") \
                from None
    type_filter, ns_filter = text_param(q, "type"), text_param(q, "namespace")
    hits = graph.query(query, limit=30) if query else None
    if focus is None and hits:
        focus = hits[0]["id"]
    top = None
    if focus is None and not query:
        top = [{"id": k, "score": v} for k, v in graph.pagerank(top_k=20).items()]
    ctx: dict[str, Any] = {"graphs": names, "graph": name, "focus": focus, "query": query, "hits": hits, "top": top,
                           "hops": hops, "limit": limit, "as_of": as_of, "type_filter": type_filter,
                           "ns_filter": ns_filter, "explore_url": explore_url, "drawing": None, "panel": None,
                           "types": [], "namespaces": [], "truncated": False}
    if focus is not None:
        ctx["panel"] = node_panel(graph, ws, focus, as_of)
        hood = neighbourhood(graph, focus, hops, as_of, limit)
        ctx["types"] = sorted({n["type"] for n in hood["nodes"].values()})
        ctx["namespaces"] = sorted({n["namespace"] for n in hood["nodes"].values()})
        hood["nodes"] = {k: n for k, n in hood["nodes"].items() if k == focus or (
            (not type_filter or n["type"] == type_filter) and (not ns_filter or n["namespace"] == ns_filter))}
        hood["edges"] = [e for e in hood["edges"] if e["source"] in hood["nodes"] and e["target"] in hood["nodes"]]
        ctx["drawing"] = drawing(graph, hood, focus, as_of or utcnow())
        ctx["edges"] = hood["edges"]
        ctx["truncated"] = hood["truncated"]
        ctx["when"] = as_of or utcnow()
    return page(request, "explore.html", **ctx)


ROUTES = [Route("/graph", explore_page)]
