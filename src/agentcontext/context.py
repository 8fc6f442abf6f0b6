"""``AgentContext``: the facade that wires memory, graph and decisions over one workspace.

The methods live in mixins next to the service they call (``memory/facade.py``,
``graph/facade.py``, ``decisions/facade.py``); this file only holds the constructor.
"""
from __future__ import annotations

from typing import Any

from .decisions.facade import DecisionMethods
from .graph.facade import GraphMethods
from .memory.facade import MemoryMethods


class AgentContext(MemoryMethods, GraphMethods, DecisionMethods):
    """Memory, retrieval, decisions, graph traversal and checkpoints behind one API (seed 003)."""

    def __init__(
        self,
        vector_store: Any = None,
        knowledge_graph: Any = None,
        decision_tracking: bool = False,
        retention_days: int | None = 30,
        max_memories: int = 10000,
        graph_expansion: bool = True,
        max_expansion_hops: int = 2,
        hybrid_alpha: float = 0.5,
        advanced_analytics: bool = True,
        kg_algorithms: bool = True,
        proximity_weight: float = 0.0,
        principal: str | None = None,
        **options: Any,
    ) -> None:
        self.knowledge_graph = knowledge_graph
        self.decision_tracking = decision_tracking
        self.retention_days = retention_days
        self.max_memories = max_memories
        self.graph_expansion = graph_expansion
        self.max_expansion_hops = max_expansion_hops
        self.hybrid_alpha = hybrid_alpha
        self.advanced_analytics = advanced_analytics
        self.kg_algorithms = kg_algorithms
        self.proximity_weight = proximity_weight
        self.principal = principal
        self.options = options
        self._init_memory(vector_store)
        self._init_graph()
        self._init_decisions()
