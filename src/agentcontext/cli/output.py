"""Output for people and scripts, shared by every CLI command (Typer's and the ones derived from declared
operations): Rich consoles that print user text literally, JSON under ``--json``, tables, a progress bar.
Imports no Typer, so a command that needs none starts without it."""
from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from rich.console import Console

# User text (titles, selectors such as lib:notes, memory contents) is printed literally: no Rich markup ("[admin]")
# and no emoji codes (":notes:", ":warning:"). Styling goes through ``style=`` or ``rich.text.Text``, never markup.
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)

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


def print_decisions(rows: list[dict[str, Any]], empty: str) -> None:
    """Decisions one a line: id, category, scenario, outcome, confidence and the similarity or causal distance."""
    if not rows:
        out.print(empty)
    for d in rows:
        meta = d.get("metadata") or {}
        extra = ""
        if "similarity" in meta:
            extra = f"  similarity {meta['similarity']:.3f}"
        elif "causal_distance" in meta:
            extra = f"  distance {meta['causal_distance']} ({meta.get('relationship')})"
        out.print(f"{d['decision_id']}  [{d['category']}] {d['scenario']} -> {d['outcome']} "
                  f"(confidence {d['confidence']:.2f}){extra}", markup=False)
