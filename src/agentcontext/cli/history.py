"""Version commands for docs: ``history`` and ``diff``."""
from __future__ import annotations

import sys

import click

from .common import JSON_OPTION, emit, open_workspace, principal, table


def history(ctx: click.Context, pack: str, selector: str, json_out: bool = JSON_OPTION) -> None:
    """Every version of a doc: when, by whom, its content hash, whether it was a delete."""
    from ..knowledge import history as history_mod

    rows = history_mod.history(open_workspace(ctx), pack, selector, principal(ctx))
    emit(rows, json_out, lambda rs: table(("version", "at", "by", "content_hash", "title", "deleted"),
                                           [{**r, "content_hash": r["content_hash"][:12]} for r in rs]))


def diff(ctx: click.Context, pack: str, selector: str, v1: int, v2: int, json_out: bool = JSON_OPTION) -> None:
    """A unified diff of a doc between versions V1 and V2."""
    from ..knowledge import history as history_mod

    result = history_mod.diff(open_workspace(ctx), pack, selector, v1, v2, principal(ctx))
    if json_out:
        emit(result, True)
    else:
        sys.stdout.write(result["diff"] or f"no differences between v{v1} and v{v2}\n")


COMMANDS = [history, diff]
