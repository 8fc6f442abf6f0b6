"""CLI commands for knowledge packs: pack, doc, search, neighbors, read, flash, lint, why, render, reindex."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from .cli_common import JSON_OPTION, emit, err, open_workspace, out, principal, progress_bar
from .errors import ValidationError
from .knowledge import flash as flash_mod
from .knowledge import lint as lint_mod
from .knowledge import packs, render as render_mod, tools

pack_app = typer.Typer(help="Install, create and list knowledge packs.", no_args_is_help=True)
doc_app = typer.Typer(help="Create, update and delete docs of lib: packs.", no_args_is_help=True)


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


@doc_app.command("put")
def doc_put(ctx: typer.Context, pack: str, selector: str,
            title: Optional[str] = typer.Option(None, "--title"),
            summary: Optional[str] = typer.Option(None, "--summary"),
            kind: Optional[str] = typer.Option(None, "--kind"),
            tag: Optional[list[str]] = typer.Option(None, "--tag", help="Repeat for several tags."),
            depends_on: Optional[list[str]] = typer.Option(None, "--depends-on", help="Prerequisite selector; repeat."),
            file: Optional[Path] = typer.Option(None, "--file", help="Body from a file ('-' for stdin)."),
            expected_version: Optional[int] = typer.Option(None, "--expected-version",
                                                           help="Fail with ConflictError if the doc moved on."),
            json_out: bool = JSON_OPTION) -> None:
    """Create or update a doc; options not given keep their current values."""
    ws = open_workspace(ctx)
    content = None
    if file is not None:
        content = sys.stdin.read() if str(file) == "-" else _read_text(file)
    related = None
    if depends_on is not None:
        current = tools.read_knowledge_doc(ws, pack, selector, principal=principal(ctx))["related"] \
            if ws.store.get_node(packs.doc_id(pack, selector)) else []
        related = [r for r in current if r["type"] != "depends_on"] + [
            {"type": "depends_on", "target": d} for d in depends_on]
    result = packs.put_doc(ws, pack, selector, title=title, summary=summary, kind=kind, tags=tag, content=content,
                           related=related, expected_version=expected_version, principal=principal(ctx))
    emit(result, json_out, lambda r: out.print(f"{r['pack']} {r['selector']} is at version {r['version']}"))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {path} as UTF-8 text: {exc}", file=str(path)) from exc


@doc_app.command("rm")
def doc_rm(ctx: typer.Context, pack: str, selector: str, json_out: bool = JSON_OPTION) -> None:
    """Delete a doc (history stays: read --version and flash --as-of still see it)."""
    result = packs.delete_doc(open_workspace(ctx), pack, selector, principal(ctx))
    emit(result, json_out, lambda r: out.print(f"deleted {r['pack']} {r['selector']}"))


def search(ctx: typer.Context, pack: str, query: str = typer.Argument(""),
           tag: Optional[list[str]] = typer.Option(None, "--tag", help="All-of tag filter; repeat."),
           kind: Optional[str] = typer.Option(None, "--kind"), prefix: Optional[str] = typer.Option(None, "--prefix"),
           related_to: Optional[str] = typer.Option(None, "--related-to"),
           edge_type: Optional[str] = typer.Option(None, "--edge-type"),
           limit: int = typer.Option(10, "--limit"), json_out: bool = JSON_OPTION) -> None:
    """Search a pack by metadata first (selector, title, tags, summary), then body text and meaning."""
    hits = tools.search_knowledge(open_workspace(ctx), pack, query, tags=tag, kind=kind, selector_prefix=prefix,
                                  related_to=related_to, edge_type=edge_type, limit=limit, principal=principal(ctx))

    def human(rows: list[dict[str, Any]]) -> None:
        table = Table("score", "selector", "kind", "title", "signals")
        for h in rows:
            table.add_row(f"{h['score']:.2f}", h["selector"], h["kind"], h["title"], ", ".join(h["signals"]))
        out.print(table if rows else "no matches")

    emit(hits, json_out, human)


def neighbors(ctx: typer.Context, pack: str, selector: str,
              edge_type: Optional[str] = typer.Option(None, "--edge-type"), json_out: bool = JSON_OPTION) -> None:
    """Outbound typed edges of a doc, sorted by target then type."""
    rows = tools.list_knowledge_neighbors(open_workspace(ctx), pack, selector, edge_type, principal(ctx))

    def human(items: list[dict[str, Any]]) -> None:
        for n in items:
            out.print(f"{n['type']:>11} -> {n['selector']}" + (f"  {n['title']}" if n["exists"] else "  (missing)"))
        if not items:
            out.print("no outbound edges")

    emit(rows, json_out, human)


def read(ctx: typer.Context, pack: str, selector: str, version: Optional[int] = typer.Option(None, "--version"),
         json_out: bool = JSON_OPTION) -> None:
    """Print a doc's full body (read last, after search and neighbours)."""
    doc = tools.read_knowledge_doc(open_workspace(ctx), pack, selector, version, principal(ctx))
    emit(doc, json_out, lambda d: out.print(f"[bold]{d['title']}[/bold] ({d['selector']}, {d['kind']}, "
                                            f"v{d['version']})\n{d['summary']}\n\n{d['content']}", markup=True))


