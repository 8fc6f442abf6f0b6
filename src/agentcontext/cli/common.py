"""What every CLI module shares: opening the workspace, the acting principal, JSON or Rich output, file reads."""
from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import typer
from rich.console import Console

from ..errors import ValidationError

if TYPE_CHECKING:  # the services load when a command runs, not for --help or --version
    from ..graph.context_graph import ContextGraph
    from ..workspace import Workspace

# User text (titles, selectors such as lib:notes, memory contents) is printed literally: no Rich markup ("[admin]")
# and no emoji codes (":notes:", ":warning:"). Styling goes through ``style=`` or ``rich.text.Text``, never markup.
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)

JSON_OPTION = typer.Option(False, "--json", help="Print only JSON on stdout (for scripts).")


def options(ctx: typer.Context | None) -> dict[str, Any]:
    obj = ctx.find_root().obj if ctx is not None else None
    return obj if isinstance(obj, dict) else {}


def open_workspace(ctx: typer.Context | None, create: bool = False) -> Workspace:
    from ..workspace import Workspace

    return Workspace.open(home=options(ctx).get("home"), create=create)


def principal(ctx: typer.Context | None) -> str | None:
    return options(ctx).get("principal") or os.environ.get("AGENTCONTEXT_PRINCIPAL") or None


def emit(data: Any, as_json: bool, human: Callable[[Any], None] | None = None) -> None:
    """Print ``data`` as JSON (``--json``) or through ``human`` for people."""
    if as_json or human is None:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    else:
        human(data)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on stderr; yields ``report(label, done, total)``."""
    if not enabled or not sys.stderr.isatty() and os.environ.get("AGENTCONTEXT_PROGRESS") != "1":
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=False) as bar:
        tasks: dict[str, Any] = {}

        def report(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield report


def must_exist(path: Path, folders: bool = False) -> Path:
    """``path``, or a ValidationError that says "no such file" (before a service gets a path that is not there)."""
    if not Path(path).exists():
        what = "no such file or folder" if folders else "no such file"
        raise ValidationError(f"{what}: {path}", file=str(path))
    return Path(path)


def read_text(path: Path) -> str:
    must_exist(path)
    if Path(path).is_dir():
        raise ValidationError(f"{path} is a folder; give a file", file=str(path))
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {path} as UTF-8 text: {exc}", file=str(path)) from exc


def is_key(column: str) -> bool:
    """Columns that name something (pack, id, ..._id, selector): shown whole, never cut to fit the terminal."""
    return column in ("pack", "id", "selector", "label") or column.endswith("_id")


NARROWEST = 8  # below this many characters a wrapped column is unreadable


def table(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    """Print ``rows`` as a Rich table of ``columns`` (missing values blank). Key columns keep their full width
    (an id cut at 80 columns cannot be copied) and the others wrap into what is left; when too little is left
    for them, each row is printed on its own line instead (``key  key  value  value``)."""
    cells = [["" if row.get(col) is None else str(row.get(col)) for col in columns] for row in rows]
    widths = [max([len(col), *(len(r[i]) for r in cells)]) for i, col in enumerate(columns)]
    keys = [i for i, col in enumerate(columns) if is_key(col)]
    others = len(columns) - len(keys)
    need = sum(widths[i] for i in keys) + others * NARROWEST + 3 * len(columns) + 1
    if others and need > out.width:
        out.print("  ".join(columns), markup=False, style="bold")
        for r in cells:
            out.print("  ".join(r), markup=False)
        return
    from rich.table import Table

    grid = Table()
    for i, col in enumerate(columns):
        if i in keys:
            grid.add_column(col, no_wrap=True, min_width=widths[i], overflow="ignore")
        else:
            grid.add_column(col, overflow="fold")
    from rich.text import Text

    for r in cells:
        grid.add_row(*(Text(cell) for cell in r))  # a str cell would be read as markup and emoji codes
    out.print(grid)


GRAPH_OPTION = typer.Option(None, "--graph", "-g", help="Graph name (access name graph:NAME); default: the "
                            "workspace graph, graph:default, that the MCP decision tools use.")


def parse_pairs(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict; VALUE is read as JSON when it parses (true, 0.8, [..], "x"), else as text."""
    found: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"{flag} expects KEY=VALUE, got {pair!r}", option=flag, value=pair)
        try:
            found[key] = json.loads(raw)
        except ValueError:
            found[key] = raw
    return found


def open_graph(ctx: typer.Context, name: str | None) -> ContextGraph:
    """The workspace graph (or the graph ``name``) acting as the CLI's principal: the graph and the decision
    services bound to it check and audit every call, as they do for MCP."""
    from ..graph.context_graph import workspace_graph

    return workspace_graph(open_workspace(ctx), principal(ctx), name=name)
