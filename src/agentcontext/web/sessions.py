"""Console sessions: log in with a bearer token, keep a server-side session, check CSRF tokens.

The cookie holds only a random session id (HttpOnly, SameSite=Strict). The session remembers the token it
was opened with and checks it again on every request, so revoking a token (``agentcontext token revoke``)
ends its sessions at once. A launch token, made when the server starts and printed with its URL, stands
for the principal that started the server (the owner unless ``--as``); it lives only in this process.
"""
from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from .. import access
from ..workspace import Workspace

COOKIE = "actx_session"
IDLE_SECONDS = 12 * 3600


@dataclass
class Session:
    sid: str
    principal: str
    token: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    def __init__(self, ws: Workspace, launch_principal: str | None = None, idle_seconds: float = IDLE_SECONDS):
        self.ws = ws
        self.idle_seconds = idle_seconds
        self.launch_token = secrets.token_urlsafe(32)
        self.launch_principal = access.effective_principal(ws, launch_principal)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def principal_for(self, token: str) -> str | None:
        """Whom a token stands for now: the launch token, or a token issued by `agentcontext token create`."""
        if not isinstance(token, str) or not token or len(token) > 200:
            return None
        if hmac.compare_digest(token.encode(), self.launch_token.encode()):
            return self.launch_principal
        return access.principal_for_token(self.ws, token)

    def open(self, token: str) -> Session | None:
        who = self.principal_for(token.strip() if isinstance(token, str) else "")
        if who is None:
            return None
        session = Session(secrets.token_urlsafe(32), who, token.strip())
        with self._lock:
            self._sessions[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
        if session is None:
            return None
        now = time.monotonic()
        if now - session.seen > self.idle_seconds or self.principal_for(session.token) != session.principal:
            self.close(sid)  # idle too long, or its token was revoked
            return None
        session.seen = now
        return session

    def close(self, sid: str | None) -> None:
        with self._lock:
            self._sessions.pop(sid or "", None)


def csrf_ok(session: Session, sent: object) -> bool:
    return isinstance(sent, str) and hmac.compare_digest(sent.encode(), session.csrf.encode())
