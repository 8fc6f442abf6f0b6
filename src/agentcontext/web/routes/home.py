"""The home page: what the workspace holds as far as the principal may read it (packs and their docs, memories,
the graph), its lint problems across packs, recent activity (its own audit entries; an admin sees everyone's),
and, for the owner or an admin of ``*``, the store (backend, schema version, sizes)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import access
from ...graph.context_graph import workspace_graph
from ...knowledge import catalog, packs
from ..render import page
from ..requests import console, principal

LINT_KEYS = ("cycles", "missing_targets", "redundant_edges", "orphans", "oversize", "unknown_edge_types")
MEMORY = "memory:default"


def _lint_rows(ws: Any, who: str, listing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for p in listing:
        if not access.can(ws, who, p["pack"], "read"):  # lint reads the whole pack
            continue
        report = catalog.cached_lint(ws, p["pack"], who)
        problems = {k: report[k] for k in LINT_KEYS if report.get(k)}
        if problems:
            rows.append({"pack": p["pack"], "problems": problems})
    return rows


async def home_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    listing = packs.list_packs(ws, who)
    graph = workspace_graph(ws, who)
    counts = {"packs": len(listing), "docs": sum(int(p.get("docs") or 0) for p in listing),
              "memories": ws.store.count_nodes(MEMORY) if access.can(ws, who, MEMORY, "read") else None,
              "graph": graph.stats() if graph.readable() else None}
    store = access.store_info(ws, who) if access.is_superadmin(ws, who) else None
    recent = access.audit_log(ws, who, limit=15)[::-1]
    return page(request, "home.html", counts=counts, store=store, recent=recent, lint=_lint_rows(ws, who, listing),
                listing=listing)


ROUTES = [Route("/", home_page)]
