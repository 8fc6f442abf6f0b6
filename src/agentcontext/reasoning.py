"""Reasoning primitives (seed 003's ``semantica.reasoning``): truth-maintenance sessions and rules."""
from __future__ import annotations

from .truth import FactSupport, Rule, TruthMaintenanceSession, TruthSnapshot

__all__ = ["FactSupport", "Rule", "TruthMaintenanceSession", "TruthSnapshot"]
