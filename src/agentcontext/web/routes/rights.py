"""Tokens and grants from the browser: who holds what, create a token (shown once, on its own page), revoke one,
grant and revoke rights. A revocation is asked for on a confirmation page and its result shown on a page of its
own. The rules are ``access``'s: only the owner or an admin of ``*`` sees and issues tokens; a grant or a revoke
needs admin on a pattern covering it; everything is in the audit log.

Every form is parsed by its declared operation's input model and run through it (``agentcontext.operations.access``,
as the CLI's ``grant``, ``revoke``, ``grants`` and ``token ...`` commands are): the forms' ``principal`` field is the
operations' ``who``."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ... import access
from ...errors import ValidationError
from ...operations import NoArgs
from ...operations import access as ops
from ..operations import form_input, run, serves
from ..render import page, with_query
from ..requests import checked_form, console, principal
from . import text_param

WHO = {"who": "principal"}  # the forms' field name for the principal a grant or a token is for
serves(ops.GRANTS, "/rights")
serves(ops.LIST_TOKENS, "/rights")
serves(ops.CREATE_TOKEN, "/rights/tokens")
serves(ops.REVOKE_TOKEN, "/rights/tokens/{token_id}/revoke")
serves(ops.GRANT, "/rights/grants")
serves(ops.REVOKE, "/rights/grants/revoke")


def _need(form, *names: str) -> None:
    """A form left blank is told which field to fill (the operation would name its own field, ``who``)."""
    blank = [n for n in names if not text_param(form, n)]
    if blank:
        raise ValidationError(f"fill in {', '.join(blank)}", fields=blank)


async def rights_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    admin = access.is_superadmin(ws, who)
    grants = run(request, ops.GRANTS, NoArgs())["grants"]
    tokens = run(request, ops.LIST_TOKENS, NoArgs())["tokens"] if admin else None
    return page(request, "rights.html", grants=grants, tokens=tokens, levels=ops.LEVELS,
                done=request.query_params.get("done"))


async def create_token(request: Request) -> Response:
    form = await checked_form(request)
    if not text_param(form, "principal"):
        raise ValidationError("name the principal the token is for")
    issued = run(request, ops.CREATE_TOKEN, form_input(ops.CREATE_TOKEN, form, WHO))
    return page(request, "result.html", title="Token created", issued=issued, lines=[
        f"A token for {issued['principal']} (id {issued['id']}). Copy it now: it is shown this once and only its "
        "hash is kept."])


async def revoke_token_confirm(request: Request) -> Response:
    tid = request.path_params["token_id"]
    held = [t for t in run(request, ops.LIST_TOKENS, NoArgs())["tokens"] if t["id"] == tid]
    if not held:
        raise ValidationError(f"no token with id {tid!r}; the tokens page lists them")
    return page(request, "confirm.html", action=request.url.path, fields={}, cancel="/rights",
                what=f"Revoke token {tid} of {held[0]['principal']}? Its sessions end at once and it cannot be "
                         "used again.", button="Revoke the token")


async def revoke_token(request: Request) -> Response:
    form = await checked_form(request)
    if form.get("confirmed") != "yes":  # not from the confirmation page: ask first
        return await revoke_token_confirm(request)
    tid = request.path_params["token_id"]
    gone = run(request, ops.REVOKE_TOKEN, form_input(ops.REVOKE_TOKEN, {}, token_id=tid))["revoked"]
    return page(request, "result.html", title="Token revoked" if gone else "Nothing revoked", issued=None,
                lines=[f"Token {tid} " + ("is revoked." if gone else "was not found (already revoked?).")])


async def add_grant(request: Request) -> Response:
    form = await checked_form(request)
    _need(form, "principal", "pattern", "level")
    record = run(request, ops.GRANT, form_input(ops.GRANT, form, WHO))
    name, pattern, level = record["principal"], record["pattern"], record["level"]
    return RedirectResponse(with_query("/rights", done=f"granted {level} on {pattern} to {name}"), status_code=303)


async def revoke_grant_confirm(request: Request) -> Response:
    q = request.query_params
    name, pattern = text_param(q, "principal") or "", text_param(q, "pattern") or ""
    return page(request, "confirm.html", action="/rights/grants/revoke", cancel="/rights",
                fields={"principal": name, "pattern": pattern}, button="Revoke the grant",
                what=f"Revoke {name}'s grant on {pattern}? What it gave is no longer readable or writable by "
                         f"{name} from the next request on.")


async def revoke_grant(request: Request) -> Response:
    form = await checked_form(request)
    _need(form, "principal", "pattern")
    args = form_input(ops.REVOKE, form, WHO)
    name, pattern = args.who, args.pattern
    if form.get("confirmed") != "yes":  # not from the confirmation page: ask first
        return page(request, "confirm.html", action="/rights/grants/revoke", cancel="/rights",
                    fields={"principal": name, "pattern": pattern}, button="Revoke the grant",
                    what=f"Revoke {name}'s grant on {pattern}?")
    gone = run(request, ops.REVOKE, args)["revoked"]
    return page(request, "result.html", title="Grant revoked" if gone else "Nothing revoked", issued=None,
                lines=[f"{name} on {pattern}: " + ("revoked." if gone else "there was no such grant.")])


ROUTES = [
    Route("/rights", rights_page),
    Route("/rights/tokens", create_token, methods=["POST"]),
    Route("/rights/tokens/{token_id}/revoke", revoke_token_confirm, methods=["GET"]),
    Route("/rights/tokens/{token_id}/revoke", revoke_token, methods=["POST"]),
    Route("/rights/grants", add_grant, methods=["POST"]),
    Route("/rights/grants/revoke", revoke_grant_confirm, methods=["GET"]),
    Route("/rights/grants/revoke", revoke_grant, methods=["POST"]),
]
