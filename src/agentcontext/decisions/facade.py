"""AgentContext decision methods (record_decision, find_precedents, causal chains, checkpoints...)."""
from __future__ import annotations


class DecisionMethods:
    def _init_decisions(self) -> None:
        pass
