"""The decision operations (seed 003: DecisionRecorder, CausalChainAnalyzer, PolicyEngine), declared once for every
door, on the workspace graph (``graph:default``; the CLI's ``--graph`` names another), where
``AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True)`` records decisions too.
Results are what the Python calls return (``Decision.to_dict()`` without the two embedding fields).

Access: the decision services check and audit every call for the caller's principal (finding precedents and walking
causal chains need ``read``; recording and checking compliance, which is recorded on the decision, need ``write``),
and return only what the principal sees; the operations pass the principal on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from pydantic import Field
from typing_extensions import TypedDict

from ..text import parse_pairs
from .base import Args, Caller, Cli, Operation, declare
from .types import AnyJson, JsonObject, free_json

if TYPE_CHECKING:  # the graph loads when an operation runs, not when a door lists them
    from ..graph.context_graph import ContextGraph

DECISION_ID = Field(min_length=1, max_length=300, description="A decision id as record_decision or "
                    "find_precedents returned.")
Name = Annotated[str, Field(min_length=1, max_length=300)]


def open_graph(ctx: Caller) -> ContextGraph:
    """The caller's graph (the workspace graph unless the CLI named another), acting as the caller's principal."""
    from ..graph.context_graph import workspace_graph

    return workspace_graph(ctx.ws, ctx.principal, name=ctx.graph)


class RecordArgs(Args):
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


class PrecedentArgs(Args):
    scenario: str = Field(min_length=1, max_length=100_000, description="The situation you are deciding now.")
    category: Optional[str] = Field(None, min_length=1, max_length=300, description="Only decisions of this "
                                    "category.")
    limit: int = Field(5, ge=1, le=100, description="At most this many precedents, best first.")


class ChainArgs(Args):
    decision_id: str = DECISION_ID
    direction: Literal["upstream", "downstream"] = Field("upstream", description="upstream = its causes, "
                                                         "downstream = its effects.")
    max_depth: int = Field(5, ge=0, le=100, description="Follow causal links at most this many steps.")


class ComplianceArgs(Args):
    decision_id: str = DECISION_ID
    policy_id: str = Field(min_length=1, max_length=300, description="The policy to check against.")


def _record(ctx: Caller, a: RecordArgs) -> dict[str, Any]:
    from ..decisions.recorder import DecisionRecorder

    graph = open_graph(ctx)
    did = DecisionRecorder(graph).record_decision(
        a.category, a.scenario, a.reasoning, a.outcome, a.confidence, entities=a.entities,
        decision_maker=a.decision_maker or "", caused_by=a.caused_by, metadata=a.metadata)
    return {"decision_id": did, "graph": graph.namespace}


def _precedents(ctx: Caller, a: PrecedentArgs) -> dict[str, Any]:
    from ..decisions.models import decision_data
    from ..decisions.recorder import DecisionRecorder

    found = DecisionRecorder(open_graph(ctx)).find_precedents(a.scenario, category=a.category, limit=a.limit)
    return {"precedents": [decision_data(d) for d in found]}


def _chain(ctx: Caller, a: ChainArgs) -> dict[str, Any]:
    from ..decisions.causal import CausalChainAnalyzer
    from ..decisions.models import decision_data

    chain = CausalChainAnalyzer(open_graph(ctx)).get_causal_chain(a.decision_id, a.direction, a.max_depth)
    return {"decision_id": a.decision_id, "direction": a.direction, "chain": [decision_data(d) for d in chain]}


def _compliance(ctx: Caller, a: ComplianceArgs) -> dict[str, Any]:
    from ..decisions.policy import PolicyEngine

    return PolicyEngine(graph_store=open_graph(ctx)).check_compliance(a.decision_id, a.policy_id).to_dict()


class Decision(TypedDict):
    decision_id: str
    category: str
    scenario: str
    reasoning: str
    outcome: str
    confidence: float
    timestamp: str
    decision_maker: str
    valid_from: Optional[str]
    valid_until: Optional[str]
    metadata: JsonObject


class RecordOut(TypedDict):
    decision_id: str
    graph: str


class PrecedentsOut(TypedDict):
    precedents: list[Decision]


class ChainOut(TypedDict):
    decision_id: str
    direction: str
    chain: list[Decision]


class Violation(TypedDict):
    rule: str
    expected: AnyJson
    actual: AnyJson
    message: str


class ComplianceOut(TypedDict):
    policy_id: str
    policy_version: str
    decision_id: str
    compliant: bool
    passed: bool
    exception_id: Optional[str]
    checked_rules: list[str]
    violations: list[Violation]


def _record_cli(values: dict[str, Any]) -> dict[str, Any]:
    metadata = parse_pairs(values.pop("meta", None), "--meta")
    return {**values, "metadata": metadata or None}


def _verdict(result: dict[str, Any]) -> int:
    """``policy check`` exits 1 when the decision violates the policy and no exception excuses it."""
    return 0 if result["compliant"] or result.get("exception_id") else 1


RECORD = Operation(
    "record_decision", "Record a decision",
    "Record a decision you (or someone) made, with its scenario, reasoning, outcome and confidence, so later "
    "decisions can follow it as a precedent and audits can explain it. Name earlier decisions that led to it in "
    "caused_by. Returns the decision_id.",
    RecordArgs, RecordOut, _record, read_only=False,
    cli=Cli(("decision", "record"), args=("category", "scenario"),
            flags={"entities": ("--entity",), "decision_maker": ("--maker",), "caused_by": ("--caused-by",)},
            help={"category": "The kind of decision, e.g. refund_approval.",
                  "scenario": "The situation that was decided (what precedents match).",
                  "confidence": "0.0 to 1.0.", "reasoning": "Why this outcome.",
                  "entities": "An entity involved; repeat.",
                  "caused_by": "Id of an earlier decision that led to this one; repeat."},
            extra={"meta": (("--meta",), "Metadata KEY=VALUE (VALUE read as JSON when it parses); repeat.", True)},
            prepare=_record_cli, defaults={"reasoning": ""}, graph=True),
    skips={"web": "the console shows and checks decisions; agents and people record them over MCP, the CLI or "
                  "Python"})
PRECEDENTS = Operation(
    "find_precedents", "Find precedents",
    "Before deciding, find past decisions made in similar scenarios (by meaning, keywords and causal neighbours), "
    "best first, each with outcome, reasoning and metadata.similarity. Follow them for consistency or say why you "
    "deviate.",
    PrecedentArgs, PrecedentsOut, _precedents,
    cli=Cli(("decision", "precedents"), args=("scenario",), help={"limit": "At most this many, best first."},
            graph=True))
CHAIN = Operation(
    "get_causal_chain", "Causal chain",
    "Explain a decision by its recorded causes (direction=upstream) or show what it led to (downstream), nearest "
    "first; each entry's metadata has causal_distance and the path of ids. Only recorded causal links count.",
    ChainArgs, ChainOut, _chain,
    cli=Cli(("decision", "chain"), args=("decision_id",), metavars={"decision_id": "DECISION_ID"},
            help={"direction": "upstream (its causes) or downstream (its effects)."}, graph=True))
COMPLIANCE = Operation(
    "check_compliance", "Check compliance",
    "Check a recorded decision against a policy's current rules: compliant or not, which rules were checked, each "
    "violation's reason, and a recorded exception if one excuses it. The check is recorded on the decision and in "
    "the audit log.",
    ComplianceArgs, ComplianceOut, _compliance, read_only=False,
    cli=Cli(("policy", "check"), args=("decision_id", "policy_id"),
            metavars={"decision_id": "DECISION_ID", "policy_id": "POLICY_ID"}, graph=True, exit_code=_verdict))

MCP_TOOLS = [RECORD, PRECEDENTS, CHAIN, COMPLIANCE]
declare(*MCP_TOOLS)
