"""What every page handler needs from a request: the console (workspace and sessions), the session and its
principal, the audit log for console events, and the POSTed form once its CSRF token is checked."""
from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request

from ..workspace import Workspace
from .sessions import Session, Sessions, csrf_ok


class CsrfError(Exception):
    pass


class Console:
    """What every route needs: the workspace and the sessions."""

    def __init__(self, ws: Workspace, sessions: Sessions) -> None:
        self.ws = ws
        self.sessions = sessions


def console(request: Request) -> Console:
    return request.app.state.console


def session_of(request: Request) -> Session:
    return request.scope["session"]


def principal(request: Request) -> str:
    return session_of(request).principal


def audit(request: Request, action: str, target: str, outcome: str, detail: dict[str, Any] | None = None,
          who: str | None = None) -> None:
    """Console events the services do not see (log in, log out, a refused form) go to the same audit log."""
    console(request).ws.store.append_audit(who or principal(request), action, target, outcome, detail or {})


async def checked_form(request: Request) -> FormData:
    """The POSTed form, once its CSRF token matches the session's (a mismatch is audited and refused)."""
    form = await request.form()
    if not csrf_ok(session_of(request), form.get("csrf")):
        audit(request, "web.csrf", request.url.path, "denied", {"method": request.method})
        raise CsrfError()
    return form
