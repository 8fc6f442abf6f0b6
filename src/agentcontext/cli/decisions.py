"""``agentcontext decision ...``: record decisions, find precedents, walk causal chains, explain a decision.

The decision services check and audit every call for the acting principal, as for the MCP tools: recording
needs ``write`` on ``graph:<name>``, everything else ``read``. Results are what the MCP tools return
(decisions without their embeddings).
"""
from __future__ import annotations

from typing import Any, Optional

import typer

from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out, parse_pairs

decision_app = typer.Typer(help="Decisions: record them, find precedents, walk causal chains, explain one.",
                           no_args_is_help=True)


def _print_decisions(rows: list[dict[str, Any]], empty: str) -> None:
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


@decision_app.command("record")
def record(ctx: typer.Context, category: str = typer.Argument(..., help="The kind of decision, e.g. "
                                                             "refund_approval."),
           scenario: str = typer.Argument(..., help="The situation that was decided (what precedents match)."),
           outcome: str = typer.Option(..., "--outcome", help="What was decided, e.g. approved."),
           confidence: float = typer.Option(..., "--confidence", min=0.0, max=1.0, help="0.0 to 1.0."),
           reasoning: str = typer.Option("", "--reasoning", help="Why this outcome."),
           entity: Optional[list[str]] = typer.Option(None, "--entity", help="An entity involved; repeat."),
           maker: str = typer.Option("", "--maker", help="Who or what decided."),
           caused_by: Optional[list[str]] = typer.Option(None, "--caused-by", help="Id of an earlier decision "
                                                         "that led to this one; repeat."),
           meta: Optional[list[str]] = typer.Option(None, "--meta", help="Metadata KEY=VALUE (VALUE read as "
                                                    "JSON when it parses); repeat."),
           graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Record a decision; prints its id (as the MCP tool record_decision)."""
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx, graph_name)
    did = DecisionRecorder(graph).record_decision(
        category, scenario, reasoning, outcome, confidence, entities=entity, decision_maker=maker,
        caused_by=caused_by, metadata=parse_pairs(meta, "--meta"))
    emit({"decision_id": did, "graph": graph.namespace}, json_out, lambda d: out.print(d["decision_id"]))


@decision_app.command("show")
def show(ctx: typer.Context, decision_id: str = typer.Argument(..., metavar="DECISION_ID"),
         as_of: Optional[str] = typer.Option(None, "--as-of", help="The decision as it stood then (ISO time)."),
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
def list_cmd(ctx: typer.Context, category: Optional[str] = typer.Option(None, "--category", help="Only this "
                                                                        "category."),
             limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many, oldest first."),
             graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Recorded decisions, oldest first."""
    from ..decisions.models import decision_data
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx, graph_name)
    rows = [decision_data(d) for d in DecisionRecorder(graph).list_decisions(category, limit)]
    emit({"decisions": rows}, json_out, lambda r: _print_decisions(r["decisions"], "no decisions"))


@decision_app.command("precedents")
def precedents(ctx: typer.Context, scenario: str = typer.Argument(..., help="The situation you are deciding now."),
               category: Optional[str] = typer.Option(None, "--category", help="Only decisions of this category."),
               limit: int = typer.Option(5, "--limit", min=1, max=100, help="At most this many, best first."),
               graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Past decisions made in similar scenarios, best first (as the MCP tool find_precedents)."""
    from ..decisions.models import decision_data
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx, graph_name)
    found = DecisionRecorder(graph).find_precedents(scenario, category=category, limit=limit)
    emit({"precedents": [decision_data(d) for d in found]}, json_out,
         lambda r: _print_decisions(r["precedents"], "no precedents"))


@decision_app.command("chain")
def chain(ctx: typer.Context, decision_id: str = typer.Argument(..., metavar="DECISION_ID"),
          direction: str = typer.Option("upstream", "--direction", help="upstream (its causes) or downstream "
                                        "(its effects)."),
          max_depth: int = typer.Option(5, "--max-depth", min=0, max=100, help="Follow causal links at most this "
                                        "many steps."),
          graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """A decision's recorded causes or effects, nearest first (as the MCP tool get_causal_chain)."""
    from ..decisions.causal import CausalChainAnalyzer
    from ..decisions.models import decision_data

    graph = open_graph(ctx, graph_name)
    found = CausalChainAnalyzer(graph).get_causal_chain(decision_id, direction, max_depth)
    emit({"decision_id": decision_id, "direction": direction, "chain": [decision_data(d) for d in found]},
         json_out, lambda r: _print_decisions(r["chain"], f"no recorded {direction} decisions"))


@decision_app.command("explain")
def explain(ctx: typer.Context, decision_id: str = typer.Argument(..., metavar="DECISION_ID"),
            max_depth: int = typer.Option(10, "--max-depth", min=0, max=100, help="Causal depth to follow."),
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

