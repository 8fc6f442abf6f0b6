"""Browsing packs as people do: a paged, filtered, sorted doc list, facets, search across packs, a doc's
inbound and outbound edges, why each doc of a flash is there, and a pack's graph (nodes, typed edges,
cycles and missing targets).

Every function checks access like the four tools (a pack one may not see answers like a missing one) and
returns only docs the principal may read. The doc table behind the list and the facets is derived from the
store and cached by the change counter (``Workspace.cached``).
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Any, NamedTuple, Sequence

from .. import access
from ..errors import ValidationError
from ..model import MAX_DOCS_PAGE
from ..workspace import Workspace
from .graphview import pack_view
from .lint import lint
from .manifest import check_pack_name, check_selector
from .packs import doc_id, get_pack, list_packs, missing_doc
from .search import search_knowledge

SORTS = ("selector", "title", "kind", "version", "updated")
MAX_PAGE = MAX_DOCS_PAGE


class DocRow(NamedTuple):
    selector: str
    title: str
    kind: str
    tags: tuple[str, ...]
    version: int
    updated_at: str
    updated_by: str
    summary: str


def _rows(ws: Workspace, pack: str) -> list[DocRow]:
    def build() -> list[DocRow]:
        return [DocRow(n.key, n.title, n.kind, tuple(n.tags), n.version, n.recorded_at or "", n.created_by,
                       n.summary) for n in ws.store.find_nodes(namespace=pack, with_content=False, order="key")]

    return ws.cached(f"catalog.rows:{pack}", build, namespace=pack)


def _readable_rows(ws: Workspace, pack: str, principal: str | None, action: str) -> list[DocRow]:
    check_pack_name(pack)
    access.require_visible(ws, principal, pack, action, pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    rows = _rows(ws, pack)
    readable = access.doc_filter(ws, principal, pack)
    return rows if readable is None else [r for r in rows if readable(r.selector)]


def list_docs(ws: Workspace, pack: str, kind: str | None = None, tag: str | None = None,
              prefix: str | None = None, sort: str = "selector", descending: bool = False, offset: int = 0,
              limit: int = 50, principal: str | None = None) -> dict[str, Any]:
    """One page of a pack's readable docs: ``total`` (after filters), ``offset``, ``limit`` and ``docs``
    (selector, title, kind, tags, version, updated_at, updated_by, summary). ``tag`` and ``kind`` match
    exactly, ``prefix`` matches the start of the selector; ``sort`` is one of SORTS."""
    if sort not in SORTS:
        raise ValidationError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}", sort=sort)
    for name, value in (("offset", offset), ("limit", limit)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValidationError(f"{name} must be a non-negative integer, got {value!r}")
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be from 1 to {MAX_PAGE}, got {limit}", limit=limit)
    rows = _readable_rows(ws, pack, principal, "docs")
    if kind:
        rows = [r for r in rows if r.kind == kind]
    if tag:
        rows = [r for r in rows if tag in r.tags]
    if prefix:
        rows = [r for r in rows if r.selector.startswith(prefix)]
    if sort != "selector" or descending:
        key = {"selector": lambda r: r.selector, "title": lambda r: (r.title.lower(), r.selector),
               "kind": lambda r: (r.kind, r.selector), "version": lambda r: (r.version, r.selector),
               "updated": lambda r: (r.updated_at, r.selector)}[sort]
        rows = sorted(rows, key=key, reverse=descending)
    page = rows[offset: offset + limit]
    return {"pack": pack, "total": len(rows), "offset": offset, "limit": limit, "sort": sort,
            "descending": descending, "docs": [r._asdict() | {"tags": list(r.tags)} for r in page]}


def pack_facets(ws: Workspace, pack: str, principal: str | None = None) -> dict[str, Any]:
    """How many readable docs of the pack have each kind and each tag (most common first)."""
    rows = _readable_rows(ws, pack, principal, "docs")
    kinds = Counter(r.kind for r in rows)
    tags = Counter(t for r in rows for t in r.tags)
    return {"pack": pack, "docs": len(rows), "kinds": dict(kinds.most_common()), "tags": dict(tags.most_common())}


def search_packs(ws: Workspace, query: str, limit: int = 20, principal: str | None = None,
                 min_score: float = 0.0) -> list[dict[str, Any]]:
    """``search_knowledge`` over every pack the principal may see, merged best first; each hit names its pack.
    Scores are absolute and comparable across packs; ``min_score`` drops weaker hits."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("search across packs needs a query")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ValidationError(f"limit must be an integer from 1 to 1000, got {limit!r}")
    hits = []
    for p in list_packs(ws, principal):
        for h in search_knowledge(ws, p["pack"], query, limit=limit, principal=principal, min_score=min_score):
            hits.append({"pack": p["pack"], **h.to_dict()})
    hits.sort(key=lambda h: (-h["score"], h["pack"], h["selector"]))
    return hits[:limit]


