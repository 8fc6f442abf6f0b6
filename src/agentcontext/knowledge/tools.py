"""The four knowledge tools agents already know (seed 002), as plain functions over a workspace."""
from __future__ import annotations

from typing import Any, Sequence

from .. import access
from ..workspace import Workspace
from .graphview import pack_view
from .manifest import check_edge_type, check_pack_name, check_selector
from .packs import doc_id, get_pack, list_packs, missing_doc
from .search import search_knowledge as _search


def list_knowledge_packs(ws: Workspace, principal: str | None = None) -> list[dict[str, Any]]:
    """Every pack the principal may read: name, title, doc count, whether it is editable."""
    return [{"pack": p["pack"], "name": p["name"], "pack_id": p["pack_id"], "docs": p["docs"],
             "editable": p["editable"]} for p in list_packs(ws, principal)]


def list_knowledge_docs(ws: Workspace, pack: str, principal: str | None = None) -> list[dict[str, Any]]:
    """Every doc of ``pack`` the principal may read (selector, title, kind, summary), sorted by selector."""
    check_pack_name(pack)
    access.require_visible(ws, principal, pack, "list", pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    view = pack_view(ws, pack)
    metas = (view.meta[i] for i in view.order)
    return [{"selector": m.key, "title": m.title, "kind": m.kind, "summary": m.summary} for m in metas
            if readable is None or readable(m.key)]


def search_knowledge(ws: Workspace, pack: str, query: str = "", tags: Sequence[str] | None = None,
                     kind: str | None = None, selector_prefix: str | None = None, related_to: str | None = None,
                     edge_type: str | None = None, limit: int = 10, principal: str | None = None,
                     min_score: float = 0.0) -> list[dict[str, Any]]:
    """Candidate docs by metadata first; each hit has selector, title, kind, summary, tags, score (absolute
    relevance in [0, 1]; ``min_score`` drops weaker hits) and signals (each one's share of the score)."""
    hits = _search(ws, pack, query, tags=tags, kind=kind, selector_prefix=selector_prefix, related_to=related_to,
                   edge_type=edge_type, limit=limit, principal=principal, min_score=min_score)
    return [h.to_dict() for h in hits]


def list_knowledge_neighbors(ws: Workspace, pack: str, selector: str, edge_type: str | None = None,
                             principal: str | None = None) -> list[dict[str, Any]]:
    """Outbound typed edges of one doc, sorted by target selector then edge type, without duplicates."""
    check_pack_name(pack)
    check_selector(selector, "selector")
    if edge_type is not None:
        edge_type = check_edge_type(edge_type, "edge_type")
    access.require_doc(ws, principal, pack, selector, "read", "neighbors")  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    view = pack_view(ws, pack)
    src = doc_id(pack, selector)
    if not view.exists(src):
        raise missing_doc(ws, pack, selector, principal)
    seen = set()
    out = []
    targets = ws.store.get_nodes([dst for _, dst in view.outbound.get(src, [])])
    for etype, dst in view.outbound.get(src, []):
        if edge_type is not None and etype != edge_type or (etype, dst) in seen:
            continue
        if readable is not None and not readable(dst.split("/", 1)[1]):
            continue  # never reveal docs the principal may not read
        seen.add((etype, dst))
        node = targets.get(dst)
        out.append({"selector": dst.split("/", 1)[1], "type": etype, "exists": node is not None,
                    "title": node.title if node else None, "kind": node.kind if node else None,
                    "summary": node.summary if node else None})
    out.sort(key=lambda n: (n["selector"], n["type"]))
    return out


def read_knowledge_doc(ws: Workspace, pack: str, selector: str, version: int | None = None,
                       principal: str | None = None) -> dict[str, Any]:
    """The full body of one doc with its metadata and outbound edges (``version=`` reads an older one)."""
    check_pack_name(pack)
    check_selector(selector, "selector")
    access.require_doc(ws, principal, pack, selector, "read", "read")  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    nid = doc_id(pack, selector)
    node = ws.store.node_version(nid, version) if version is not None else ws.store.get_node(nid)
    if node is None or (version is not None and node.retracted_at is not None):
        raise missing_doc(ws, pack, selector, principal, f" version {version}" if version else "", version=version)
    readable = access.doc_filter(ws, principal, pack)
    related = [{"type": e.type, "target": e.dst.split("/", 1)[1]}
               for e in ws.store.edges(src=nid, as_of=node.recorded_at if version is not None else None)
               if readable is None or readable(e.dst.split("/", 1)[1])]
    return {"pack": pack, "selector": node.key, "title": node.title, "summary": node.summary, "kind": node.kind,
            "tags": node.tags, "related": related, "content": node.content, "version": node.version,
            "content_hash": node.content_hash, "updated_at": node.recorded_at, "updated_by": node.created_by,
            "source_path": node.props.get("source_path", "")}
