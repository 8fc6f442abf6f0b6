"""Reasoning over the context.

- Seed 003's ``semantica.reasoning`` primitives: truth-maintenance sessions and rules (from ``truth/``).
- Grounded answers: ``ReasoningService`` (``context_for``, ``query_with_reasoning``) and the
  ``ContextBundle`` it builds; ``AgentContext`` and ``ContextRetriever`` delegate to it.
"""
from __future__ import annotations

from ..truth import FactSupport, Rule, TruthMaintenanceSession, TruthSnapshot
from .bundle import ContextBundle
from .service import ReasoningService
from .sources import Source

__all__ = ["ContextBundle", "FactSupport", "ReasoningService", "Rule", "Source", "TruthMaintenanceSession",
           "TruthSnapshot"]
