"""``agentcontext token ...``: bearer tokens for the MCP HTTP server."""
from __future__ import annotations

import click

from .build import Argument, Group, Option
from .common import JSON_OPTION, emit, err, open_workspace, out, principal, table

token_app = Group(help="Issue, list and revoke bearer tokens for the MCP HTTP server.", no_args_is_help=True)


@token_app.command("create")
def token_create(ctx: click.Context, who: str = Argument(..., metavar="PRINCIPAL"),
                 note: str = Option("", "--note", help="What the token is for."),
                 json_out: bool = JSON_OPTION) -> None:
    """Issue a token for PRINCIPAL; it is shown once and stored only as a hash."""
    from .. import access

    result = access.create_token(open_workspace(ctx), who, principal(ctx), note)
    emit(result, json_out, lambda r: (out.print(r["token"], markup=False),
                                      err.print(f"token {r['id']} for {r['principal']}: store it now, it is not "
                                                "shown again")))


@token_app.command("list")
def token_list(ctx: click.Context, json_out: bool = JSON_OPTION) -> None:
    """List issued tokens (ids and principals, never the secrets)."""
    from .. import access

    rows = access.tokens(open_workspace(ctx), principal(ctx))
    emit(rows, json_out, lambda rs: table(("id", "principal", "created_at", "created_by", "note"), rs))


@token_app.command("revoke")
def token_revoke(ctx: click.Context, token_id: str = Argument(..., metavar="ID"),
                 json_out: bool = JSON_OPTION) -> None:
    """Revoke the token with this id (see `token list`)."""
    from .. import access

    access.revoke_token(open_workspace(ctx), token_id, principal(ctx))
    emit({"id": token_id, "revoked": True}, json_out, lambda r: out.print(f"revoked token {r['id']}"))
