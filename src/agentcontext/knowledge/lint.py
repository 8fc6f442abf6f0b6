"""Maintenance helpers: ``lint`` (cycles, unknown targets, redundant edges, orphans, oversize docs, edge types
outside the known vocabulary) and ``why``."""
from __future__ import annotations

import difflib
from typing import Any

from .. import access
from ..errors import NotFoundError
from ..model import OVERSIZE_TOKENS
from ..engine.closure import cycle_in, redundant_edges, shortest_path, strongly_connected
from ..workspace import Workspace
from .graphview import pack_view
from .manifest import EDGE_TYPES, check_selector
from .packs import doc_id, get_pack, missing_doc



def _sel(doc: str) -> str:
    return doc.split("/", 1)[1]


def lint(ws: Workspace, pack: str, max_tokens: int = OVERSIZE_TOKENS, principal: str | None = None) -> dict[str, Any]:
    """Every problem found, grouped by kind; ``ok`` is True when there is none. Cycles and missing targets are
    errors; the rest are warnings (an edge type outside ``EDGE_TYPES`` is kept and traversed, and flagged in
    case it is a typo: ``did_you_mean`` names the closest known type)."""
    access.require(ws, principal, pack, "read", "lint", pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    view = pack_view(ws, pack)
    cycles = [[_sel(n) for n in cycle_in(comp, view.depends_on)]
              for comp in strongly_connected(view.order, view.depends_on)]
    missing = [{"selector": _sel(src), "type": etype, "target": _sel(dst)}
               for src in view.order for etype, dst in view.outbound.get(src, []) if dst not in view.ids]
    in_cycle = {n for c in cycles for n in c}
    acyclic = {k: [c for c in v if c in view.ids] for k, v in view.depends_on.items() if _sel(k) not in in_cycle}
    redundant = [{"selector": _sel(a), "target": _sel(b), "implied_by": [_sel(x) for x in path]}
                 for a, b, path in redundant_edges(acyclic)]
    orphans = [_sel(i) for i in view.order if not view.outbound.get(i) and not view.inbound.get(i)]
    oversize = [{"selector": view.meta[i].key, "tokens": view.meta[i].tokens}
                for i in view.order if view.meta[i].tokens is not None and view.meta[i].tokens > max_tokens]
    unknown_types = [{"selector": _sel(src), "type": etype, "target": _sel(dst),
                      "did_you_mean": (difflib.get_close_matches(etype, EDGE_TYPES, n=1) or [None])[0]}
                     for src in view.order for etype, dst in view.outbound.get(src, []) if etype not in EDGE_TYPES]
    problems = {"cycles": cycles, "missing_targets": missing, "redundant_edges": redundant,
                "orphans": orphans if len(view.order) > 1 else [], "oversize": oversize,
                "unknown_edge_types": unknown_types}
    return {"pack": pack, "docs": len(view.order), "ok": not any(problems.values()), **problems}


def why(ws: Workspace, pack: str, from_selector: str, to_selector: str, principal: str | None = None) -> list[str]:
    """The dependency path (selectors) by which ``from_selector`` pulls ``to_selector`` into its flash."""
    check_selector(from_selector, "from")
    check_selector(to_selector, "to")
    access.require(ws, principal, pack, "read", "why", pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    view = pack_view(ws, pack)
    for s in (from_selector, to_selector):
        if not view.exists(doc_id(pack, s)):
            raise missing_doc(ws, pack, s, principal)
    path = shortest_path(doc_id(pack, from_selector), doc_id(pack, to_selector), view.depends_on)
    if path is None:
        raise NotFoundError(f"{from_selector} does not depend on {to_selector} in {pack}, directly or "
                            "transitively", pack=pack, source=from_selector, target=to_selector)
    return [_sel(p) for p in path]
