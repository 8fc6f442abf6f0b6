"""The 401 of the MCP HTTP server, as a bearer-token server answers (RFC 6750), with no OAuth offered.

The SDK's bearer middleware answers every failure with ``error="invalid_token"``, which MCP clients take as an
expired OAuth token and start an OAuth flow for ("Interactive OAuth requires a TTY"). This server has no OAuth: it
takes tokens made by ``agentcontext token create``. So a request without bearer credentials gets
``WWW-Authenticate: Bearer realm="agentcontext"`` (no error code, RFC 6750 section 3.1), a wrong, revoked or
malformed token ``Bearer realm="agentcontext", error="invalid_token", ...``; neither names ``resource_metadata``,
no /.well-known/oauth-* document is served (404), and the JSON body says how to get a token.
"""
from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

REALM = "agentcontext"
HOW = ("send Authorization: Bearer <token> with every request; make a token with `agentcontext token create "
       "PRINCIPAL` (this server does not use OAuth)")


def _has_bearer(scope: Scope) -> bool:
    return any(k == b"authorization" and v[:7].lower() == b"bearer " and v[7:].strip()
               for k, v in scope.get("headers", []))


def challenge(has_token: bool) -> tuple[str, dict[str, str]]:
    """The WWW-Authenticate value and the JSON body of a 401 for a request with or without a bearer token."""
    if not has_token:
        return f'Bearer realm="{REALM}"', {"error": "unauthorized", "error_description": f"no bearer token; {HOW}"}
    text = "the bearer token is not valid (wrong, revoked or malformed)"
    return (f'Bearer realm="{REALM}", error="invalid_token", error_description="{text}"',
            {"error": "invalid_token", "error_description": f"{text}; {HOW}"})


class BearerChallenge:
    """ASGI wrapper: every 401 the app sends is replaced by ``challenge``'s answer (other responses untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:  # the Starlette app's own attributes (state, router, ...)
        return getattr(self.app, name)  # kept: the delegation itself

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replaced = False

        async def answer(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 401:
                replaced = True
                value, body = challenge(_has_bearer(scope))
                data = json.dumps(body).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                    (b"www-authenticate", value.encode())]})
                await send({"type": "http.response.body", "body": data})
            elif not replaced:  # the app's own 401 body is dropped
                await send(message)

        await self.app(scope, receive, answer)
