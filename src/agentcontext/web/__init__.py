"""The web console: browse, edit, lint, flash, remember, decide and audit in the browser.

``agentcontext serve web [--port N] [--host H] [--open]``; ``create_app(ws)`` builds the Starlette app.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Callable

from .. import access
from ..errors import ValidationError
from ..workspace import Workspace
from .app import create_app

DEFAULT_PORT = 8766
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(ws: Workspace, host: str, principal: str | None = None) -> None:
    """A non-loopback address only once tokens exist (then everyone logs in with one); loopback always."""
    if is_loopback(host):
        return
    if not access.tokens(ws, principal):
        raise ValidationError(f"refusing to serve on {host}: no tokens exist yet, so nobody else could log in "
                              "and the console would only be exposed. Issue one with `agentcontext token create "
                              "PRINCIPAL`, or serve on 127.0.0.1 (the default).", host=host)


def allowed_hosts(host: str, port: int) -> list[str]:
    names = set(LOOPBACK_NAMES) if is_loopback(host) else {host}
    if not is_loopback(host):
        names |= {socket.getfqdn(host)} if host not in ("0.0.0.0", "::") else set()
    return sorted({f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names})


def serve(ws: Workspace, host: str = "127.0.0.1", port: int = DEFAULT_PORT, principal: str | None = None,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the console until interrupted; ``on_ready(login_url)`` is called once it listens."""
    import anyio
    import uvicorn

    check_host(ws, host, principal)
    if host in ("0.0.0.0", "::"):
        raise ValidationError("name the address to serve on (e.g. the machine's LAN address), not a wildcard: "
                              "the console answers only requests addressed to the host it serves", host=host)
    app = create_app(ws, launch_principal=principal, allowed_hosts=allowed_hosts(host, port))
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/login?launch={app.state.console.sessions.launch_token}"
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.05)
            if on_ready is not None:
                on_ready(url)

    anyio.run(run)


__all__ = ["create_app", "serve", "check_host", "DEFAULT_PORT"]
