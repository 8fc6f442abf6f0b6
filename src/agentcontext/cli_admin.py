"""CLI commands for running the MCP server and for access, tokens, versions and the audit log.

Mounted by ``cli.py``: ``SUBAPPS`` (``serve``, ``token``) and top-level ``COMMANDS`` (``grant``, ``revoke``,
``grants``, ``history``, ``diff``, ``audit``). Every command takes ``--json``.
"""
from __future__ import annotations

import re
import sys
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import typer
from rich.table import Table

from . import access
from .cli_common import JSON_OPTION, emit, err, open_workspace, out, principal
from .errors import ValidationError
from .knowledge import history as history_mod

serve_app = typer.Typer(help="Serve agentcontext to agents.", no_args_is_help=True)
token_app = typer.Typer(help="Issue, list and revoke bearer tokens for the MCP HTTP server.", no_args_is_help=True)
DEFAULT_PORT = 8765
_RELATIVE = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@serve_app.command("mcp")
def serve_mcp(ctx: typer.Context,
              http: bool = typer.Option(False, "--http", help="Streamable HTTP on 127.0.0.1 instead of stdio; "
                                        "clients need `Authorization: Bearer <token>`."),
              port: int = typer.Option(DEFAULT_PORT, "--port", min=1, max=65535, help="Port for --http."),
              json_out: bool = JSON_OPTION) -> None:
    """Speak MCP over stdio (default) or HTTP: the knowledge tools, resource and prompt."""
    from .mcp_server import serve_http, serve_stdio

    ws = open_workspace(ctx)
    if http:
        err.print(f"agentcontext MCP server on http://127.0.0.1:{port}/mcp (bearer tokens required; "
                  "`agentcontext token create PRINCIPAL` issues one)")
        serve_http(ws, port)
    else:
        serve_stdio(ws, principal(ctx))


@token_app.command("create")
def token_create(ctx: typer.Context, who: str = typer.Argument(..., metavar="PRINCIPAL"),
                 note: str = typer.Option("", "--note", help="What the token is for."),
                 json_out: bool = JSON_OPTION) -> None:
    """Issue a token for PRINCIPAL; it is shown once and stored only as a hash."""
    result = access.create_token(open_workspace(ctx), who, principal(ctx), note)
    emit(result, json_out, lambda r: (out.print(r["token"], markup=False),
                                      err.print(f"token {r['id']} for {r['principal']}: store it now, it is not "
                                                "shown again")))


@token_app.command("list")
def token_list(ctx: typer.Context, json_out: bool = JSON_OPTION) -> None:
    """List issued tokens (ids and principals, never the secrets)."""
    rows = access.tokens(open_workspace(ctx), principal(ctx))
    emit(rows, json_out, lambda rs: _table(("id", "principal", "created_at", "created_by", "note"), rs))


@token_app.command("revoke")
def token_revoke(ctx: typer.Context, token_id: str = typer.Argument(..., metavar="ID"),
                 json_out: bool = JSON_OPTION) -> None:
    """Revoke the token with this id (see `token list`)."""
    access.revoke_token(open_workspace(ctx), token_id, principal(ctx))
    emit({"id": token_id, "revoked": True}, json_out, lambda r: out.print(f"revoked token {r['id']}"))


def grant(ctx: typer.Context, who: str = typer.Argument(..., metavar="PRINCIPAL"),
          pattern: str = typer.Argument(..., help="Glob over pack names (lib:hr-*, pkg:acme.*, *) or doc ids "
                                        "(lib:eng/api.*)."),
          level: str = typer.Argument(..., help="read, write or admin."), json_out: bool = JSON_OPTION) -> None:
    """Give PRINCIPAL read, write or admin on the packs (or docs) PATTERN matches."""
    record = access.grant(open_workspace(ctx), who, pattern, level, principal(ctx))
    emit(record, json_out, lambda r: out.print(f"granted {r['level']} on {r['pattern']} to {r['principal']}",
                                               markup=False))


def revoke(ctx: typer.Context, who: str = typer.Argument(..., metavar="PRINCIPAL"),
           pattern: str = typer.Argument(...), json_out: bool = JSON_OPTION) -> None:
    """Remove PRINCIPAL's grant on exactly PATTERN."""
    removed = access.revoke(open_workspace(ctx), who, pattern, principal(ctx))
    emit({"principal": who, "pattern": pattern, "revoked": removed}, json_out,
         lambda r: out.print(("revoked" if r["revoked"] else "no grant to revoke:") + f" {who} {pattern}",
                             markup=False))


def grants(ctx: typer.Context, json_out: bool = JSON_OPTION) -> None:
    """List the grants you may see."""
    rows = access.grants(open_workspace(ctx), principal(ctx))
    emit(rows, json_out, lambda rs: _table(("principal", "pattern", "level", "granted_by", "granted_at"), rs)
         if rs else out.print("no grants: single-user mode, the owner holds admin on everything"))


def history(ctx: typer.Context, pack: str, selector: str, json_out: bool = JSON_OPTION) -> None:
    """Every version of a doc: when, by whom, its content hash, whether it was a delete."""
    rows = history_mod.history(open_workspace(ctx), pack, selector, principal(ctx))
    emit(rows, json_out, lambda rs: _table(("version", "at", "by", "content_hash", "title", "deleted"),
                                           [{**r, "content_hash": r["content_hash"][:12]} for r in rs]))


def diff(ctx: typer.Context, pack: str, selector: str, v1: int, v2: int, json_out: bool = JSON_OPTION) -> None:
    """A unified diff of a doc between versions V1 and V2."""
    result = history_mod.diff(open_workspace(ctx), pack, selector, v1, v2, principal(ctx))
    if json_out:
        emit(result, True)
    else:
        sys.stdout.write(result["diff"] or f"no differences between v{v1} and v{v2}\n")


def audit(ctx: typer.Context, who: Optional[str] = typer.Option(None, "--principal", help="Only this principal."),
          since: Optional[str] = typer.Option(None, "--since", help="ISO-8601 time or an age like 30m, 12h, 7d."),
          limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                              help="Only the latest N entries (shown oldest first)."),
          json_out: bool = JSON_OPTION) -> None:
    """The audit log: every write and every denied attempt (principal, action, target, time, outcome)."""
    rows = access.audit_log(open_workspace(ctx), principal(ctx), who, parse_since(since), limit)
    emit(rows, json_out, lambda rs: _table(("at", "principal", "action", "target", "outcome"), rs))


def parse_since(value: str | None) -> str | None:
    """``None``, an ISO-8601 time, or a relative age (``30m``, ``12h``, ``7d``, ``2w``)."""
    if value is None:
        return None
    match = _RELATIVE.match(value.strip())
    if match:
        delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        return (datetime.now(timezone.utc) - delta).isoformat()
    if not value.strip():
        raise ValidationError("--since needs a time, e.g. 2026-01-31T12:00:00Z or 12h")
    return value


def _table(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    table = Table(*columns)
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    out.print(table)


SUBAPPS = {"serve": serve_app, "token": token_app}
COMMANDS = [grant, revoke, grants, history, diff, audit]
