"""``agentcontext serve mcp`` (the MCP server over stdio or HTTP) and ``serve web`` (the web console)."""
from __future__ import annotations

import click

from .build import Group, Option
from .common import JSON_OPTION, err, open_workspace, principal

WEB_PORT = 8766

serve_app = Group(help="Serve agentcontext to agents.", no_args_is_help=True)
DEFAULT_PORT = 8765


@serve_app.command("mcp")
def serve_mcp(ctx: click.Context,
              http: bool = Option(False, "--http", help="Streamable HTTP on 127.0.0.1 instead of stdio; "
                                        "clients need `Authorization: Bearer <token>`."),
              port: int = Option(DEFAULT_PORT, "--port", min=1, max=65535, help="Port for --http."),
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


@serve_app.command("web")
def serve_web(ctx: click.Context,
              port: int = Option(WEB_PORT, "--port", min=1, max=65535, help="Port to listen on."),
              host: str = Option("127.0.0.1", "--host", help="Address to listen on; other than loopback "
                                       "only once tokens exist (`agentcontext token create PRINCIPAL`)."),
              open_browser: bool = Option(False, "--open", help="Open the console in the default browser."),
              json_out: bool = JSON_OPTION) -> None:
    """Serve the web console: packs, docs, graph, lint, flash, memory, decisions and the audit log.

    Prints a login link that logs you in as yourself (the owner, or --as); others log in with a token."""
    from ..web import serve

    def ready(url: str) -> None:
        if json_out:
            import json
            import sys

            sys.stdout.write(json.dumps({"url": url.split("/login")[0], "login_url": url}) + "\n")
            sys.stdout.flush()
        err.print(f"agentcontext web console on {url.split('/login')[0]}\n"
                  f"log in with this link (it works until the server stops): {url}\n"
                  "or with a token from `agentcontext token create PRINCIPAL`; Ctrl+C stops it", markup=False)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(open_workspace(ctx), host=host, port=port, principal=principal(ctx), on_ready=ready)
