"""``agentcontext checkpoint ...``: named snapshots of the graph's decisions, nodes and relationships, and diffs.

Each CLI call is its own process, so ``checkpoint take`` stores the snapshot at once (the flushed checkpoint
of the Python API: a ``checkpoint`` record and node), and ``list``, ``show`` and ``diff`` read stored ones.
The checkpoints check and audit every call for the acting principal: taking (a stored snapshot) needs ``write``
on ``graph:<name>``, the rest ``read``.
"""
from __future__ import annotations

from typing import Any, Optional

import click

from .build import Argument, Group
from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out

checkpoint_app = Group(help="Checkpoints: stored snapshots of the graph and what changed between two.",
                             no_args_is_help=True)


@checkpoint_app.command("take")
def take(ctx: click.Context, label: str = Argument(..., metavar="LABEL"),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Snapshot the graph now under LABEL and store it (taking LABEL again replaces it)."""
    from ..decisions.checkpoints import Checkpoints

    result = Checkpoints().keep(open_graph(ctx, graph_name), label)
    emit(result, json_out, lambda r: out.print(
        f"checkpoint {r['label']}: {r['decision_count']} decisions, {r['node_count']} nodes, "
        f"{r['relationship_count']} relationships", markup=False))


@checkpoint_app.command("list")
def list_cmd(ctx: click.Context, graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """The stored checkpoints' labels."""
    from ..decisions.checkpoints import Checkpoints

    graph = open_graph(ctx, graph_name)
    labels = Checkpoints().labels(graph)
    emit({"checkpoints": labels}, json_out,
         lambda r: [out.print(x, markup=False) for x in r["checkpoints"]] or out.print("no checkpoints"))


@checkpoint_app.command("show")
def show(ctx: click.Context, label: str = Argument(..., metavar="LABEL"),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """When a checkpoint was taken and how much it holds."""
    from ..decisions.checkpoints import Checkpoints, summary

    graph = open_graph(ctx, graph_name)
    emit(summary(Checkpoints().get(graph, label)), json_out, lambda r: out.print(
        f"checkpoint {r['label']} taken {r['at']} (change {r['change_counter']}): {r['decision_count']} decisions, "
        f"{r['node_count']} nodes, {r['relationship_count']} relationships", markup=False))


@checkpoint_app.command("diff")
def diff(ctx: click.Context, label_a: str = Argument(..., metavar="FROM"),
         label_b: str = Argument(..., metavar="TO"),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Decisions, relationships and nodes added, removed and modified from FROM to TO."""
    from ..decisions.checkpoints import Checkpoints

    graph = open_graph(ctx, graph_name)
    result = Checkpoints().diff(graph, label_a, label_b)

    def human(r: dict[str, Any]) -> None:
        changes = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["summary"].items() if v)
        out.print(f"{r['from']} -> {r['to']}: {changes or 'no changes'}", markup=False)
        for d in r["decisions_added"]:
            out.print(f"  + decision {d['decision_id']} [{d['category']}] {d['scenario']} -> {d['outcome']}",
                      markup=False)
        for d in r["decisions_removed"]:
            out.print(f"  - decision {d['decision_id']} [{d['category']}] {d['scenario']}", markup=False)
        for d in r["decisions_modified"]:
            out.print(f"  ~ decision {d['decision_id']}: {d['previous']['outcome']} -> {d['outcome']}", markup=False)

    emit(result, json_out, human)
