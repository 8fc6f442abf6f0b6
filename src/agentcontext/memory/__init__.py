"""Agent memory: memories as graph nodes, hybrid retrieval, retention, Markdown round trips."""
from __future__ import annotations

from .service import AgentMemory, parse_retention

__all__ = ["AgentMemory", "parse_retention"]
