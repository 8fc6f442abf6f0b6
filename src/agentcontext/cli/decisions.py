"""``agentcontext decision ...``: record decisions, find precedents, walk causal chains, explain a decision.

The decision services check and audit every call for the acting principal, as for the MCP tools: recording
needs ``write`` on ``graph:<name>``, everything else ``read``. Results are what the MCP tools return
(decisions without their embeddings).
"""
from __future__ import annotations

from typing import Any, Optional

import click

from .build import Argument, Group, Option
from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out
from .output import print_decisions

decision_app = Group(help="Decisions: record them, find precedents, walk causal chains, explain one.",
                           no_args_is_help=True)


@decision_app.command("show")
def show(ctx: click.Context, decision_id: str = Argument(..., metavar="DECISION_ID"),
         as_of: Optional[str] = Option(None, "--as-of", help="The decision as it stood then (ISO time)."),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """One decision: category, scenario, reasoning, outcome, confidence, metadata."""
    from ..decisions.models import decision_data
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx, graph_name)
    d = decision_data(DecisionRecorder(graph).get_decision(decision_id, as_of=as_of))
    emit(d, json_out, lambda r: out.print(f"{r['decision_id']}  [{r['category']}] {r['scenario']}\n"
                                          f"outcome: {r['outcome']} (confidence {r['confidence']:.2f})\n"
                                          f"reasoning: {r['reasoning']}\nmetadata: {r['metadata']}", markup=False))


@decision_app.command("list")
def list_cmd(ctx: click.Context, category: Optional[str] = Option(None, "--category", help="Only this "
                                                                        "category."),
             limit: Optional[int] = Option(None, "--limit", min=1, help="At most this many, oldest first."),
             graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Recorded decisions, oldest first."""
    from ..decisions.models import decision_data
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx, graph_name)
    rows = [decision_data(d) for d in DecisionRecorder(graph).list_decisions(category, limit)]
    emit({"decisions": rows}, json_out, lambda r: print_decisions(r["decisions"], "no decisions"))


@decision_app.command("explain")
def explain(ctx: click.Context, decision_id: str = Argument(..., metavar="DECISION_ID"),
            max_depth: int = Option(10, "--max-depth", min=0, max=100, help="Causal depth to follow."),
            graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Everything a decision is connected to: causes, effects, entities, policies, exceptions, approvals,
    precedents and its audit trail, each with its relationship path."""
    from ..decisions.explain import trace_decision_explainability

    graph = open_graph(ctx, graph_name)
    report = trace_decision_explainability(graph, decision_id, max_depth)

    def human(r: dict[str, Any]) -> None:
        d = r["decision"]
        out.print(f"{d['decision_id']}  [{d['category']}] {d['scenario']} -> {d['outcome']}", markup=False)
        for group in ("causes", "effects", "entities", "policies_applied", "exceptions", "approvals", "precedents"):
            for item in r[group]:
                label = item.get("decision_id") or item.get("entity_id") or item.get("policy_id") \
                    or item.get("exception_id") or item.get("approval_id")
                out.print(f"  {group}: {label}  via {' -> '.join(item['relationships'])}", markup=False)
        out.print(f"{r['total_connections']} connections, {len(r.get('audit_trail', []))} audit entries")

    emit(report, json_out, human)

