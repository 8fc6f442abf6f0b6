"""MCP over stdio with every frame answered: the SDK's stdio transport, its reading side wrapped.

The SDK's reader drops a line it cannot validate (not JSON, a batch, ``"jsonrpc": "1.0"``, no method, ``params``
that are not an object, a nesting too deep to parse), so the client waits until its own timeout. Here each line is
checked before the SDK reads it, and a bad one gets the JSON-RPC 2.0 error the spec names: -32700 (parse error,
id null), -32600 (invalid request; the request's id when it has a valid one, else null), -32602 (invalid params,
with the request's id). A notification, and a response (even a malformed one), is never answered (JSON-RPC 2.0,
sections 4.1 and 5). The server keeps reading.
"""
from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
ONE_FRAME = "send one JSON-RPC 2.0 message per line"


def _error(rid: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def check_frame(line: str) -> types.JSONRPCError | bool:
    """True when the SDK may read ``line``; False to drop it unanswered (a notification or a response); else the
    error to send."""
    try:
        frame = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON (or nests too deeply); {ONE_FRAME}")
    if isinstance(frame, list):
        return _error(None, INVALID_REQUEST, f"Invalid Request: MCP does not take batches; {ONE_FRAME}")
    if not isinstance(frame, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: a message is a JSON object; {ONE_FRAME}")
    rid = frame.get("id")
    known = rid if _valid_id(rid) else None
    if "method" not in frame and ("result" in frame or "error" in frame):  # a response: passed on, never answered
        try:
            types.jsonrpc_message_adapter.validate_python(frame, by_name=False)
        except (pydantic.ValidationError, RecursionError):
            return False
        return True
    if frame.get("jsonrpc") != "2.0":
        return _error(known, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in frame and known is None:
        return _error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if "method" in frame:
        if not isinstance(frame["method"], str):
            return _error(known, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        if frame.get("params") is not None and not isinstance(frame["params"], dict):
            if known is None:
                return False  # a notification is never answered
            return _error(known, INVALID_PARAMS, 'Invalid params: "params" must be a JSON object (named parameters)')
    else:
        return _error(known, INVALID_REQUEST, 'Invalid Request: a request needs a "method" string')
    try:
        types.jsonrpc_message_adapter.validate_python(frame, by_name=False)
    except (pydantic.ValidationError, RecursionError):
        if known is None and "method" in frame:
            return False
        return _error(known, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response")
    return True


class CheckedLines:
    """The stdin lines the SDK's reader iterates over, each checked by ``check_frame``; a bad one is answered on
    the transport's write stream (given by ``answer_on`` once the transport is up) and not passed on."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            verdict = check_frame(line)
            if verdict is True:
                yield line
            elif verdict is not False:
                await self._ready.wait()
                try:
                    await self._replies.send(SessionMessage(verdict))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


def _claim_stdin() -> tuple[io.TextIOWrapper, Callable[[], None]]:
    """The wire read from a private duplicate of fd 0 while fd 0 points at the null device (as the SDK's own
    transport does: handlers and children read EOF, never a frame); the returned callable restores fd 0."""
    try:
        wire = os.dup(0)
    except OSError:  # no fd 0 to divert: read sys.stdin in place
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"), lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def restore() -> None:
        os.dup2(wire, 0)

    return io.TextIOWrapper(os.fdopen(wire, "rb", closefd=False), encoding="utf-8", errors="replace"), restore


async def run_stdio(server: MCPServer) -> None:
    """``server.run_stdio_async()`` with the reading side checked (``CheckedLines``)."""
    text, restore = _claim_stdin()
    try:
        lines = CheckedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_on(write_stream)
            lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs (mcp 2.x has no public name)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        restore()
