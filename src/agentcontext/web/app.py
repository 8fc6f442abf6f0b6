"""The web console's Starlette app: sessions, CSRF, security headers, error pages, and the routes.

Security model (see the README): the console listens on 127.0.0.1 unless told otherwise and answers only
requests whose Host is the address it serves (no DNS rebinding); every page but the login page needs a
session opened with a token; a state-changing request is a POST carrying the session's CSRF token, and
one whose Origin is another site is refused. Pages call the same service functions as the CLI and MCP
with the session's principal, so the access rule, the errors and the audit log are theirs: a pack one
may not read answers 404 like one that does not exist.
"""
from __future__ import annotations

from typing import Any, Iterable
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (AccessDeniedError, AgentContextError, ConflictError, NotFoundError, ReadOnlyError,
                      ValidationError)
from ..workspace import Workspace
from .offloop import routes_off_loop
from .render import HERE, page
from .requests import Console, CsrfError, audit, checked_form, console, session_of
from .sessions import COOKIE, Sessions

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
       "img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY"),
           (b"cross-origin-opener-policy", b"same-origin")]
PUBLIC = ("/login", "/static/")


class Guard:
    """Pure ASGI middleware: Host and Origin checks, the session, the login redirect, security headers."""

    def __init__(self, app: ASGIApp, sessions: Sessions, allowed_hosts: Iterable[str] | None) -> None:
        self.app = app
        self.sessions = sessions
        self.allowed_hosts = {h.lower() for h in allowed_hosts} if allowed_hosts is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            await _plain(send, 421, "This console answers only at the address it serves.")
            return
        origin = headers.get("origin")
        if scope["method"] not in ("GET", "HEAD") and origin and urlsplit(origin).netloc.lower() != host:
            await _plain(send, 403, "Cross-site request refused.")
            return
        cookies = Request(scope).cookies
        session = self.sessions.get(cookies.get(COOKIE))
        scope["session"] = session
        path = scope["path"]
        if session is None and not path.startswith(PUBLIC):
            if scope["method"] in ("GET", "HEAD"):
                target = path + ("?" + scope["query_string"].decode() if scope["query_string"] else "")
                response: Response = RedirectResponse("/login?" + _next_query(target), status_code=303)
            else:
                response = Response("Log in first.", status_code=401, media_type="text/plain")
            await response(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(HEADERS)
                if not path.startswith("/static/"):
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _next_query(target: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"next": target})


async def _plain(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")] + HEADERS})
    await send({"type": "http.response.body", "body": text.encode()})


# --- error pages -----------------------------------------------------------------------------------


def _error(request: Request, status: int, title: str, message: str) -> Response:
    return page(request, "error.html", status=status, title=title, message=message)


async def on_not_found(request: Request, exc: Exception) -> Response:
    close = exc.data.get("did_you_mean") if isinstance(exc, NotFoundError) else None  # only what the user may read
    return _error(request, 404, "Not found", "There is nothing here, or nothing you may see."
                  + (f" Did you mean {', '.join(close)}?" if close else ""))


async def on_denied(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AccessDeniedError)
    if exc.data.get("needed") == "read":  # an unreadable pack or doc looks like a missing one
        return await on_not_found(request, exc)
    return _error(request, 403, "Not allowed", exc.message)


async def on_read_only(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentContextError)
    return _error(request, 403, "Read-only", exc.message)


async def on_invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentContextError)
    return _error(request, 400, "Cannot do that", exc.message)


async def on_conflict(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentContextError)
    return _error(request, 409, "Conflict", exc.message)


async def on_other(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentContextError)
    return _error(request, 422, exc.type, exc.message)


async def on_csrf(request: Request, exc: Exception) -> Response:
    return _error(request, 403, "Form refused", "This form was not sent from a page of this console session "
                  "(a missing or stale CSRF token). Reload the page and try again.")


async def on_http_404(request: Request, exc: Exception) -> Response:
    http = exc if isinstance(exc, HTTPException) else None
    status = http.status_code if http is not None else 404
    if status == 404:
        return await on_not_found(request, exc)
    if status == 405:
        return _error(request, 405, "Method not allowed", "This address does not take that kind of request.")
    return _error(request, status, "Error", str(http.detail if http is not None else ""))


# --- log in and out --------------------------------------------------------------------------------


def _safe_next(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return text if text.startswith("/") and not text.startswith("//") and "\\" not in text else "/packs"


async def login_page(request: Request) -> Response:
    sessions = console(request).sessions
    launch = request.query_params.get("launch")
    if launch:  # the link `serve web` prints (and --open opens): log in, then drop the token from the URL
        return _open_session(request, sessions, launch, "/packs")
    return page(request, "login.html", next=_safe_next(request.query_params.get("next")), failed=False)


async def login_submit(request: Request) -> Response:
    form = await request.form()
    return _open_session(request, console(request).sessions, str(form.get("token") or ""),
                         _safe_next(form.get("next")))


def _open_session(request: Request, sessions: Sessions, token: str, next_url: str) -> Response:
    old = request.scope.get("session")
    session = sessions.open(token)
    if session is None:
        audit(request, "web.login", "console", "denied", {"reason": "unknown or revoked token"}, who="anonymous")
        return page(request, "login.html", status=401, next=next_url, failed=True)
    if old is not None:
        sessions.close(old.sid)
    audit(request, "web.login", "console", "ok", who=session.principal)
    response = RedirectResponse(next_url, status_code=303)
    response.set_cookie(COOKIE, session.sid, httponly=True, samesite="strict", path="/")
    return response


async def logout(request: Request) -> Response:
    await checked_form(request)
    audit(request, "web.logout", "console", "ok")
    console(request).sessions.close(session_of(request).sid)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def routes() -> list[BaseRoute]:
    from .routes import audit as audit_pages
    from .routes import ask, decisions, docs, explore, home, install, memory, packs, rights

    return routes_off_loop([
        *home.ROUTES,
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login_submit, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        *install.ROUTES, *packs.ROUTES, *docs.ROUTES, *memory.ROUTES, *decisions.ROUTES, *audit_pages.ROUTES,
        *explore.ROUTES, *ask.ROUTES, *rights.ROUTES,
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ])


def create_app(ws: Workspace, launch_principal: str | None = None,
               allowed_hosts: Iterable[str] | None = None) -> Starlette:
    """The console over ``ws``. ``allowed_hosts`` (``host:port`` strings) are the Host values answered;
    None answers any (tests that call the app in-process). ``app.state.console.sessions.launch_token``
    logs in as ``launch_principal`` (None = the owner)."""
    from starlette.middleware import Middleware

    sessions = Sessions(ws, launch_principal)
    app = Starlette(
        routes=routes(),
        middleware=[Middleware(Guard, sessions=sessions, allowed_hosts=allowed_hosts)],
        exception_handlers={
            HTTPException: on_http_404, NotFoundError: on_not_found, AccessDeniedError: on_denied,
            ReadOnlyError: on_read_only, ValidationError: on_invalid, ConflictError: on_conflict,
            AgentContextError: on_other, CsrfError: on_csrf,
        },
    )
    app.state.console = Console(ws, sessions)
    return app
