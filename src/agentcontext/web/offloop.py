"""Every console page runs off the server's event loop, so one slow flash or search does not stop the others.

The handlers are ``async def`` (they await the form) but call blocking services: run on the event loop, one slow
call held every other request, static files included. :func:`off_loop` reads the request body on the loop (the
only part that needs the server's ``receive``), then runs the handler in a worker thread on an event loop of its
own; ``request.form()`` there parses the body already read. The response object comes back to the server's loop,
which sends it. The services are thread-safe (the store serialises its connection; the caches lock).
"""
from __future__ import annotations

import asyncio
import functools
from typing import Awaitable, Callable

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

Handler = Callable[[Request], Awaitable[Response]]


def off_loop(handler: Handler) -> Handler:
    async def run(request: Request) -> Response:
        await request.body()  # on the server's loop: the handler's form() then reads it from the cache
        return await anyio.to_thread.run_sync(_run, handler, request)

    return functools.update_wrapper(run, handler, assigned=("__name__", "__doc__"), updated=())


def _run(handler: Handler, request: Request) -> Response:
    return asyncio.run(handler(request))


def routes_off_loop(routes: list[BaseRoute]) -> list[BaseRoute]:
    """``routes`` with each page's handler run by :func:`off_loop` (mounts such as the static files stay)."""
    return [Route(r.path, off_loop(r.endpoint), methods=sorted(r.methods or ()) or None, name=r.name)
            if isinstance(r, Route) else r for r in routes]
