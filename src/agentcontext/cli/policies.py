"""``agentcontext policy ...``: versioned policies, compliance checks and policy exceptions.

The policy engine checks and audits every call for the acting principal, as for MCP: adding a policy, checking
compliance (the check is recorded on the decision and in the audit log, as MCP's check_compliance) and
recording an exception need ``write`` on ``graph:<name>``; listing and showing need ``read``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import click

from .build import Argument, Group, Option
from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out, parse_pairs, table

if TYPE_CHECKING:
    from ..decisions.policy import PolicyEngine

policy_app = Group(help="Policies: add and list them, check decisions against them, record exceptions.",
                         no_args_is_help=True)


def _engine(ctx: click.Context, graph_name: str | None) -> PolicyEngine:
    from ..decisions.policy import PolicyEngine

    return PolicyEngine(graph_store=open_graph(ctx, graph_name))


def _policies_table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        out.print("no policies")
        return
    table(("policy_id", "version", "category", "name", "rules"),
          [{**r, "rules": ", ".join(f"{k}={v}" for k, v in r["rules"].items())} for r in rows])


@policy_app.command("add")
def add(ctx: click.Context, policy_id: str = Argument(..., metavar="POLICY_ID"),
        name: str = Option(..., "--name", help="A human name for the policy."),
        category: str = Option(..., "--category", help="The decision category it applies to (* for all)."),
        rule: Optional[list[str]] = Option(None, "--rule", help="A rule KEY=VALUE, VALUE read as JSON "
                                                 "(min_confidence=0.8, requires_reasoning=true, "
                                                 "allowed_outcomes='[\"approved\"]'); repeat."),
        description: str = Option("", "--description", help="What the policy is for."),
        version: str = Option("1.0", "--version", help="Its version label."),
        graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Add a policy; unknown rule keys and badly typed values are refused."""
    from ..decisions.models import Policy

    engine = _engine(ctx, graph_name)
    rules = parse_pairs(rule, "--rule")
    engine.add_policy(Policy(policy_id=policy_id, name=name, description=description, rules=rules,
                             category=category, version=version))
    emit(engine.get_policy(policy_id).to_dict(), json_out,
         lambda p: out.print(f"added policy {p['policy_id']} v{p['version']}", markup=False))


@policy_app.command("list")
def list_cmd(ctx: click.Context, category: Optional[str] = Option(None, "--category", help="Only the "
                                                                        "policies that apply to this category."),
             graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Current policies (the latest version of each)."""
    engine = _engine(ctx, graph_name)
    found = engine.get_applicable_policies(category) if category is not None else engine.list_policies()
    emit({"policies": [p.to_dict() for p in found]}, json_out, lambda r: _policies_table(r["policies"]))


@policy_app.command("show")
def show(ctx: click.Context, policy_id: str = Argument(..., metavar="POLICY_ID"),
         history: bool = Option(False, "--history", help="Every version, oldest first."),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """One policy's current version (or its whole history)."""
    engine = _engine(ctx, graph_name)
    rows = [p.to_dict() for p in engine.get_policy_history(policy_id)] if history else \
        [engine.get_policy(policy_id).to_dict()]
    emit({"policies": rows} if history else rows[0], json_out,
         lambda _: _policies_table(rows))


@policy_app.command("exceptions")
def exceptions(ctx: click.Context, decision_id: Optional[str] = Option(None, "--decision", help="Only "
                                                                             "this decision's."),
               policy_id: Optional[str] = Option(None, "--policy", help="Only exceptions to this policy."),
               graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Recorded policy exceptions (approved deviations), oldest first."""
    engine = _engine(ctx, graph_name)
    rows = [e.to_dict() for e in engine.get_exceptions(decision_id=decision_id, policy_id=policy_id)]
    emit({"exceptions": rows}, json_out, lambda r: table(
        ("exception_id", "decision_id", "policy_id", "approver", "reason"), r["exceptions"])
        if r["exceptions"] else out.print("no exceptions"))


@policy_app.command("except")
def record_exception(ctx: click.Context, decision_id: str = Argument(..., metavar="DECISION_ID"),
                     policy_id: str = Argument(..., metavar="POLICY_ID"),
                     reason: str = Option(..., "--reason", help="Why the deviation is allowed."),
                     approver: str = Option(..., "--approver", help="Who approved it."),
                     justification: str = Option("", "--justification", help="Longer justification."),
                     graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Record an approved exception to POLICY_ID for one decision (later checks report it)."""
    engine = _engine(ctx, graph_name)
    exc = engine.record_exception(decision_id, policy_id, reason=reason, approver=approver,
                                  justification=justification)
    emit(exc.to_dict(), json_out, lambda r: out.print(f"recorded {r['exception_id']}", markup=False))
