"""``agentcontext doc ...``: create, update and delete docs of lib: packs."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from .build import Group, Option
from .common import JSON_OPTION, emit, open_workspace, out, principal, read_text

doc_app = Group(help="Create, update and delete docs of lib: packs.", no_args_is_help=True)


@doc_app.command("put")
def doc_put(ctx: click.Context, pack: str, selector: str,
            title: Optional[str] = Option(None, "--title", help="The doc's title."),
            summary: Optional[str] = Option(None, "--summary", help="One or two sentences to judge "
                                                   "relevance from."),
            kind: Optional[str] = Option(None, "--kind", help="Its kind (default reference)."),
            tag: Optional[list[str]] = Option(None, "--tag", help="Repeat for several tags."),
            depends_on: Optional[list[str]] = Option(None, "--depends-on", help="Prerequisite selector; repeat."),
            file: Optional[Path] = Option(None, "--file", help="Body from a file ('-' for stdin)."),
            expected_version: Optional[int] = Option(None, "--expected-version",
                                                           help="Fail with ConflictError if the doc moved on."),
            json_out: bool = JSON_OPTION) -> None:
    """Create or update a doc; options not given keep their current values."""
    from ..knowledge import packs, tools

    ws = open_workspace(ctx)
    content = None
    if file is not None:
        content = sys.stdin.read() if str(file) == "-" else read_text(file)
    related = None
    if depends_on is not None:
        current = tools.read_knowledge_doc(ws, pack, selector, principal=principal(ctx))["related"] \
            if ws.store.get_node(packs.doc_id(pack, selector)) else []
        related = [r for r in current if r["type"] != "depends_on"] + [
            {"type": "depends_on", "target": d} for d in depends_on]
    result = packs.put_doc(ws, pack, selector, title=title, summary=summary, kind=kind, tags=tag, content=content,
                           related=related, expected_version=expected_version, principal=principal(ctx))
    emit(result, json_out, lambda r: out.print(f"{r['pack']} {r['selector']} is at version {r['version']}"))


@doc_app.command("rm")
def doc_rm(ctx: click.Context, pack: str, selector: str, json_out: bool = JSON_OPTION) -> None:
    """Delete a doc (history stays: read --version and flash --as-of still see it)."""
    from ..knowledge import packs

    result = packs.delete_doc(open_workspace(ctx), pack, selector, principal(ctx))
    emit(result, json_out, lambda r: out.print(f"deleted {r['pack']} {r['selector']}"))
