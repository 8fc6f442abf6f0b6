"""AgentContext decision methods (record_decision, find_precedents, causal chains, policies, checkpoints).

Decisions live in ``knowledge_graph``'s store. Recording needs ``decision_tracking=True`` and a
knowledge graph (``RuntimeError`` otherwise, as seed 003 states); reading needs the graph.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Sequence

from ..errors import ProcessingError
from .causal import CausalChainAnalyzer
from .checkpoints import Checkpoints
from .explain import trace_decision_explainability
from .models import Decision
from .policy import PolicyEngine
from .recorder import DecisionRecorder


class DecisionMethods:
    knowledge_graph: Any
    decision_tracking: bool
    proximity_weight: float

    def _init_decisions(self) -> None:
        self._checkpoints = Checkpoints()
        self._policy_engine: PolicyEngine | None = None

    # --- wiring ----------------------------------------------------------------------------
    def _graph_for_decisions(self, action: str, recording: bool = False) -> Any:
        if self.knowledge_graph is None:
            raise ProcessingError(f"{action} needs a knowledge graph: construct AgentContext(knowledge_graph="
                                  "ContextGraph(), decision_tracking=True)", action=action)
        if recording and not self.decision_tracking:
            raise ProcessingError(f"{action} needs decision_tracking=True (and a knowledge_graph) on AgentContext",
                                  action=action)
        return self.knowledge_graph

    def _recorder(self, action: str, recording: bool = False) -> DecisionRecorder:
        return DecisionRecorder(self._graph_for_decisions(action, recording), actor=getattr(self, "principal", "")
                                or "")

    # --- decisions -------------------------------------------------------------------------
    def record_decision(self, category: str, scenario: str, reasoning: str, outcome: str, confidence: float,
                        entities: Sequence[str] | None = None, decision_maker: str = "",
                        valid_from: str | datetime | None = None, valid_until: str | datetime | None = None,
                        **kwargs: Any) -> str:
        """Record a decision (see DecisionRecorder.record_decision for caused_by=, informed_by=, policies=)."""
        return self._recorder("record_decision", recording=True).record_decision(
            category, scenario, reasoning, outcome, confidence, entities, decision_maker, valid_from, valid_until,
            **kwargs)

    def record_decisions(self, items: Iterable[dict[str, Any] | Decision]) -> list[str]:
        """Record many decisions at once (embedded in batches)."""
        return self._recorder("record_decisions", recording=True).record_decisions(items)

    def link_decisions(self, cause_id: str, effect_id: str, relationship: str = "caused", **kwargs: Any) -> str:
        """Say that one decision caused (or ``relationship="informed"``) another."""
        return self._recorder("link_decisions", recording=True).link_decisions(cause_id, effect_id, relationship,
                                                                              **kwargs)

    def get_decision(self, decision_id: str, **kwargs: Any) -> Decision:
        return self._recorder("get_decision").get_decision(decision_id, **kwargs)

    def find_precedents(self, scenario: str, category: str | None = None, limit: int = 5,
                        use_hybrid_search: bool = True, max_hops: int = 2, as_of: str | datetime | None = None,
                        proximity_weight: float | None = None, **kwargs: Any) -> list[Decision]:
        """Similar past decisions, best first (scores in each decision's ``metadata``)."""
        if proximity_weight is None and getattr(self, "proximity_weight", 0.0):
            proximity_weight = self.proximity_weight
        return self._recorder("find_precedents").find_precedents(
            scenario, category, limit, use_hybrid_search, max_hops, as_of, proximity_weight=proximity_weight,
            **kwargs)

    def query_decisions(self, query: str, max_hops: int = 2, use_hybrid_search: bool = True,
                        **kwargs: Any) -> list[Decision]:
        """Broad decision search: meaning, keywords, then causal neighbours."""
        return self._recorder("query_decisions").query_decisions(query, max_hops, use_hybrid_search, **kwargs)

    def get_causal_chain(self, decision_id: str, direction: str = "upstream", max_depth: int = 10) -> list[Decision]:
        """Upstream causes or downstream effects, each once, with ``metadata['causal_distance']``."""
        graph = self._graph_for_decisions("get_causal_chain")
        return CausalChainAnalyzer(graph).get_causal_chain(decision_id, direction, max_depth)

    def trace_decision_explainability(self, decision_id: str, max_depth: int = 10) -> dict[str, Any]:
        return trace_decision_explainability(self._graph_for_decisions("trace_decision_explainability"),
                                             decision_id, max_depth)

    def get_policy_engine(self) -> PolicyEngine:
        graph = self._graph_for_decisions("get_policy_engine")
        if self._policy_engine is None or self._policy_engine.graph is not graph:
            self._policy_engine = PolicyEngine(graph_store=graph)
        return self._policy_engine

    # --- checkpoints -----------------------------------------------------------------------
    def checkpoint(self, label: str) -> dict[str, Any]:
        """Snapshot the graph's decisions, nodes and relationships under ``label`` (held in memory)."""
        return self._checkpoints.take(self._graph_for_decisions("checkpoint"), label)

    def diff_checkpoints(self, label_a: str, label_b: str) -> dict[str, Any]:
        """decisions_/relationships_/nodes_ added, removed and modified from ``label_a`` to ``label_b``."""
        return self._checkpoints.diff(self._graph_for_decisions("diff_checkpoints"), label_a, label_b)

    def flush_checkpoint(self, label: str) -> dict[str, Any]:
        """Persist a checkpoint in the store, so it survives a restart and save/load."""
        return self._checkpoints.flush(self._graph_for_decisions("flush_checkpoint"), label)

    def list_checkpoints(self) -> list[str]:
        return self._checkpoints.labels(self._graph_for_decisions("list_checkpoints"))
