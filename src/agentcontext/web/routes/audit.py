"""The audit page: every write and every denied attempt, filtered by principal, action, outcome and time.
A superadmin sees everyone's entries; anyone else only their own (``access.audit_log``)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import access
from ..requests import console, principal
from ..render import page
from . import int_param, text_param


async def audit_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    filters = {k: text_param(q, k) for k in ("principal", "action", "outcome", "since", "until")}
    limit = int_param(q, "limit", 200, 1, 10_000)
    rows = access.audit_log(ws, who, filters["principal"], filters["since"], limit,
                            action=filters["action"], outcome=filters["outcome"],
                            until=filters["until"])
    return page(request, "audit.html", rows=rows[::-1], filters=filters, limit=limit,
                everyone=access.is_superadmin(ws, who))


ROUTES = [Route("/audit", audit_page)]
