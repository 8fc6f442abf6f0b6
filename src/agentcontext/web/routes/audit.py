"""The audit page: every write and every denied attempt, filtered by principal, action, outcome and time.
A superadmin sees everyone's entries; anyone else only their own (``access.audit_log``). The filters are parsed by
the declared operation's input model and run through it (``operations.access.AUDIT``, the CLI's ``audit``)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import access
from ...operations import access as ops
from ..operations import form_input, run, serves
from ..requests import console, principal
from ..render import page
from . import int_param, text_param

serves(ops.AUDIT, "/audit")


async def audit_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    filters = {k: text_param(q, k) for k in ("principal", "action", "outcome", "since", "until")}
    limit = int_param(q, "limit", 200, 1, 10_000)
    rows = run(request, ops.AUDIT, form_input(ops.AUDIT, q, {"who": "principal"}, limit=limit))["entries"]
    return page(request, "audit.html", rows=rows[::-1], filters=filters, limit=limit,
                everyone=access.is_superadmin(ws, who))


ROUTES = [Route("/audit", audit_page)]
