"""Memory pages: browse by conversation and user, search with each result's signals, remember, forget, and
erase an entity with its receipt. The store is the one the CLI and MCP use (``memory:default``)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...erasure import erase_workspace_entity
from ...errors import ValidationError
from ...memory import browse
from ...memory.service import workspace_memory
from ..requests import checked_form, console, principal
from ..render import page, with_query
from . import int_param, text_param

NAMESPACE = "default"
PAGE_SIZE = 50


async def memory_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    mem = workspace_memory(ws, NAMESPACE, who)
    conversation, user, query = text_param(q, "conversation"), text_param(q, "user"), text_param(q, "q")
    offset = int_param(q, "offset", 0, 0, 10**9) or 0
    results = mem.retrieve(query, max_results=20, conversation_id=conversation, user_id=user) if query else None
    listing = None if query else browse.page(mem, conversation, user, offset, PAGE_SIZE)
    return page(request, "memory.html", facets=browse.facets(mem), conversation=conversation, user=user,
                query=query, results=results, listing=listing, done=q.get("done"))


async def remember(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    content = text_param(form, "content")
    if not content:
        raise ValidationError("write the text to remember")
    entities = [e for e in str(form.get("entities", "")).replace(",", " ").split() if e]
    mid = workspace_memory(ws, NAMESPACE, who).store(content, metadata={"entities": entities} if entities else None,
                                                     conversation_id=text_param(form, "conversation"),
                                                     user_id=text_param(form, "user"))
    return RedirectResponse(with_query("/memory", done=f"remembered {mid}"), status_code=303)


async def forget(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    given = {k: text_param(form, k) for k in ("memory_id", "conversation", "user")}
    if not any(given.values()):
        raise ValidationError("forget needs a memory, a conversation or a user")
    count = workspace_memory(ws, NAMESPACE, who).forget(given["memory_id"], given["conversation"], None,
                                                        given["user"])
    return RedirectResponse(with_query("/memory", done=f"forgot {count} memories"), status_code=303)


async def erase(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    entity = text_param(form, "entity")
    if not entity:
        raise ValidationError("name the entity to erase (the id its memories list under entities)")
    receipt = erase_workspace_entity(ws, entity, reason=text_param(form, "reason"), principal=who,
                                     namespace=NAMESPACE)
    return page(request, "receipt.html", receipt=receipt.to_dict(), audit=receipt.audit)


ROUTES = [
    Route("/memory", memory_page),
    Route("/memory/remember", remember, methods=["POST"]),
    Route("/memory/forget", forget, methods=["POST"]),
    Route("/memory/erase", erase, methods=["POST"]),
]
