"""``agentcontext mcp config --client NAME``: the MCP client configuration for this workspace, real paths filled in.

GUI clients (Claude Desktop, Cursor, VS Code) start MCP servers with a bare environment: no shell profile,
no virtualenv on PATH, no AGENTCONTEXT_HOME, and a working directory of their choosing. So the snippet names
the absolute path of the installed ``agentcontext`` executable and passes the workspace with ``--home`` (or,
for a server store, ``AGENTCONTEXT_URL`` in ``env``), and the server it starts needs nothing else.
"""
from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from .build import Group, Option
from ..config import replica_env, resolve_store_url
from ..errors import ValidationError
from .common import JSON_OPTION, emit, err, options, out, principal

mcp_app = Group(help="MCP client set-up: the configuration snippet for Claude Desktop, Cursor, VS Code or "
                      "Claude Code.", no_args_is_help=True)

CLIENTS: dict[str, dict[str, Any]] = {
    "claude-desktop": {"key": "mcpServers", "where": [
        "macOS: ~/Library/Application Support/Claude/claude_desktop_config.json",
        "Windows: %APPDATA%\\Claude\\claude_desktop_config.json",
        "(or Claude Desktop > Settings > Developer > Edit Config); restart Claude Desktop after saving"]},
    "cursor": {"key": "mcpServers", "where": [
        "~/.cursor/mcp.json (every project) or .cursor/mcp.json in the project"]},
    "vscode": {"key": "servers", "type": True, "where": [
        ".vscode/mcp.json in the workspace (or the user mcp.json: MCP: Open User Configuration)"]},
    "claude-code": {"key": "mcpServers", "type": True, "where": [
        "run the command below, or put the JSON in .mcp.json at the project root (--scope project)"]},
}
SERVER_NAME = "agentcontext"


def executable() -> list[str]:
    """The absolute command that starts this installation's CLI, wherever a client runs it from."""
    here = Path(sys.executable).parent
    for candidate in (here / "agentcontext", here / "agentcontext.exe", here / "Scripts" / "agentcontext.exe"):
        if candidate.is_file():
            return [str(candidate.absolute())]
    found = shutil.which("agentcontext")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "agentcontext.cli"]  # e.g. run from a source checkout


def server_entry(home: Path | None, url: str | None, who: str | None, with_type: bool) -> dict[str, Any]:
    command, *prefix = executable()
    args = [*prefix, *(["--home", str(home)] if home is not None else []), *(["--as", who] if who else []),
            "serve", "mcp"]
    entry: dict[str, Any] = {"type": "stdio"} if with_type else {}
    entry.update({"command": command, "args": args})
    if url is not None:
        entry["env"] = {"AGENTCONTEXT_URL": url, **replica_env(url)}  # and its read replicas, when set
    return entry


def where_the_store_is(ctx: click.Context) -> tuple[Path | None, str | None]:
    """(workspace folder, None) for a SQLite workspace, (None, store URL) for a server store."""
    url = resolve_store_url(options(ctx).get("home"))
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):]).parent, None
    return None, url


@mcp_app.command("config")
def config(ctx: click.Context,
           client: str = Option(..., "--client", help="claude-desktop, cursor, vscode or claude-code."),
           name: str = Option(SERVER_NAME, "--name", help="The server's name in the client."),
           json_out: bool = JSON_OPTION) -> None:
    """Print the configuration that makes CLIENT start this workspace's MCP server (stdio), with the absolute
    path of the agentcontext executable and --home filled in (GUI clients start servers with a bare
    environment)."""
    spec = CLIENTS.get(client)
    if spec is None:
        raise ValidationError(f"unknown client {client!r}; use one of {', '.join(CLIENTS)}", client=client,
                              known=list(CLIENTS))
    home, url = where_the_store_is(ctx)
    entry = server_entry(home, url, principal(ctx), bool(spec.get("type")))
    snippet = {spec["key"]: {name: entry}}
    data: dict[str, Any] = {"client": client, "where": spec["where"], "config": snippet}
    if client == "claude-code":
        env = [f"--env={k}={v}" for k, v in entry.get("env", {}).items()]
        data["command"] = ["claude", "mcp", "add", "--scope", "user", *env, name, "--", entry["command"],
                           *entry["args"]]

    def human(d: dict[str, Any]) -> None:
        for line in d["where"]:
            err.print(f"# {line}", markup=False)
        if url is not None:
            err.print("# the snippet holds the store URL (and any password in it): keep the file private",
                      markup=False)
        if "command" in d:
            out.print(" ".join(shlex.quote(part) for part in d["command"]), markup=False)
            err.print("# or, in .mcp.json:", markup=False)
        out.print(json.dumps(d["config"], indent=2), markup=False)

    emit(data, json_out, human)

