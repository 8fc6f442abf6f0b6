"""The graph service: ContextGraph and its parts (analytics, persistence, cross-graph links, conversations)."""
from __future__ import annotations

from .context_graph import ContextGraph

__all__ = ["ContextGraph"]
