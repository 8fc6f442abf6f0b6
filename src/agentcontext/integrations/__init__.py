"""Adapters that put agentcontext inside the frameworks agents are built with (LangGraph, the OpenAI Agents SDK,
LlamaIndex, LangChain): thin doors over the services (memory, retrieval, access, erasure, the store).

Each framework is an optional extra, imported lazily: the core never imports this package, and an adapter whose
framework is missing raises ``DependencyMissingError`` naming the extra to install (``require``).
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import DependencyMissingError


def require(module: str, *, extra: str) -> ModuleType:
    """Import ``module`` (e.g. ``"langgraph"``) or raise ``DependencyMissingError`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise DependencyMissingError(
            f"this adapter needs {module}, which is not installed: pip install 'agentcontext[{extra}]'",
            module=module, extra=extra) from exc
