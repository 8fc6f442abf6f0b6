"""Tokens, grants and the audit log, declared once for the CLI (``grant``, ``revoke``, ``grants``,
``token create|list|revoke``, ``audit``) and the console's rights and audit pages (``/rights``, ``/audit``). They
call ``agentcontext.access``, whose rules hold at every door: only an admin of a pattern covering it grants or
revokes on it; only the owner or an admin of ``*`` issues, lists and revokes tokens and reads everyone's audit
entries; everything is in the audit log.

MCP does not serve them (``skips``): tokens, grants and the audit log are not handed to agents. A token is shown
once, in the result of ``create_token`` (the CLI prints it, the console shows it on its own page); only its hash is
stored and ``list_tokens`` never returns it.

The principal a grant or a token is for is the field ``who`` (a click argument named ``principal`` would share its
name with ``--as``'s).
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import Field
from typing_extensions import TypedDict

from .base import Args, Caller, Cli, NoArgs, Operation, declare
from .types import MAX_INT, AnyJson

NOT_FOR_AGENTS = "tokens and grants are not handed to agents over MCP: an admin manages them (CLI, console)"
LEVELS = ("read", "write", "admin")
WHO = Field(min_length=1, max_length=100, description="The principal (1-100 letters, digits or . _ @ + -).")
PATTERN_HELP = "Glob over pack names (lib:hr-*, pkg:acme.*, *) or doc ids (lib:eng/api.*)."


class GrantArgs(Args):
    who: str = WHO
    pattern: str = Field(min_length=1, max_length=200, description=PATTERN_HELP)
    # the level is checked by access.grant (its message names the levels); the schema lists them
    level: str = Field(min_length=1, max_length=20, description="read, write or admin.",
                       json_schema_extra={"enum": list(LEVELS)})


class RevokeArgs(Args):
    who: str = WHO
    pattern: str = Field(min_length=1, max_length=200, description="The pattern granted, exactly.")


class TokenArgs(Args):
    who: str = WHO
    note: str = Field("", max_length=500, description="What the token is for.")


class TokenIdArgs(Args):
    token_id: str = Field(min_length=1, max_length=100, description="The token's id (see `token list`).")


TIME = "ISO-8601 time or an age like 30m, 12h, 7d."


class AuditArgs(Args):
    who: Optional[str] = Field(None, min_length=1, max_length=100, description="Only this principal.")
    since: Optional[str] = Field(None, min_length=1, max_length=100, description="From this time on: " + TIME)
    until: Optional[str] = Field(None, min_length=1, max_length=100, description="Before this time: " + TIME)
    action: Optional[str] = Field(None, min_length=1, max_length=100, description="Only this action (doc.put), or "
                                  "actions starting so (doc.*).")
    outcome: Optional[str] = Field(None, min_length=1, max_length=40, description="Only this outcome (ok, denied, "
                                   "absent, ...).")
    limit: Optional[int] = Field(None, ge=1, le=MAX_INT, description="Only the latest N entries (shown oldest "
                                 "first).")


class Grant(TypedDict):
    principal: str
    pattern: str
    level: str
    granted_by: str
    granted_at: str


class Revoked(TypedDict):
    principal: str
    pattern: str
    revoked: bool


class GrantsOut(TypedDict):
    grants: list[Grant]


class TokenInfo(TypedDict):
    id: str
    principal: str
    created_at: str
    created_by: str
    note: str


class Issued(TokenInfo):
    token: str  # the secret, shown this once


class TokensOut(TypedDict):
    tokens: list[TokenInfo]


class TokenRevoked(TypedDict):
    id: str
    revoked: bool


class Entry(TypedDict):
    seq: int
    at: str
    principal: str
    action: str
    target: str
    outcome: str
    detail: AnyJson  # what the action recorded (an object, or null)


class AuditOut(TypedDict):
    entries: list[Entry]


def _grant(ctx: Caller, a: GrantArgs) -> dict[str, Any]:
    from .. import access

    return access.grant(ctx.ws, a.who, a.pattern, a.level, ctx.principal)


def _revoke(ctx: Caller, a: RevokeArgs) -> dict[str, Any]:
    from .. import access

    removed = access.revoke(ctx.ws, a.who, a.pattern, ctx.principal)
    return {"principal": a.who, "pattern": a.pattern, "revoked": removed}


def _grants(ctx: Caller, _: NoArgs) -> dict[str, Any]:
    from .. import access

    return {"grants": access.grants(ctx.ws, ctx.principal)}


def _create_token(ctx: Caller, a: TokenArgs) -> dict[str, Any]:
    from .. import access

    return access.create_token(ctx.ws, a.who, ctx.principal, a.note)


def _tokens(ctx: Caller, _: NoArgs) -> dict[str, Any]:
    from .. import access

    return {"tokens": access.tokens(ctx.ws, ctx.principal)}


def _revoke_token(ctx: Caller, a: TokenIdArgs) -> dict[str, Any]:
    from .. import access

    return {"id": a.token_id, "revoked": access.revoke_token(ctx.ws, a.token_id, ctx.principal)}


def _audit(ctx: Caller, a: AuditArgs) -> dict[str, Any]:
    from .. import access

    return {"entries": access.audit_log(ctx.ws, ctx.principal, a.who, a.since, a.limit, action=a.action,
                                        outcome=a.outcome, until=a.until)}


SKIP = {"mcp": NOT_FOR_AGENTS}
GRANT = Operation(
    "grant_access", "Grant access", "Give PRINCIPAL read, write or admin on the packs (or docs) PATTERN matches.",
    GrantArgs, Grant, _grant, read_only=False,
    cli=Cli(("grant",), args=("who", "pattern", "level"), metavars={"who": "PRINCIPAL"}), skips=SKIP)
REVOKE = Operation(
    "revoke_access", "Revoke access", "Remove PRINCIPAL's grant on exactly PATTERN.",
    RevokeArgs, Revoked, _revoke, read_only=False, destructive=True,
    cli=Cli(("revoke",), args=("who", "pattern"), metavars={"who": "PRINCIPAL"}), skips=SKIP)
GRANTS = Operation(
    "list_grants", "List grants", "List the grants you may see.",
    NoArgs, GrantsOut, _grants, cli=Cli(("grants",), pick=lambda r: r["grants"]), skips=SKIP)
CREATE_TOKEN = Operation(
    "create_token", "Create a token", "Issue a token for PRINCIPAL; it is shown once and stored only as a hash.",
    TokenArgs, Issued, _create_token, read_only=False,
    cli=Cli(("token", "create"), args=("who",), metavars={"who": "PRINCIPAL"}), skips=SKIP)
LIST_TOKENS = Operation(
    "list_tokens", "List tokens", "List issued tokens (ids and principals, never the secrets).",
    NoArgs, TokensOut, _tokens, cli=Cli(("token", "list"), pick=lambda r: r["tokens"]), skips=SKIP)
REVOKE_TOKEN = Operation(
    "revoke_token", "Revoke a token", "Revoke the token with this id (see `token list`).",
    TokenIdArgs, TokenRevoked, _revoke_token, read_only=False, destructive=True,
    cli=Cli(("token", "revoke"), args=("token_id",), metavars={"token_id": "ID"}), skips=SKIP)
AUDIT = Operation(
    "read_audit_log", "The audit log",
    "The audit log: every write and every denied attempt (principal, action, target, time, outcome). The owner or "
    "an admin of `*` reads everyone's entries; anyone else only their own.",
    AuditArgs, AuditOut, _audit,
    cli=Cli(("audit",), flags={"who": ("--principal",)}, pick=lambda r: r["entries"]),
    skips={"mcp": "the audit log names every principal and target: an admin reads it (CLI, console), agents do not"})

OPERATIONS = [GRANT, REVOKE, GRANTS, CREATE_TOKEN, LIST_TOKENS, REVOKE_TOKEN, AUDIT]
declare(*OPERATIONS)
