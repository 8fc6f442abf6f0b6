"""Access commands: ``grant``, ``revoke``, ``grants`` and the ``audit`` log."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Optional

import click

from .build import Argument, Option
from ..errors import ValidationError
from .common import JSON_OPTION, emit, open_workspace, out, principal, table

_RELATIVE = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def grant(ctx: click.Context, who: str = Argument(..., metavar="PRINCIPAL"),
          pattern: str = Argument(..., help="Glob over pack names (lib:hr-*, pkg:acme.*, *) or doc ids "
                                        "(lib:eng/api.*)."),
          level: str = Argument(..., help="read, write or admin."), json_out: bool = JSON_OPTION) -> None:
    """Give PRINCIPAL read, write or admin on the packs (or docs) PATTERN matches."""
    from .. import access

    record = access.grant(open_workspace(ctx), who, pattern, level, principal(ctx))
    emit(record, json_out, lambda r: out.print(f"granted {r['level']} on {r['pattern']} to {r['principal']}",
                                               markup=False))


def revoke(ctx: click.Context, who: str = Argument(..., metavar="PRINCIPAL"),
           pattern: str = Argument(...), json_out: bool = JSON_OPTION) -> None:
    """Remove PRINCIPAL's grant on exactly PATTERN."""
    from .. import access

    removed = access.revoke(open_workspace(ctx), who, pattern, principal(ctx))
    emit({"principal": who, "pattern": pattern, "revoked": removed}, json_out,
         lambda r: out.print(("revoked" if r["revoked"] else "no grant to revoke:") + f" {who} {pattern}",
                             markup=False))


def grants(ctx: click.Context, json_out: bool = JSON_OPTION) -> None:
    """List the grants you may see."""
    from .. import access

    rows = access.grants(open_workspace(ctx), principal(ctx))
    emit(rows, json_out, lambda rs: table(("principal", "pattern", "level", "granted_by", "granted_at"), rs)
         if rs else out.print("no grants: single-user mode, the owner holds admin on everything"))


def audit(ctx: click.Context, who: Optional[str] = Option(None, "--principal", help="Only this principal."),
          since: Optional[str] = Option(None, "--since", help="ISO-8601 time or an age like 30m, 12h, 7d."),
          limit: Optional[int] = Option(None, "--limit", min=1,
                                              help="Only the latest N entries (shown oldest first)."),
          json_out: bool = JSON_OPTION) -> None:
    """The audit log: every write and every denied attempt (principal, action, target, time, outcome)."""
    from .. import access

    rows = access.audit_log(open_workspace(ctx), principal(ctx), who, parse_since(since), limit)
    emit(rows, json_out, lambda rs: table(("at", "principal", "action", "target", "outcome"), rs))


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


COMMANDS = [grant, revoke, grants, audit]
