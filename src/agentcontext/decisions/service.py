"""``DecisionService``: the decisions of an ``AgentContext`` over its knowledge graph.

Recording, precedents, causal chains, explainability, the policy engine and checkpoints, each
over the graph it is given (decisions live in the graph's store). Recording needs ``tracking``
(``AgentContext(decision_tracking=True)``) and a graph; reading needs the graph. Without them a
``ProcessingError`` (a ``RuntimeError``, as seed 003 states) says what to pass. Everything acts as the
service's ``principal`` (None = the owner), checked by the decision services it calls.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Sequence

from ..engine.proximity import check_weight
from ..engine.retrieval_config import RetrievalConfig
from ..errors import ProcessingError, refuse_unknown
from .causal import CausalChainAnalyzer
from .checkpoints import Checkpoints
from ..seams import Scope, principal_of
from .common import Target
from .explain import trace_decision_explainability
from .models import Decision
from .policy import PolicyEngine
from .recorder import DecisionRecorder


PRECEDENT_EXTRAS = ("entities", "policies", "min_similarity", "exclude", "structural", "node2vec")  # DecisionRecorder's


class DecisionService:
    """Decisions, policies and checkpoints over ``graph`` (which may be set later, e.g. by ``AgentContext.load``)."""

    @property
    def actor(self) -> str:
        """The older name of ``principal``, as audit rows spell who acted ("" for the owner)."""
        return self.principal or ""

    def __init__(self, graph: Target | None = None, tracking: bool = False, actor: str = "",
                 proximity_weight: float = 0.0, principal: str | None = None, scope: Scope | None = None,
                 config: RetrievalConfig | None = None) -> None:
        """``config`` (the facade's ``RetrievalConfig``) gives the proximity weight; else ``proximity_weight``."""
        self.graph = graph
        self.tracking = tracking
        self.principal = scope.principal if scope is not None else principal_of(principal, actor)
        self.config = config if config is not None else RetrievalConfig(proximity_weight=check_weight(proximity_weight))
        self.checkpoints = Checkpoints()
        self._policy_engine: PolicyEngine | None = None

    @property
    def proximity_weight(self) -> float:
        return self.config.proximity_weight

    def graph_for(self, action: str, recording: bool = False) -> Any:
        """The graph ``action`` works on, or a ProcessingError saying how to construct the context for it."""
        if self.graph is None:
            raise ProcessingError(f"{action} needs a knowledge graph: construct AgentContext(knowledge_graph="
                                  "ContextGraph(), decision_tracking=True)", action=action)
        if recording and not self.tracking:
            raise ProcessingError(f"{action} needs decision_tracking=True (and a knowledge_graph) on AgentContext",
                                  action=action)
        return self.graph

    def recorder(self, action: str, recording: bool = False) -> DecisionRecorder:
        return DecisionRecorder(self.graph_for(action, recording), actor=self.actor, principal=self.principal)

    # --- decisions -------------------------------------------------------------------------
    def record_decision(self, category: str, scenario: str, reasoning: str, outcome: str, confidence: float,
                        entities: Sequence[str] | None = None, decision_maker: str = "",
                        valid_from: str | datetime | None = None, valid_until: str | datetime | None = None,
                        **kwargs: Any) -> str:
        """Record a decision (see DecisionRecorder.record_decision for caused_by=, informed_by=, policies=)."""
        return self.recorder("record_decision", recording=True).record_decision(
            category, scenario, reasoning, outcome, confidence, entities, decision_maker, valid_from, valid_until,
            **kwargs)

    def record_decisions(self, items: Iterable[dict[str, Any] | Decision]) -> list[str]:
        return self.recorder("record_decisions", recording=True).record_decisions(items)

    def link_decisions(self, cause_id: str, effect_id: str, relationship: str = "caused", **kwargs: Any) -> str:
        return self.recorder("link_decisions", recording=True).link_decisions(cause_id, effect_id, relationship,
                                                                             **kwargs)

    def get_decision(self, decision_id: str, **kwargs: Any) -> Decision:
        return self.recorder("get_decision").get_decision(decision_id, **kwargs)

    def find_precedents(self, scenario: str, category: str | None = None, limit: int = 5,
                        use_hybrid_search: bool = True, max_hops: int = 2, as_of: str | datetime | None = None,
                        proximity_weight: float | None = None, **kwargs: Any) -> list[Decision]:
        """Similar past decisions, best first (scores in each decision's ``metadata``); the service's
        ``proximity_weight`` applies when the call names none."""
        refuse_unknown("find_precedents", set(kwargs) - set(PRECEDENT_EXTRAS),
                       ("scenario", "category", "limit", "use_hybrid_search", "max_hops", "as_of", "proximity_weight",
                        *PRECEDENT_EXTRAS))
        config = self.config.override(proximity_weight=proximity_weight)
        found = self.recorder("find_precedents").find_precedents(
            scenario, category, limit, use_hybrid_search, max_hops, as_of,
            proximity_weight=config.proximity_weight or None, **kwargs)
        return _echoed(found, config, max_hops)

    def query_decisions(self, query: str, max_hops: int = 2, use_hybrid_search: bool = True,
                        **kwargs: Any) -> list[Decision]:
        found = self.recorder("query_decisions").query_decisions(query, max_hops, use_hybrid_search, **kwargs)
        return _echoed(found, self.config, max_hops)

    def get_causal_chain(self, decision_id: str, direction: str = "upstream", max_depth: int = 10) -> list[Decision]:
        graph = self.graph_for("get_causal_chain")
        return CausalChainAnalyzer(graph, principal=self.principal).get_causal_chain(decision_id, direction, max_depth)

    def trace_decision_explainability(self, decision_id: str, max_depth: int = 10) -> dict[str, Any]:
        return trace_decision_explainability(self.graph_for("trace_decision_explainability"), decision_id,
                                             max_depth, principal=self.principal)

    def get_policy_engine(self) -> PolicyEngine:
        """The policy engine over the current graph (the same instance while the graph stays the same)."""
        graph = self.graph_for("get_policy_engine")
        if self._policy_engine is None or self._policy_engine.graph is not graph:
            self._policy_engine = PolicyEngine(graph_store=graph, principal=self.principal)
        return self._policy_engine

    # --- checkpoints -----------------------------------------------------------------------
    def checkpoint(self, label: str) -> dict[str, Any]:
        return self.checkpoints.take(self.graph_for("checkpoint"), label)

    def diff_checkpoints(self, label_a: str, label_b: str) -> dict[str, Any]:
        return self.checkpoints.diff(self.graph_for("diff_checkpoints"), label_a, label_b)

    def flush_checkpoint(self, label: str) -> dict[str, Any]:
        return self.checkpoints.flush(self.graph_for("flush_checkpoint"), label)

    def list_checkpoints(self) -> list[str]:
        return self.checkpoints.labels(self.graph_for("list_checkpoints"))


def _echoed(found: list[Decision], config: RetrievalConfig, hops: int) -> list[Decision]:
    """``found`` with the configuration that ran in each one's ``metadata["config"]`` (``hops``: the causal hops
    the search walked)."""
    echo = dict(config.echo, hops=hops)
    for d in found:
        d.metadata["config"] = echo
    return found
