"""Top-level knowledge commands: search, docs, neighbors, read, flash, lint, why, render, reindex."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import ValidationError
from ..model import MAX_DOCS_PAGE, OVERSIZE_TOKENS
from .common import JSON_OPTION, emit, err, open_workspace, out, principal, progress_bar, read_text, table


def search(ctx: typer.Context, pack: Optional[str] = typer.Argument(None, help="The pack (with --all: the query)."),
           query: str = typer.Argument(""),
           tag: Optional[list[str]] = typer.Option(None, "--tag", help="All-of tag filter; repeat."),
           kind: Optional[str] = typer.Option(None, "--kind", help="Only docs of this kind."),
           prefix: Optional[str] = typer.Option(None, "--prefix", help="Only selectors starting with this."),
           related_to: Optional[str] = typer.Option(None, "--related-to", help="Only docs with an edge to this "
                                                    "selector."),
           edge_type: Optional[str] = typer.Option(None, "--edge-type", help="With --related-to: only edges of "
                                                   "this type."),
           all_packs: bool = typer.Option(False, "--all", help="Search every pack you may read: search --all QUERY."),
           limit: int = typer.Option(10, "--limit", help="At most this many hits, best first."),
           min_score: float = typer.Option(0.0, "--min-score", help="Drop hits scoring below this (absolute "
                                           "relevance from 0 to 1)."),
           json_out: bool = JSON_OPTION) -> None:
    """Search a pack by metadata first (selector, title, tags, summary), then body text and meaning."""
    from ..knowledge import catalog, tools

    ws = open_workspace(ctx)
    if all_packs:
        if query or tag or kind or prefix or related_to or edge_type:
            raise ValidationError("search --all takes only the query (and --limit, --min-score); the filters work "
                                  "in one pack: "
                                  "search PACK QUERY --kind ...")
        hits = catalog.search_packs(ws, pack or "", limit=limit, principal=principal(ctx), min_score=min_score)
    elif pack is None:
        raise ValidationError("search needs a PACK (or --all to search every pack): search PACK [QUERY]")
    else:
        hits = tools.search_knowledge(ws, pack, query, tags=tag, kind=kind, selector_prefix=prefix,
                                      related_to=related_to, edge_type=edge_type, limit=limit,
                                      principal=principal(ctx), min_score=min_score)

    def human(rows: list[dict[str, Any]]) -> None:
        if not rows:
            out.print("no matches")
            return
        table(("score", *(("pack",) if all_packs else ()), "selector", "kind", "title", "signals"),
              [{**h, "score": f"{h['score']:.2f}", "signals": ", ".join(h["signals"])} for h in rows])

    emit(hits, json_out, human)


def docs(ctx: typer.Context, pack: str,
         offset: int = typer.Option(0, "--offset", help="Skip this many docs (paging)."),
         limit: int = typer.Option(50, "--limit", help=f"Docs per page (1-{MAX_DOCS_PAGE})."),
         kind: Optional[str] = typer.Option(None, "--kind", help="Only docs of this kind."),
         tag: Optional[str] = typer.Option(None, "--tag", help="Only docs with this tag."),
         prefix: Optional[str] = typer.Option(None, "--prefix", help="Selectors starting with this."),
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


def neighbors(ctx: typer.Context, pack: str, selector: str,
              edge_type: Optional[str] = typer.Option(None, "--edge-type", help="Only edges of this type."),
              json_out: bool = JSON_OPTION) -> None:
    """Outbound typed edges of a doc, sorted by target then type."""
    from ..knowledge import tools

    rows = tools.list_knowledge_neighbors(open_workspace(ctx), pack, selector, edge_type, principal(ctx))

    def human(items: list[dict[str, Any]]) -> None:
        for n in items:
            out.print(f"{n['type']:>11} -> {n['selector']}" + (f"  {n['title']}" if n["exists"] else "  (missing)"))
        if not items:
            out.print("no outbound edges")

    emit(rows, json_out, human)


def read(ctx: typer.Context, pack: str, selector: str,
         version: Optional[int] = typer.Option(None, "--version", help="An earlier version (see `history`)."),
         json_out: bool = JSON_OPTION) -> None:
    """Print a doc's full body (read last, after search and neighbours)."""
    from ..knowledge import tools

    doc = tools.read_knowledge_doc(open_workspace(ctx), pack, selector, version, principal(ctx))
    emit(doc, json_out, lambda d: out.print(_doc_text(d)))


def _doc_text(doc: dict) -> Any:
    """A doc for people: the title in bold, the rest as written (no markup or emoji codes read from the text)."""
    from rich.text import Text

    return Text.assemble((doc["title"], "bold"), f" ({doc['selector']}, {doc['kind']}, v{doc['version']})\n"
                         f"{doc['summary']}\n\n{doc['content']}")


def flash(ctx: typer.Context, pack: str, selectors: list[str] = typer.Argument(..., help="Target selector(s)."),
          budget: Optional[int] = typer.Option(None, "--budget", help="Token budget; over it is an error."),
          degrade: Optional[str] = typer.Option(None, "--degrade", help="'summaries' to fit the budget instead."),
          as_of: Optional[str] = typer.Option(None, "--as-of", help="Assemble the graph as it stood then (ISO time)."),
          json_out: bool = JSON_OPTION) -> None:
    """Assemble SELECTORS with every prerequisite, foundations first, each once."""
    from ..knowledge import flash as flash_mod

    bundle = flash_mod.flash(open_workspace(ctx), pack, selectors, budget, as_of, principal(ctx), degrade)
    data = bundle.to_dict()  # what flash_knowledge returns over MCP

    def human(_: Any) -> None:
        err.print(f"flash {pack} {' '.join(selectors)}: {len(bundle.order)} docs, {bundle.tokens} tokens, "
                  f"digest {bundle.digest[:16]}")
        err.print("order: " + " -> ".join(bundle.order))
        out.print(bundle.text, markup=False)

    emit(data, json_out, human)


def lint(ctx: typer.Context, pack: str, max_tokens: int = typer.Option(OVERSIZE_TOKENS, "--max-tokens",
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
        raise typer.Exit(1)  # errors; redundant edges, orphans and oversize docs are warnings


def why(ctx: typer.Context, pack: str, from_selector: str = typer.Argument(..., metavar="FROM"),
        to_selector: str = typer.Argument(..., metavar="TO"), json_out: bool = JSON_OPTION) -> None:
    """Show the dependency path by which FROM pulls TO into its flash."""
    from ..knowledge import lint as lint_mod

    path = lint_mod.why(open_workspace(ctx), pack, from_selector, to_selector, principal(ctx))
    emit({"path": path}, json_out, lambda d: out.print(" -> ".join(d["path"])))


def render(ctx: typer.Context, file: str = typer.Argument(..., help="Template file, or - for stdin."),
           strict: bool = typer.Option(False, "--strict", help="Fail on variables that are not pack references "
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


def reindex(ctx: typer.Context, pack: Optional[str] = typer.Argument(None, help="Only this pack."),
            json_out: bool = JSON_OPTION) -> None:
    """Compute the embeddings that deferred installs left out."""
    from ..knowledge import packs

    ws = open_workspace(ctx)
    with progress_bar() as report:
        count = packs.embed_pack(ws, pack, report)
    emit({"embedded": count}, json_out, lambda d: out.print(f"embedded {d['embedded']} texts"))


COMMANDS = [search, docs, neighbors, read, flash, lint, why, render, reindex]
