"""Who may do what to which pack. The service layer calls these; interfaces never check on their own.

Until a workspace has a principal other than the owner, everything is allowed (single-user mode).
"""
from __future__ import annotations

import fnmatch
from typing import Iterable

from .errors import AccessDeniedError, ReadOnlyError, ValidationError
from .workspace import Workspace

LEVELS = {"read": 1, "write": 2, "admin": 3}
GRANT = "grant"


def effective_principal(ws: Workspace, principal: str | None) -> str:
    return principal or ws.owner


def _grants(ws: Workspace) -> list[dict]:
    return ws.cached("access.grants", lambda: [v for _, v in ws.store.list_records(GRANT)])


def multi_user(ws: Workspace) -> bool:
    return bool(_grants(ws))


def level_for(ws: Workspace, principal: str | None, pack: str) -> int:
    who = effective_principal(ws, principal)
    grants = _grants(ws)
    if who == ws.owner or not grants:
        return LEVELS["admin"]
    best = 0
    for g in grants:
        if g["principal"] == who and fnmatch.fnmatchcase(pack, g["pattern"]):
            best = max(best, LEVELS[g["level"]])
    return best


def can(ws: Workspace, principal: str | None, pack: str, level: str = "read") -> bool:
    return level_for(ws, principal, pack) >= LEVELS[level]


def require(ws: Workspace, principal: str | None, pack: str, level: str, action: str, target: str = "") -> None:
    """Raise AccessDeniedError (and audit the attempt) unless ``principal`` holds ``level`` on ``pack``."""
    if can(ws, principal, pack, level):
        return
    who = effective_principal(ws, principal)
    ws.store.append_audit(who, action, target or pack, "denied", {"needed": level})
    raise AccessDeniedError(f"{who} may not {action} {target or pack}: needs {level} on {pack}; ask an admin for "
                            f"`agentcontext grant {who} {pack} {level}`", principal=who, pack=pack,
                            target=target or pack, needed=level)


def require_writable(pack: str) -> None:
    if pack.startswith("pkg:"):
        raise ReadOnlyError(f"{pack} is package knowledge and read-only; copy it with `agentcontext pack add PATH "
                            "--as-lib SLUG` to edit", pack=pack)


def visible(ws: Workspace, principal: str | None, packs: Iterable[str]) -> list[str]:
    return [p for p in packs if can(ws, principal, p, "read")]


def grant(ws: Workspace, principal: str, pattern: str, level: str, actor: str | None = None) -> dict:
    if level not in LEVELS:
        raise ValidationError(f"unknown level {level!r}; use read, write or admin", level=level)
    if not principal or principal == ws.owner:
        raise ValidationError(f"cannot grant to {principal!r}: the owner already holds admin on everything")
    record = {"principal": principal, "pattern": pattern, "level": level}
    ws.store.put_record(GRANT, f"{principal}\x1f{pattern}", record, actor=effective_principal(ws, actor))
    return record


def revoke(ws: Workspace, principal: str, pattern: str, actor: str | None = None) -> bool:
    return ws.store.delete_record(GRANT, f"{principal}\x1f{pattern}", actor=effective_principal(ws, actor))


def grants(ws: Workspace) -> list[dict]:
    return list(_grants(ws))
