"""Doc pages: the rendered doc with its edges and history, a diff between two versions, and the edit form
(optimistic concurrency: a stale edit comes back as a conflict showing both texts, nothing is lost)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ... import access
from ...errors import ConflictError, ReadOnlyError, ValidationError
from ...knowledge import catalog, history, tools
from ...operations import knowledge as ops
from ..operations import form_input, run, serves
from ..requests import checked_form, console, principal
from ..render import doc_url, page
from . import int_param


serves(ops.READ, "/packs/{pack}/docs/{selector}")
serves(ops.UPDATE, "/packs/{pack}/docs/{selector}/edit")


def _edit_block(ws: Any, pack: str, selector: str, who: str) -> str | None:
    """Why this principal cannot edit this doc here, or None if it can."""
    try:
        access.require_writable(pack)
    except ReadOnlyError as exc:
        return exc.message
    if not access.can_doc(ws, who, pack, selector, "write"):
        return f"{who} may read this doc but not change it: editing needs write on {pack}."
    return None


async def doc_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack, selector = request.path_params["pack"], request.path_params["selector"]
    version = int_param(request.query_params, "version", None, 1, 10**9)
    doc = run(request, ops.READ, form_input(ops.READ, {}, pack=pack, selector=selector, version=version))
    links = catalog.doc_links(ws, pack, selector, who)
    versions = history.history(ws, pack, selector, who)
    return page(request, "doc.html", pack=pack, doc=doc, links=links, versions=versions, version=version,
                blocked=_edit_block(ws, pack, selector, who), saved=request.query_params.get("saved"))


async def diff_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack, selector = request.path_params["pack"], request.path_params["selector"]
    q = request.query_params
    v1 = int_param(q, "v1", 1, 1, 10**9)
    v2 = int_param(q, "v2", None, 1, 10**9)
    versions = history.history(ws, pack, selector, who)
    result = history.diff(ws, pack, selector, v1 or 1, v2 or versions[-1]["version"], who)
    return page(request, "diff.html", pack=pack, selector=selector, result=result, versions=versions)


def _form_values(doc: dict[str, Any]) -> dict[str, Any]:
    return {"title": doc["title"], "summary": doc["summary"], "kind": doc["kind"], "tags": ", ".join(doc["tags"]),
            "related": "\n".join(f"{r['type']} {r['target']}" for r in doc["related"]), "content": doc["content"],
            "expected_version": doc["version"]}


async def edit_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack, selector = request.path_params["pack"], request.path_params["selector"]
    doc = tools.read_knowledge_doc(ws, pack, selector, principal=who)
    blocked = _edit_block(ws, pack, selector, who)
    status = 403 if blocked else 200
    return page(request, "edit.html", status=status, pack=pack, selector=selector, values=_form_values(doc),
                blocked=blocked, conflict=None, error=None)


def parse_related(text: str) -> list[dict[str, str]]:
    """One edge a line: ``TYPE TARGET [description]`` (``depends_on identity``)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split(None, 2)
        if not parts:
            continue
        if len(parts) < 2:
            raise ValidationError(f"related line {n}: write the edge type then the target selector, "
                                  f"e.g. 'depends_on identity' (got {line.strip()!r})")
        edge = {"type": parts[0], "target": parts[1]}
        if len(parts) == 3:
            edge["description"] = parts[2]
        out.append(edge)
    return out


async def edit_submit(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    pack, selector = request.path_params["pack"], request.path_params["selector"]
    values = {k: str(form.get(k, "")) for k in ("title", "summary", "kind", "tags", "related", "content",
                                                 "expected_version")}
    values["content"] = values["content"].replace("\r\n", "\n")
    try:  # the declared update_knowledge_doc, every field given (a cleared summary is cleared; a blank title or
        # kind keeps the doc's, as neither may be empty)
        args = ops.UPDATE.parse({
            "pack": pack, "selector": selector, "title": values["title"].strip() or None,
            "summary": values["summary"], "kind": values["kind"].strip() or None,
            "tags": [t for t in values["tags"].replace(",", " ").split() if t], "content": values["content"],
            "related": parse_related(values["related"]),
            "expected_version": int_param(values, "expected_version", None, 0, 10**9)}, strict=False)
        result = run(request, ops.UPDATE, args)
    except ConflictError as exc:  # someone saved first: show both, keep the user's text in the form
        current = tools.read_knowledge_doc(ws, pack, selector, principal=who)
        values["expected_version"] = current["version"]
        return page(request, "edit.html", status=409, pack=pack, selector=selector, values=values, blocked=None,
                    conflict={"message": exc.message, "current": current, "theirs": _form_values(current)},
                    error=None)
    except ValidationError as exc:
        return page(request, "edit.html", status=400, pack=pack, selector=selector, values=values, blocked=None,
                    conflict=None, error=exc.message)
    return RedirectResponse(doc_url(pack, selector, saved=str(result["version"])), status_code=303)


ROUTES = [
    Route("/packs/{pack}/docs/{selector}", doc_page),
    Route("/packs/{pack}/docs/{selector}/diff", diff_page),
    Route("/packs/{pack}/docs/{selector}/edit", edit_page, methods=["GET"]),
    Route("/packs/{pack}/docs/{selector}/edit", edit_submit, methods=["POST"]),
]
