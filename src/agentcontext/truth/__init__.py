"""Truth maintenance: supports, rules, versioned snapshots, and the retrieval filter."""
from __future__ import annotations

from .filter import TruthMaintenanceContextFilter
from .session import FactSupport, Rule, TruthMaintenanceSession, TruthSnapshot

__all__ = ["FactSupport", "Rule", "TruthMaintenanceSession", "TruthSnapshot", "TruthMaintenanceContextFilter"]
