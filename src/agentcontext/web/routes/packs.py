"""Pack pages: every readable pack with facets and search, one pack's docs table, its graph, lint and fixes,
and the flash preview."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...errors import BudgetExceededError, CycleError, MissingModuleError, ValidationError
from ...knowledge import catalog, packs
from ...operations import knowledge as ops
from ..operations import form_input, run, serves
from ..requests import checked_form, console, principal
from ..layout import layered
from ..render import doc_url, page, pack_url
from . import int_param

PAGE_SIZE = 50
SEARCH_HITS = 30
serves(ops.SEARCH_ALL, "/packs")
serves(ops.SEARCH, "/packs/{pack}")
serves(ops.REINDEX, "/reindex")
serves(ops.FLASH, "/packs/{pack}/flash")
serves(ops.CREATE, "/packs/{pack}/new")
GRAPH_MAX_NODES = 3000


async def pack_list(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    query = request.query_params.get("q", "").strip()
    rows = packs.list_packs(ws, who)
    facets = {r["pack"]: catalog.pack_facets(ws, r["pack"], who) for r in rows}
    hits = run(request, ops.SEARCH_ALL, form_input(ops.SEARCH_ALL, {"query": query}, limit=30))["hits"] if query \
        else None
    return page(request, "packs.html", packs=rows, facets=facets, query=query, hits=hits)


async def pack_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack = request.path_params["pack"]
    q = request.query_params
    offset = int_param(q, "offset", 0, 0, 10**9)
    listing = catalog.list_docs(ws, pack, kind=q.get("kind") or None, tag=q.get("tag") or None,
                                prefix=q.get("prefix") or None, sort=q.get("sort") or "selector",
                                descending=q.get("desc") == "1", offset=offset, limit=PAGE_SIZE, principal=who)
    info = next(p for p in packs.list_packs(ws, who) if p["pack"] == pack)
    facets = catalog.pack_facets(ws, pack, who)
    filters = {k: q.get(k) or None for k in ("kind", "tag", "prefix", "sort", "desc")}
    query = (q.get("q") or "").strip() or None
    hits = None
    if query:  # search this pack with the same filters (the declared search_knowledge operation)
        hits = run(request, ops.SEARCH, form_input(ops.SEARCH, {}, pack=pack, query=query, kind=filters["kind"],
                                                   selector_prefix=filters["prefix"],
                                                   tags=[filters["tag"]] if filters["tag"] else None,
                                                   limit=SEARCH_HITS))["hits"]
    return page(request, "pack.html", pack=pack, info=info, listing=listing, facets=facets, filters=filters,
                query=query, hits=hits)


LABELLED_MAX = 400  # up to this many docs, rows are spaced by label width (no overlaps); beyond, the compact
# layout is kept: its fitted view is zoomed out below the label threshold and draws in half the time


async def graph_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack = request.path_params["pack"]
    focus = request.query_params.get("focus") or None
    depth = int_param(request.query_params, "depth", 2, 0, 20)
    graph = catalog.pack_graph(ws, pack, focus=focus, depth=depth, max_nodes=GRAPH_MAX_NODES, principal=who)
    positions = layered([n["selector"] for n in graph["nodes"]],
                        [(e["source"], e["target"]) for e in graph["edges"] if e["type"] == "depends_on"],
                        labels={n["selector"]: n["title"] or n["selector"] for n in graph["nodes"]}
                        if len(graph["nodes"]) <= LABELLED_MAX else None)
    drawing = {
        "nodes": [{"id": n["selector"], "label": n["title"] or n["selector"], "kind": n["kind"],
                   "cycle": n["in_cycle"], "missing": n["missing"], "x": positions[n["selector"]][0],
                   "y": positions[n["selector"]][1], "url": None if n["missing"] else doc_url(pack, n["selector"])}
                  for n in graph["nodes"]],
        "edges": [{"from": e["source"], "to": e["target"], "type": e["type"]} for e in graph["edges"]],
    }
    return page(request, "graph.html", pack=pack, graph=graph, drawing=drawing, focus=focus, depth=depth)


async def lint_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack = request.path_params["pack"]
    report = catalog.cached_lint(ws, pack, who)
    info = next(p for p in packs.list_packs(ws, who) if p["pack"] == pack)
    return page(request, "lint.html", pack=pack, report=report, info=info, done=request.query_params.get("done"))


async def fix_drop_edge(request: Request) -> Response:
    form = await checked_form(request)
    pack = request.path_params["pack"]
    selector, target = str(form.get("selector", "")), str(form.get("target", ""))
    packs.set_edge(console(request).ws, pack, selector, "depends_on", target, present=False,
                   principal=principal(request))
    return RedirectResponse(pack_url(pack, "lint", done=f"dropped {selector} depends_on {target}"), status_code=303)


async def fix_stub(request: Request) -> Response:
    form = await checked_form(request)
    pack = request.path_params["pack"]
    target, needed_by = str(form.get("target", "")), str(form.get("needed_by", ""))
    run(request, ops.CREATE, ops.CREATE.parse({
        "pack": pack, "selector": target, "title": target.rsplit(".", 1)[-1].replace("_", " ").title(),
        "summary": f"Stub created from lint: {needed_by} refers to it. Write what it should say.", "kind": "stub",
        "content": f"(A stub: {needed_by} needs this doc. Replace this text.)\n"}, strict=False))
    return RedirectResponse(pack_url(pack, "lint", done=f"created stub {target}"), status_code=303)


async def new_doc(request: Request) -> Response:
    form = await checked_form(request)
    pack = request.path_params["pack"]
    selector = str(form.get("selector", "")).strip()
    run(request, ops.CREATE, ops.CREATE.parse({"pack": pack, "selector": selector,
                                               "title": str(form.get("title") or "").strip() or selector},
                                              strict=False))
    return RedirectResponse(doc_url(pack, selector, "edit"), status_code=303)


async def flash_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack = request.path_params["pack"]
    q = request.query_params
    targets = [t.strip() for raw in q.getlist("targets") for t in raw.replace(",", " ").split() if t.strip()]
    budget = int_param(q, "budget", None, 0, 10**9)
    degrade = q.get("degrade") or None
    listing = catalog.list_docs(ws, pack, limit=catalog.MAX_PAGE, principal=who)
    context = {"pack": pack, "targets": targets, "budget": budget, "degrade": degrade, "listing": listing,
               "bundle": None, "why": {}, "over": None, "failure": None}
    if targets:
        try:
            bundle = run(request, ops.FLASH, form_input(ops.FLASH, {}, pack=pack, selectors=targets,
                                                        budget_tokens=budget, degrade=degrade))
            context["bundle"] = bundle
            context["why"] = catalog.why_paths(ws, pack, targets, who)
        except BudgetExceededError as exc:
            context["over"] = exc
        except (CycleError, MissingModuleError, ValidationError) as exc:
            context["failure"] = exc
    return page(request, "flash.html", **context)


async def reindex(request: Request) -> Response:
    """Compute the embeddings deferred installs left out (one pack, or every pack), then say how many on a result
    page of its own."""
    form = await checked_form(request)
    done = run(request, ops.REINDEX, form_input(ops.REINDEX, form))
    where = done["pack"] or "every pack"
    lines = [f"{where}: embedded {done['embedded']} texts" + ("." if done["embedded"] else " (nothing was missing).")]
    if "glossed" in done:  # (a form asking for places: the owner's, checked by the operation)
        lines.append(f"Memories given their place glosses: {done['glossed']}.")
    return page(request, "result.html", title="Reindexed", issued=None, back="/packs", back_label="Back to the packs",
                lines=lines)


ROUTES = [
    Route("/packs", pack_list),
    Route("/reindex", reindex, methods=["POST"]),
    Route("/packs/{pack}", pack_page),
    Route("/packs/{pack}/graph", graph_page),
    Route("/packs/{pack}/lint", lint_page),
    Route("/packs/{pack}/lint/drop-edge", fix_drop_edge, methods=["POST"]),
    Route("/packs/{pack}/lint/stub", fix_stub, methods=["POST"]),
    Route("/packs/{pack}/new", new_doc, methods=["POST"]),
    Route("/packs/{pack}/flash", flash_page),
]
