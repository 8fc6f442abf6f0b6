"""Memory pages: browse by conversation and user, search with each result's signals, remember, edit a memory (a
new version; its history kept and shown), forget, and erase an entity with its receipt. The store is the one the
CLI and MCP use (``memory:default``). Recall, remember, edit, versions and forget run the declared operations
(``agentcontext.operations.memory``) with their forms parsed by the operations' own input models.

Every destructive form (erase; forget a memory, a conversation or a user) takes two POSTs: the first shows what
will happen and changes nothing, the second (``confirmed=yes``, from that page) does it. An erasure then
redirects to its receipt, read back from the audit log on a page of its own (POST-redirect-GET: a reload shows
the receipt again and erases nothing)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ... import access
from ...erasure import erase_workspace_entity
from ...errors import NotFoundError, ValidationError
from ...memory import browse
from ...memory.service import workspace_memory
from ...operations import memory as ops
from ..operations import NAMESPACE, form_input, run, serves
from ..requests import checked_form, console, principal
from ..render import page, with_query
from . import int_param, text_param

PAGE_SIZE = 50
WHO = {"conversation_id": "conversation", "user_id": "user"}  # the forms' field names
serves(ops.RETRIEVE, "/memory")
serves(ops.STORE, "/memory/remember")
serves(ops.FORGET, "/memory/forget")
serves(ops.GET, "/memory/edit/{memory_id}")
serves(ops.VERSIONS, "/memory/edit/{memory_id}")
serves(ops.EDIT, "/memory/edit/{memory_id}")


async def memory_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    mem = workspace_memory(ws, NAMESPACE, who)
    conversation, user, query = text_param(q, "conversation"), text_param(q, "user"), text_param(q, "q")
    offset = int_param(q, "offset", 0, 0, 10**9) or 0
    results = None
    if query:
        results = run(request, ops.RETRIEVE, form_input(ops.RETRIEVE, q, {"query": "q", **WHO}, max_results=20))
        results = results["results"]
    listing = None if query else browse.page(mem, conversation, user, offset, PAGE_SIZE)
    return page(request, "memory.html", facets=browse.facets(mem), conversation=conversation, user=user,
                query=query, results=results, listing=listing, done=q.get("done"))


async def remember(request: Request) -> Response:
    form = await checked_form(request)
    if not text_param(form, "content"):
        raise ValidationError("write the text to remember")
    entities = [e for e in str(form.get("entities", "")).replace(",", " ").split() if e]
    args = form_input(ops.STORE, form, WHO, metadata={"entities": entities} if entities else None)
    mid = run(request, ops.STORE, args)["id"]
    return RedirectResponse(with_query("/memory", done=f"remembered {mid}"), status_code=303)


def _confirmed(form) -> bool:
    return form.get("confirmed") == "yes"


def _confirm(request: Request, action: str, what: str, fields: dict[str, str | None], button: str) -> Response:
    """The confirmation step: what the action will do, and a form that repeats it with ``confirmed=yes``."""
    return page(request, "confirm.html", action=action, what=what, button=button,
                fields={k: v for k, v in fields.items() if v})


async def forget(request: Request) -> Response:
    form = await checked_form(request)
    given = {k: text_param(form, k) for k in ("memory_id", "conversation", "user")}
    if not any(given.values()):
        raise ValidationError("forget needs a memory, a conversation or a user")
    if not _confirmed(form):
        parts = [f"memory {given['memory_id']}" if given["memory_id"] else "",
                 f"every memory of conversation {given['conversation']}" if given["conversation"] else "",
                 f"every memory of user {given['user']}" if given["user"] else ""]
        return _confirm(request, "/memory/forget", "Forget " + " and ".join(p for p in parts if p) +
                        "? Forgotten memories are deleted with their vectors; this cannot be undone.", given,
                        "Forget")
    count = run(request, ops.FORGET, form_input(ops.FORGET, form, WHO))["forgotten"]
    return RedirectResponse(with_query("/memory", done=f"forgot {count} memories"), status_code=303)


async def erase(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    entity = text_param(form, "entity")
    if not entity:
        raise ValidationError("name the entity to erase (the id its memories list under entities)")
    mentions = form.get("mentions") in ("on", "yes", "true", "1")
    if not _confirmed(form):
        what = (f"Erase {entity} everywhere: the memories, decisions and graph node about it, every version of "
                "them (retracted ones too), their vectors, and what checkpoints and the audit log hold about them; "
                "a tombstone keeps the id from coming back. ")
        what += ("Also erase every record that mentions it (memories, lib: docs, graph nodes; pkg: docs are "
                 "listed, never changed). " if mentions else "Records that only mention it are listed and kept. ")
        return _confirm(request, "/memory/erase", what + "This cannot be undone.",
                        {"entity": entity, "reason": text_param(form, "reason"),
                         "mentions": "on" if mentions else None}, "Erase everywhere")
    receipt = erase_workspace_entity(ws, entity, reason=text_param(form, "reason"), principal=who,
                                     namespace=NAMESPACE, erase_mentions=mentions)
    return RedirectResponse(with_query("/memory/receipt", entity=entity, at=receipt.erased_at), status_code=303)


async def receipt_page(request: Request) -> Response:
    """One erasure receipt, as the audit log holds it (what the erase form redirects to)."""
    ws, who = console(request).ws, principal(request)
    entity, at = text_param(request.query_params, "entity"), text_param(request.query_params, "at")
    rows = access.audit_log(ws, who, action="erase_entity")
    found = [r for r in rows if r["outcome"] in ("complete", "incomplete") and r["target"] == entity
             and (at is None or (r["detail"] or {}).get("erased_at") == at)]
    if not found:
        raise NotFoundError(f"no erasure receipt for {entity!r}; erase it from the memory page first",
                            entity_id=entity)
    row = found[-1]
    return page(request, "receipt.html", receipt=row["detail"], by=row["principal"], recorded_at=row["at"],
                audit=[{"store": ws.store.url, "status": "recorded"}])


async def edit_page(request: Request) -> Response:
    """One memory: its text and metadata, the form that writes a new version, and every version so far."""
    mid = {"memory_id": request.path_params["memory_id"]}
    memory = run(request, ops.GET, form_input(ops.GET, mid))
    versions = run(request, ops.VERSIONS, form_input(ops.VERSIONS, mid))["versions"]
    return page(request, "memory_edit.html", memory=memory, versions=versions)


async def edit_submit(request: Request) -> Response:
    """Write the edited text as a new version (the id stays, the old text stays in the history); then the result
    page says which version it became."""
    form = await checked_form(request)
    mid = request.path_params["memory_id"]
    edited = run(request, ops.EDIT, form_input(ops.EDIT, form, memory_id=mid))  # expected_version: the one read
    return page(request, "result.html", title="Memory edited", issued=None, back=f"/memory/edit/{mid}",
                back_label="Back to the memory and its history", lines=[
                    f"{mid} is now version {edited['version']}; version {edited['previous_version']} stays in "
                    "its history."])


ROUTES = [
    Route("/memory", memory_page),
    Route("/memory/remember", remember, methods=["POST"]),
    Route("/memory/forget", forget, methods=["POST"]),
    Route("/memory/erase", erase, methods=["POST"]),
    Route("/memory/receipt", receipt_page),
    Route("/memory/edit/{memory_id}", edit_page, methods=["GET"]),
    Route("/memory/edit/{memory_id}", edit_submit, methods=["POST"]),
]
