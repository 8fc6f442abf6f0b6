"""The graph engine: ContextGraph, traversal, analytics, persistence, cross-graph links."""
from __future__ import annotations

from .context_graph import ContextGraph

__all__ = ["ContextGraph"]
