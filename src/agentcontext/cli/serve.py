"""``agentcontext serve mcp``: the MCP server over stdio or HTTP."""
from __future__ import annotations

import typer

from .common import JSON_OPTION, err, open_workspace, principal

serve_app = typer.Typer(help="Serve agentcontext to agents.", no_args_is_help=True)
DEFAULT_PORT = 8765


@serve_app.command("mcp")
def serve_mcp(ctx: typer.Context,
              http: bool = typer.Option(False, "--http", help="Streamable HTTP on 127.0.0.1 instead of stdio; "
                                        "clients need `Authorization: Bearer <token>`."),
              port: int = typer.Option(DEFAULT_PORT, "--port", min=1, max=65535, help="Port for --http."),
              json_out: bool = JSON_OPTION) -> None:
    """Speak MCP over stdio (default) or HTTP: the knowledge tools, resource and prompt."""
    from ..mcp_server import serve_http, serve_stdio

    ws = open_workspace(ctx)
    if http:
        err.print(f"agentcontext MCP server on http://127.0.0.1:{port}/mcp (bearer tokens required; "
                  "`agentcontext token create PRINCIPAL` issues one)")
        serve_http(ws, port)
    else:
        serve_stdio(ws, principal(ctx))
