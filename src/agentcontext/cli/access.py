"""The ``audit`` log command. ``grant``, ``revoke`` and ``grants`` are derived from their declared operations
(``agentcontext.operations.access``)."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Optional

import click

from .build import Option
from ..errors import ValidationError
from .common import JSON_OPTION, emit, open_workspace, principal, table

_RELATIVE = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


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


COMMANDS = [audit]
