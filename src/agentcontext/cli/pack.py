"""``agentcontext pack ...``: install, create and list knowledge packs."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..knowledge import packs, tools
from .common import JSON_OPTION, emit, open_workspace, out, principal, progress_bar

pack_app = typer.Typer(help="Install, create and list knowledge packs.", no_args_is_help=True)


def _packs_table(rows: list[dict[str, Any]]) -> None:
    table = Table("pack", "name", "docs", "editable")
    for r in rows:
        table.add_row(r["pack"], r["name"], str(r["docs"]), "yes" if r["editable"] else "read-only")
    out.print(table)


@pack_app.command("add")
def pack_add(ctx: typer.Context, path: Path = typer.Argument(..., help="Pack folder, manifest or package.yaml."),
             as_lib: Optional[str] = typer.Option(None, "--as-lib", help="Import as an editable lib:<SLUG> pack."),
             defer_embeddings: bool = typer.Option(False, "--defer-embeddings",
                                                   help="Install now; embed later (reindex or first search)."),
             json_out: bool = JSON_OPTION) -> None:
    """Install the packs in PATH (pkg: packs are read-only; re-adding replaces them in one transaction)."""
    ws = open_workspace(ctx, create=True)
    with progress_bar() as report:
        result = packs.install_folder(ws, path, as_lib=as_lib, principal=principal(ctx),
                                      defer_embeddings=defer_embeddings, progress=report)
    emit(result, json_out, lambda rows: [out.print(f"installed {r['pack']}: {r['docs']} docs, {r['edges']} edges")
                                         for r in rows])


@pack_app.command("list")
def pack_list(ctx: typer.Context, json_out: bool = JSON_OPTION) -> None:
    """List the packs you may read."""
    emit(tools.list_knowledge_packs(open_workspace(ctx), principal(ctx)), json_out, _packs_table)


@pack_app.command("new")
def pack_new(ctx: typer.Context, slug: str, name: Optional[str] = typer.Option(None, "--name"),
             json_out: bool = JSON_OPTION) -> None:
    """Create an empty, editable lib:SLUG pack."""
    result = packs.create_pack(open_workspace(ctx, create=True), slug, name, principal(ctx))
    emit(result, json_out, lambda r: out.print(f"created {r['pack']}"))