def doc_links(ws: Workspace, pack: str, selector: str, principal: str | None = None) -> dict[str, Any]:
    """A doc's outbound edges (declared order) and inbound edges (by source selector), only to and from
    readable docs; each entry has type, selector, title and whether the other doc exists."""
    check_pack_name(pack)
    check_selector(selector, "selector")
    access.require_doc(ws, principal, pack, selector, "read", "links")  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    view = pack_view(ws, pack)
    me = doc_id(pack, selector)
    if not view.exists(me):
        raise missing_doc(ws, pack, selector, principal)
    readable = access.doc_filter(ws, principal, pack)

    def entry(etype: str, other: str) -> dict[str, Any] | None:
        sel = other.split("/", 1)[1]
        if readable is not None and not readable(sel):
            return None
        meta = view.meta.get(other)
        return {"type": etype, "selector": sel, "exists": meta is not None, "title": meta.title if meta else None}

    outbound = [e for e in (entry(t, d) for t, d in view.outbound.get(me, [])) if e]
    inbound = sorted((e for e in (entry(t, s) for t, s in view.inbound.get(me, [])) if e),
                     key=lambda e: (e["selector"], e["type"]))
    return {"pack": pack, "selector": selector, "outbound": outbound, "inbound": inbound}


def why_paths(ws: Workspace, pack: str, targets: Sequence[str], principal: str | None = None
              ) -> dict[str, list[str]]:
    """For every doc a flash of ``targets`` pulls in: the shortest ``depends_on`` path from a target to it
    (a target's own path is just itself). Breadth-first from all targets at once, in the order given."""
    check_pack_name(pack)
    for t in targets:
        check_selector(t, "target")
    access.require(ws, principal, pack, "read", "why", pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    view = pack_view(ws, pack)
    parent: dict[str, str | None] = {}
    queue: deque[str] = deque()
    for t in targets:
        tid = doc_id(pack, t)
        if tid not in parent:
            parent[tid] = None
            queue.append(tid)
    while queue:
        here = queue.popleft()
        for dep in view.depends_on.get(here, []):
            if dep not in parent:
                parent[dep] = here
                queue.append(dep)
    out: dict[str, list[str]] = {}
    for node in parent:
        path = [node]
        while parent[path[-1]] is not None:
            path.append(parent[path[-1]])  # type: ignore[arg-type]
        out[node.split("/", 1)[1]] = [p.split("/", 1)[1] for p in reversed(path)]
    return out


def cached_lint(ws: Workspace, pack: str, principal: str | None = None) -> dict[str, Any]:
    """``lint`` of a pack, remembered until the store changes (lint needs read on the whole pack)."""
    check_pack_name(pack)
    access.require(ws, principal, pack, "read", "lint", pack)  # before the lookup: reveals nothing
    return ws.cached(f"catalog.lint:{pack}", lambda: lint(ws, pack, principal=ws.owner), namespace=pack)


def pack_graph(ws: Workspace, pack: str, focus: str | None = None, depth: int = 2, max_nodes: int = 5000,
               principal: str | None = None) -> dict[str, Any]:
    """The pack's docs and typed edges for drawing: ``nodes`` (selector, title, kind, in_cycle, missing),
    ``edges`` (source, target, type). Targets that do not exist are nodes with ``missing`` true. With
    ``focus``, only docs within ``depth`` edges of it (either direction). ``truncated`` is True when more
    than ``max_nodes`` docs would be drawn (then only the first ``max_nodes`` by selector are)."""
    if not isinstance(depth, int) or isinstance(depth, bool) or not 0 <= depth <= 20:
        raise ValidationError(f"depth must be from 0 to 20, got {depth!r}")
    report = cached_lint(ws, pack, principal)
    view = pack_view(ws, pack)
    readable = access.doc_filter(ws, principal, pack)
    ids = [i for i in view.order if readable is None or readable(i.split("/", 1)[1])]
    if focus is not None:
        check_selector(focus, "focus")
        start = doc_id(pack, focus)
        if start not in view.ids or (readable is not None and not readable(focus)):
            raise missing_doc(ws, pack, focus, principal)
        seen = {start: 0}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            if seen[here] >= depth:
                continue
            for _t, other in view.outbound.get(here, []) + view.inbound.get(here, []):
                if other not in seen and other in view.ids:
                    seen[other] = seen[here] + 1
                    queue.append(other)
        keep = set(seen)
        ids = [i for i in ids if i in keep]
    truncated = len(ids) > max_nodes
    ids = ids[:max_nodes]
    shown = set(ids)
    in_cycle = {s for c in report["cycles"] for s in c}
    nodes = [{"selector": view.meta[i].key, "title": view.meta[i].title, "kind": view.meta[i].kind,
              "in_cycle": view.meta[i].key in in_cycle, "missing": False} for i in ids]
    edges = []
    missing: dict[str, dict[str, Any]] = {}
    for src in ids:
        for etype, dst in view.outbound.get(src, []):
            target = dst.split("/", 1)[1]
            if dst not in view.ids:
                missing.setdefault(target, {"selector": target, "title": target, "kind": "missing",
                                            "in_cycle": False, "missing": True})
            elif dst not in shown:
                continue
            edges.append({"source": src.split("/", 1)[1], "target": target, "type": etype})
    return {"pack": pack, "focus": focus, "depth": depth, "truncated": truncated,
            "nodes": nodes + list(missing.values()), "edges": edges, "cycles": report["cycles"]}
