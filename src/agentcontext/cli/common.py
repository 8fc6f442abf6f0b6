"""What every CLI module shares: opening the workspace, the acting principal, JSON or Rich output, file reads."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .build import Option
from ..errors import ValidationError
from ..text import parse_pairs
from .output import NARROWEST, emit, err, is_key, out, progress_bar, table

__all__ = ["NARROWEST", "emit", "err", "is_key", "out", "progress_bar", "table", "JSON_OPTION", "GRAPH_OPTION",
           "options", "open_workspace", "principal", "must_exist", "read_text", "parse_pairs", "open_graph"]

if TYPE_CHECKING:  # the services load when a command runs, not for --help or --version
    from ..graph.context_graph import ContextGraph
    from ..workspace import Workspace

JSON_OPTION = Option(False, "--json", help="Print only JSON on stdout (for scripts).")


def options(ctx: click.Context | None) -> dict[str, Any]:
    obj = ctx.find_root().obj if ctx is not None else None
    return obj if isinstance(obj, dict) else {}


def open_workspace(ctx: click.Context | None, create: bool = False) -> Workspace:
    from ..workspace import Workspace

    return Workspace.open(home=options(ctx).get("home"), create=create)


def principal(ctx: click.Context | None) -> str | None:
    return options(ctx).get("principal") or os.environ.get("AGENTCONTEXT_PRINCIPAL") or None


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


GRAPH_OPTION = Option(None, "--graph", "-g", help="Graph name (access name graph:NAME); default: the "
                            "workspace graph, graph:default, that the MCP decision tools use.")


def open_graph(ctx: click.Context, name: str | None) -> ContextGraph:
    """The workspace graph (or the graph ``name``) acting as the CLI's principal: the graph and the decision
    services bound to it check and audit every call, as they do for MCP."""
    from ..graph.context_graph import workspace_graph

    return workspace_graph(open_workspace(ctx), principal(ctx), name=name)
