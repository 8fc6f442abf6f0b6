"""The decision tools (seed 003: DecisionRecorder, CausalChainAnalyzer, PolicyEngine) as MCP tool specs.

They work on the workspace graph, ``ContextGraph(workspace=ws)`` (namespace ``graph:default``), where
``AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True)`` records decisions too.
Results are what the Python calls return (``Decision.to_dict()`` without the two embedding fields).

Access: the decision services check and audit every call under ``graph:default`` for the session's principal
(finding precedents and walking causal chains need ``read``; recording and checking compliance, which is
recorded on the decision, need ``write``), and return only what the principal sees; the tools pass the
principal on.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Field

from ..decisions.causal import CausalChainAnalyzer
from ..decisions.models import Decision
from ..decisions.policy import PolicyEngine
from ..decisions.recorder import DecisionRecorder
from ..graph.context_graph import ContextGraph, workspace_graph
from .registry import CallContext, StrictArgs, ToolSpec, register_tools
from .schemas import ANY_JSON, BOOL, JSON_OBJECT, NUM, STR, STRINGS, array, free_json, nullable, obj

HIDDEN = ("reasoning_embedding", "node2vec_embedding")
DECISION_ID = Field(min_length=1, max_length=300, description="A decision id as record_decision or "
                    "find_precedents returned.")
Name = Annotated[str, Field(min_length=1, max_length=300)]


def open_graph(ctx: CallContext) -> ContextGraph:
    """The workspace graph acting as the session's principal."""
    return workspace_graph(ctx.ws, ctx.principal)


def decision_dict(d: Decision) -> dict[str, Any]:
    row = d.to_dict()
    for key in HIDDEN:
        row.pop(key, None)
    return row


class RecordArgs(StrictArgs):
    category: str = Field(min_length=1, max_length=300, description="The kind of decision, e.g. refund_approval.")
    scenario: str = Field(min_length=1, max_length=100_000, description="The situation that was decided: what "
                          "find_precedents matches later decisions against.")
    reasoning: str = Field(max_length=100_000, description="Why this outcome (may be empty).")
    outcome: str = Field(min_length=1, max_length=10_000, description="What was decided, e.g. approved.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the decision maker was, 0.0 to 1.0.")
    entities: Optional[list[Name]] = Field(None, max_length=1000, description="Names of the entities involved "
                                          "(customers, products, ...); linked in the graph.")
    decision_maker: Optional[str] = Field(None, max_length=300, description="Who or what decided.")
    caused_by: Optional[list[Name]] = Field(None, max_length=1000, description="Ids of earlier decisions that "
                                           "led to this one (causal links; they must exist).")
    metadata: Optional[free_json(100)] = Field(None, description="Free-form JSON facts about the decision; policy "
                                               "rules can require keys here.")


class PrecedentArgs(StrictArgs):
    scenario: str = Field(min_length=1, max_length=100_000, description="The situation you are deciding now.")
    category: Optional[str] = Field(None, min_length=1, max_length=300, description="Only decisions of this "
                                    "category.")
    limit: int = Field(5, ge=1, le=100, description="At most this many precedents, best first.")


class ChainArgs(StrictArgs):
    decision_id: str = DECISION_ID
    direction: Literal["upstream", "downstream"] = Field("upstream", description="upstream = its causes, "
                                                         "downstream = its effects.")
    max_depth: int = Field(5, ge=0, le=100, description="Follow causal links at most this many steps.")


class ComplianceArgs(StrictArgs):
    decision_id: str = DECISION_ID
    policy_id: str = Field(min_length=1, max_length=300, description="The policy to check against.")


def _record(ctx: CallContext, a: RecordArgs) -> dict[str, Any]:
    graph = open_graph(ctx)
    did = DecisionRecorder(graph).record_decision(
        a.category, a.scenario, a.reasoning, a.outcome, a.confidence, entities=a.entities,
        decision_maker=a.decision_maker or "", caused_by=a.caused_by, metadata=a.metadata)
    return {"decision_id": did, "graph": graph.namespace}


def _precedents(ctx: CallContext, a: PrecedentArgs) -> dict[str, Any]:
    found = DecisionRecorder(open_graph(ctx)).find_precedents(a.scenario, category=a.category, limit=a.limit)
    return {"precedents": [decision_dict(d) for d in found]}


def _chain(ctx: CallContext, a: ChainArgs) -> dict[str, Any]:
    chain = CausalChainAnalyzer(open_graph(ctx)).get_causal_chain(a.decision_id, a.direction, a.max_depth)
    return {"decision_id": a.decision_id, "direction": a.direction, "chain": [decision_dict(d) for d in chain]}


def _compliance(ctx: CallContext, a: ComplianceArgs) -> dict[str, Any]:
    engine = PolicyEngine(graph_store=open_graph(ctx))
    return engine.check_compliance(a.decision_id, a.policy_id).to_dict()


DECISION = obj({"decision_id": STR, "category": STR, "scenario": STR, "reasoning": STR, "outcome": STR,
                "confidence": NUM, "timestamp": STR, "decision_maker": STR, "valid_from": nullable(STR),
                "valid_until": nullable(STR), "metadata": JSON_OBJECT})
RECORD_OUT = obj({"decision_id": STR, "graph": STR})
PRECEDENTS_OUT = obj({"precedents": array(DECISION)})
CHAIN_OUT = obj({"decision_id": STR, "direction": STR, "chain": array(DECISION)})
COMPLIANCE_OUT = obj({"policy_id": STR, "policy_version": STR, "decision_id": STR, "compliant": BOOL, "passed": BOOL,
                      "exception_id": nullable(STR), "checked_rules": STRINGS,
                      "violations": array(obj({"rule": STR, "expected": ANY_JSON, "actual": ANY_JSON,
                                               "message": STR}))})


def decision_tools() -> list[ToolSpec]:
    return [
        ToolSpec("record_decision",
                 "Record a decision you (or someone) made, with its scenario, reasoning, outcome and confidence, so "
                 "later decisions can follow it as a precedent and audits can explain it. Name earlier decisions "
                 "that led to it in caused_by. Returns the decision_id.",
                 RecordArgs, _record, RECORD_OUT, read_only=False, title="Record a decision"),
        ToolSpec("find_precedents",
                 "Before deciding, find past decisions made in similar scenarios (by meaning, keywords and causal "
                 "neighbours), best first, each with outcome, reasoning and metadata.similarity. Follow them for "
                 "consistency or say why you deviate.",
                 PrecedentArgs, _precedents, PRECEDENTS_OUT, title="Find precedents"),
        ToolSpec("get_causal_chain",
                 "Explain a decision by its recorded causes (direction=upstream) or show what it led to "
                 "(downstream), nearest first; each entry's metadata has causal_distance and the path of ids. "
                 "Only recorded causal links count.",
                 ChainArgs, _chain, CHAIN_OUT, title="Causal chain"),
        ToolSpec("check_compliance",
                 "Check a recorded decision against a policy's current rules: compliant or not, which rules were "
                 "checked, each violation's reason, and a recorded exception if one excuses it. The check is "
                 "recorded on the decision and in the audit log.",
                 ComplianceArgs, _compliance, COMPLIANCE_OUT, read_only=False, title="Check compliance"),
    ]


register_tools("decisions", decision_tools)