def flash(ctx: typer.Context, pack: str, selectors: list[str] = typer.Argument(..., help="Target selector(s)."),
          budget: Optional[int] = typer.Option(None, "--budget", help="Token budget; over it is an error."),
          degrade: Optional[str] = typer.Option(None, "--degrade", help="'summaries' to fit the budget instead."),
          as_of: Optional[str] = typer.Option(None, "--as-of", help="Assemble the graph as it stood then (ISO time)."),
          json_out: bool = JSON_OPTION) -> None:
    """Assemble SELECTORS with every prerequisite, foundations first, each once."""
    bundle = flash_mod.flash(open_workspace(ctx), pack, selectors, budget, as_of, principal(ctx), degrade)
    data = {"order": bundle.order, "digest": bundle.digest, "tokens": bundle.tokens, "text": bundle.text,
            "degraded": bundle.degraded, "as_of": bundle.as_of}

    def human(_: Any) -> None:
        err.print(f"flash {pack} {' '.join(selectors)}: {len(bundle.order)} docs, {bundle.tokens} tokens, "
                  f"digest {bundle.digest[:16]}")
        err.print("order: " + " -> ".join(bundle.order))
        out.print(bundle.text, markup=False)

    emit(data, json_out, human)


def lint(ctx: typer.Context, pack: str, max_tokens: int = typer.Option(lint_mod.OVERSIZE_TOKENS, "--max-tokens"),
         json_out: bool = JSON_OPTION) -> None:
    """Report cycles, unknown targets, redundant depends_on edges, orphans and oversize docs.

    Exits 1 when there are cycles or unknown targets (errors); the rest are warnings."""
    report = lint_mod.lint(open_workspace(ctx), pack, max_tokens, principal(ctx))

    def human(r: dict[str, Any]) -> None:
        out.print(f"{r['pack']}: {r['docs']} docs, " + ("no problems" if r["ok"] else "problems found"))
        for c in r["cycles"]:
            out.print("cycle: " + " -> ".join(c))
        for m in r["missing_targets"]:
            out.print(f"unknown target: {m['selector']} {m['type']} {m['target']}")
        for e in r["redundant_edges"]:
            out.print(f"redundant: {e['selector']} -> {e['target']} (implied by {' -> '.join(e['implied_by'])})")
        for o in r["orphans"]:
            out.print(f"orphan: {o}")
        for o in r["oversize"]:
            out.print(f"oversize: {o['selector']} ({o['tokens']} tokens)")

    emit(report, json_out, human)
    if report["cycles"] or report["missing_targets"]:
        raise typer.Exit(1)  # errors; redundant edges, orphans and oversize docs are warnings


def why(ctx: typer.Context, pack: str, from_selector: str = typer.Argument(..., metavar="FROM"),
        to_selector: str = typer.Argument(..., metavar="TO"), json_out: bool = JSON_OPTION) -> None:
    """Show the dependency path by which FROM pulls TO into its flash."""
    path = lint_mod.why(open_workspace(ctx), pack, from_selector, to_selector, principal(ctx))
    emit({"path": path}, json_out, lambda d: out.print(" -> ".join(d["path"])))


def render(ctx: typer.Context, file: str = typer.Argument(..., help="Template file, or - for stdin."),
           json_out: bool = JSON_OPTION) -> None:
    """Replace {{ lib.<slug> }}, {{ pkg.<...> }} and {{ lib.<slug>.<selector> }} in a prompt template."""
    template = sys.stdin.read() if file == "-" else _read_text(Path(file))
    text = render_mod.render(open_workspace(ctx), template, principal(ctx))
    emit({"text": text}, json_out, lambda d: out.print(d["text"], markup=False, end=""))


def reindex(ctx: typer.Context, pack: Optional[str] = typer.Argument(None, help="Only this pack."),
            json_out: bool = JSON_OPTION) -> None:
    """Compute the embeddings that deferred installs left out."""
    ws = open_workspace(ctx)
    with progress_bar() as report:
        count = packs.embed_pack(ws, pack, report)
    emit({"embedded": count}, json_out, lambda d: out.print(f"embedded {d['embedded']} texts"))


COMMANDS = [search, neighbors, read, flash, lint, why, render, reindex]
