"""Build the agentcontext MCP server (official ``mcp`` SDK 2.x) and serve it over stdio or HTTP.

stdio: the acting principal is fixed when the server starts (``--as``, ``AGENTCONTEXT_PRINCIPAL`` or the
owner); nothing but protocol frames goes to stdout (the SDK points fd 1 at stderr while serving), and every
malformed frame gets its JSON-RPC error (``stdio.py``).
HTTP: streamable HTTP on 127.0.0.1 only; every request needs ``Authorization: Bearer <token>`` (issued by
``agentcontext token create``), a missing or wrong one gets 401 as a bearer-token server answers, with no OAuth
offered (``http_auth.py``), and the token decides the principal.
"""
from __future__ import annotations

import importlib
import logging
from typing import Callable

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from .. import access
from ..errors import AgentContextError
from ..workspace import Workspace
from .registry import CallContext, as_mcp_tool, protocol_error, registered_capabilities, tool_specs
from .resources import add_knowledge_resources, read_index

HOST = "127.0.0.1"
# Modules that register tools (``register_tools``) when imported. All are part of the package: a missing or
# broken one fails the server start loudly (ImportError) instead of silently serving fewer tools.
PLUGIN_MODULES = ("agentcontext.mcp_server.knowledge", "agentcontext.mcp_server.memory",
                  "agentcontext.mcp_server.decisions", "agentcontext.mcp_server.context",
                  "agentcontext.mcp_server.graph")
INSTRUCTIONS = (
    "agentcontext gives you knowledge packs: graphs of source documents with metadata. Work metadata first: "
    "list_knowledge_packs, then search_knowledge (summaries, never bodies), list_knowledge_neighbors to follow "
    "typed edges, and read_knowledge_doc last, only for the docs you need; answer only from docs you read. "
    "flash_knowledge assembles a module with all its prerequisites in reading order. Memory: retrieve_memories "
    "before answering what may depend on earlier sessions, store_memory what is worth keeping. Decisions: "
    "find_precedents before deciding, record_decision after. Errors come back as tool "
    "errors whose text starts with the error type (NotFoundError, AccessDeniedError, CycleError, ...)."
)


def load_plugins() -> None:
    for name in PLUGIN_MODULES:
        importlib.import_module(name)


class WorkspaceTokens:
    """The SDK's TokenVerifier over our hashed tokens: the principal becomes the access token's client id."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    async def verify_token(self, token: str) -> AccessToken | None:
        who = access.principal_for_token(self.ws, token)
        return AccessToken(token="", client_id=who, scopes=[]) if who else None


def _token_principal() -> str | None:
    token = get_access_token()
    if token is None:  # unreachable behind RequireAuthMiddleware; never fall back to the owner
        raise access.AccessDeniedError("no bearer token on this request", principal="")
    return token.client_id


def build_server(ws: Workspace, principal: str | None = None, capabilities: list[str] | None = None,
                 http_port: int | None = None) -> MCPServer:
    """An MCP server over ``ws``: every registered capability's tools, the knowledge resources and prompt.

    ``principal`` acts for every call (None = the owner), unless ``http_port`` is given: then the server
    requires bearer tokens and each request acts as its token's principal.
    """
    load_plugins()
    principal_of: Callable[[], str | None] = (_token_principal if http_port is not None else lambda: principal)
    ctx = CallContext(ws, principal_of)
    auth = {}
    if http_port is not None:
        auth = {"auth": AuthSettings(issuer_url=f"http://{HOST}:{http_port}", resource_server_url=None),
                "token_verifier": WorkspaceTokens(ws)}
    from .. import __version__

    server = MCPServer("agentcontext", title="agentcontext", instructions=INSTRUCTIONS, version=__version__,
                       tools=[as_mcp_tool(spec, ctx) for spec in tool_specs(capabilities)], log_level="WARNING",
                       **auth)
    if capabilities is None or "knowledge" in capabilities:
        _add_knowledge_extras(server, ctx)
    return server


def _add_knowledge_extras(server: MCPServer, ctx: CallContext) -> None:
    add_knowledge_resources(server, ctx)

    @server.prompt(name="knowledge_pack_index",
                   description="The index of one pack (selector, kind, title, summary, related; never bodies) "
                               "to seed an agent with entry points.")
    def knowledge_pack_index(pack: str) -> str:
        try:
            return read_index(ctx, pack)
        except AgentContextError as exc:
            raise protocol_error(exc) from None


def serve_stdio(ws: Workspace, principal: str | None = None) -> None:
    """Speak MCP over stdin/stdout until the client hangs up."""
    import anyio

    from .stdio import run_stdio

    logging.getLogger().handlers.clear()
    anyio.run(run_stdio, build_server(ws, principal))


def http_app(ws: Workspace, port: int):  # -> an ASGI app: the SDK's Starlette app, its 401s rewritten
    from .http_auth import BearerChallenge

    return BearerChallenge(build_server(ws, http_port=port).streamable_http_app(host=HOST))


def serve_http(ws: Workspace, port: int) -> None:
    """Serve streamable HTTP on 127.0.0.1:``port`` (path /mcp), bearer tokens required."""
    import anyio
    import uvicorn

    config = uvicorn.Config(http_app(ws, port), host=HOST, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    anyio.run(server.serve)


__all__ = ["build_server", "serve_stdio", "serve_http", "http_app", "registered_capabilities"]
