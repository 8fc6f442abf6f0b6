"""What every CLI module shares: opening the workspace, the acting principal, JSON or Rich output, file reads."""
from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import ValidationError
from ..workspace import Workspace

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JSON_OPTION = typer.Option(False, "--json", help="Print only JSON on stdout (for scripts).")


def options(ctx: typer.Context | None) -> dict[str, Any]:
    obj = ctx.find_root().obj if ctx is not None else None
    return obj if isinstance(obj, dict) else {}


def open_workspace(ctx: typer.Context | None, create: bool = False) -> Workspace:
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
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=False) as bar:
        tasks: dict[str, Any] = {}

        def report(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield report


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {path} as UTF-8 text: {exc}", file=str(path)) from exc


def table(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    """Print ``rows`` as a Rich table of ``columns`` (missing values blank)."""
    grid = Table(*columns)
    for row in rows:
        grid.add_row(*("" if row.get(col) is None else str(row.get(col)) for col in columns))
    out.print(grid)
