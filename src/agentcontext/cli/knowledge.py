"""Top-level knowledge commands not yet declared as operations: docs, lint, why, render (search, neighbors, read,
flash and reindex are derived from their declarations: operations/knowledge.py, cli/declared.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click

from .build import Argument, Option
from ..model import MAX_DOCS_PAGE, OVERSIZE_TOKENS
from .common import JSON_OPTION, emit, err, open_workspace, out, principal, read_text, table




def docs(ctx: click.Context, pack: str,
         offset: int = Option(0, "--offset", help="Skip this many docs (paging)."),
         limit: int = Option(50, "--limit", help=f"Docs per page (1-{MAX_DOCS_PAGE})."),
         kind: Optional[str] = Option(None, "--kind", help="Only docs of this kind."),
         tag: Optional[str] = Option(None, "--tag", help="Only docs with this tag."),
         prefix: Optional[str] = Option(None, "--prefix", help="Selectors starting with this."),
         json_out: bool = JSON_OPTION) -> None:
    """List the docs of PACK you may read, by selector, a page at a time (the total says how many)."""
    from ..knowledge import catalog

    page = catalog.list_docs(open_workspace(ctx), pack, kind=kind, tag=tag, prefix=prefix, offset=offset,
                             limit=limit, principal=principal(ctx))

    def human(p: dict[str, Any]) -> None:
        if p["docs"]:
            table(("selector", "kind", "title", "version"), p["docs"])
        else:
            out.print("no docs")
        end = p["offset"] + len(p["docs"])
        more = f"; --offset {end} for more" if end < p["total"] else ""
        err.print(f"{p['pack']}: docs {p['offset'] + 1 if p['docs'] else 0}-{end} of {p['total']}{more}")

    emit(page, json_out, human)










def lint(ctx: click.Context, pack: str, max_tokens: int = Option(OVERSIZE_TOKENS, "--max-tokens",
                                                          help="Docs over this many tokens are reported oversize."),
         json_out: bool = JSON_OPTION) -> None:
    """Report cycles, unknown targets, redundant depends_on edges, orphans, oversize docs and unknown edge types.

    Exits 1 when there are cycles or unknown targets (errors); the rest are warnings."""
    from ..knowledge import lint as lint_mod

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
        for e in r["unknown_edge_types"]:
            hint = f" (did you mean {e['did_you_mean']}?)" if e["did_you_mean"] else ""
            out.print(f"unknown edge type: {e['selector']} {e['type']} {e['target']}{hint}")

    emit(report, json_out, human)
    if report["cycles"] or report["missing_targets"]:
        raise click.exceptions.Exit(1)  # errors; redundant edges, orphans and oversize docs are warnings


def why(ctx: click.Context, pack: str, from_selector: str = Argument(..., metavar="FROM"),
        to_selector: str = Argument(..., metavar="TO"), json_out: bool = JSON_OPTION) -> None:
    """Show the dependency path by which FROM pulls TO into its flash."""
    from ..knowledge import lint as lint_mod

    path = lint_mod.why(open_workspace(ctx), pack, from_selector, to_selector, principal(ctx))
    emit({"path": path}, json_out, lambda d: out.print(" -> ".join(d["path"])))


def render(ctx: click.Context, file: str = Argument(..., help="Template file, or - for stdin."),
           strict: bool = Option(False, "--strict", help="Fail on variables that are not pack references "
                                       "(by default {{ task.title }} and the like are left for the runtime)."),
           json_out: bool = JSON_OPTION) -> None:
    """Replace {{ lib.<slug>[.<selector>] }} and {{ pkg.<scope>.<repo>.<package>.<pack>[.<selector>] }} in a
    prompt template; other variables stay as written. A YAML file (a Nenjo agent or ability) is rendered field by
    field and stays YAML; its own {{ context.<name> }} blocks render when installed."""
    from ..knowledge.render_file import render_file

    path = None if file == "-" else Path(file)
    template = sys.stdin.read() if path is None else read_text(path)
    rendered = render_file(open_workspace(ctx), template, path, principal(ctx), strict=strict)
    text, left = rendered.text, rendered.variables

    def human(d: dict[str, Any]) -> None:
        out.print(d["text"], markup=False, end="")
        if left:
            err.print("left for the runtime: " + ", ".join(left), markup=False)

    emit({"text": text, "variables": left}, json_out, human)




COMMANDS = [docs, lint, why, render]  # search, neighbors, read, flash, reindex: declared (operations/knowledge.py)
