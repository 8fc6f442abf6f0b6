"""``agentcontext pack ...``: install, create, list and export knowledge packs."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from .build import Argument, Group, Option
from .common import JSON_OPTION, emit, err, must_exist, open_workspace, out, principal, progress_bar

pack_app = Group(help="Install, create, list and export knowledge packs.", no_args_is_help=True)


@pack_app.command("add")
def pack_add(ctx: click.Context,
             path: Path = Argument(..., help="Pack folder, manifest, package.yaml or packages.yaml (registry)."),
             as_lib: Optional[str] = Option(None, "--as-lib", help="Import as an editable lib:<SLUG> pack."),
             defer_embeddings: bool = Option(False, "--defer-embeddings",
                                                   help="Install now; embed later (reindex or first search)."),
             scope: Optional[str] = Option(None, "--scope", help="Where a Nenjo package comes from: the "
                                                 "GitHub owner (e.g. nenjo-ai); read from the git remote if unset."),
             repo: Optional[str] = Option(None, "--repo", help="...and the repository (e.g. packages)."),
             skip_unsupported: bool = Option(False, "--skip-unsupported", help="Install a package's knowledge "
                                                   "and skip its agents, abilities, commands, MCP servers (listed)."),
             json_out: bool = JSON_OPTION) -> None:
    """Install the packs in PATH (pkg: packs are read-only; re-adding replaces them in one transaction)."""
    from ..knowledge import packs

    must_exist(path, folders=True)
    ws = open_workspace(ctx, create=True)
    with progress_bar() as report:
        result = packs.install_folder(ws, path, as_lib=as_lib, principal=principal(ctx),
                                      defer_embeddings=defer_embeddings, progress=report, scope=scope, repo=repo,
                                      skip_unsupported=skip_unsupported)

    def human(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            out.print(f"installed {r['pack']}: {r['docs']} docs, {r['edges']} edges")
        for s in rows[0].get("skipped", []) if rows else []:
            err.print(f"skipped {s['package']}/{s['module']}: {s['reason']}")

    for r in result:  # on stderr with --json too (the JSON lists them under missing_targets)
        for m in r.get("missing_targets", []):
            guess = f" (did you mean {', '.join(m['did_you_mean'])}?)" if m["did_you_mean"] else ""
            err.print(f"warning: {r['pack']} {m['selector']}: {m['type']} edge to missing doc {m['target']!r}"
                      f"{guess}; `agentcontext lint {r['pack']}` lists every problem", markup=False)
    emit(result, json_out, human)


@pack_app.command("new")
def pack_new(ctx: click.Context, slug: str,
             name: Optional[str] = Option(None, "--name", help="A human name (default: SLUG)."),
             json_out: bool = JSON_OPTION) -> None:
    """Create an empty, editable lib:SLUG pack."""
    from ..knowledge import packs

    result = packs.create_pack(open_workspace(ctx, create=True), slug, name, principal(ctx))
    emit(result, json_out, lambda r: out.print(f"created {r['pack']}"))


@pack_app.command("export")
def pack_export(ctx: click.Context, pack: str = Argument(..., help="The pack, e.g. lib:notes."),
                folder: Path = Argument(..., metavar="DIR", help="A new (or empty) folder to write."),
                json_out: bool = JSON_OPTION) -> None:
    """Write PACK out as a nenjo.knowledge.v1 folder (manifest.yaml + docs/) that `pack add` installs back."""
    from ..knowledge.export import export_pack

    result = export_pack(open_workspace(ctx), pack, folder, principal(ctx))
    emit(result, json_out, lambda r: out.print(f"exported {r['pack']}: {r['docs']} docs to {r['path']}"))
