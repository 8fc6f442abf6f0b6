"""LangGraph inside agentcontext: a long-term memory store (``AgentContextStore``, a LangGraph ``BaseStore``) and
a checkpointer (``AgentContextSaver``, a ``BaseCheckpointSaver``) that keep their data in an agentcontext store
(SQLite or PostgreSQL) in one memory store, ``memory:<name>``: items as memories (recall finds them), checkpoints
and pending writes as its thread state; so grants, audit, erasure and ``agentcontext migrate`` cover them.

Install with ``pip install 'agentcontext[langgraph]'``; without LangGraph, importing a name from here raises
``DependencyMissingError`` naming the extra.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .. import require

__all__ = ["AgentContextStore", "AsyncAgentContextStore", "AgentContextSaver", "AsyncAgentContextSaver"]

_WHERE = {"AgentContextStore": "store", "AsyncAgentContextStore": "store",
          "AgentContextSaver": "saver", "AsyncAgentContextSaver": "aio"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    require("langgraph.store.base", extra="langgraph")
    require("langgraph.checkpoint.base", extra="langgraph")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)  # kept: a lazy export behind the extra
