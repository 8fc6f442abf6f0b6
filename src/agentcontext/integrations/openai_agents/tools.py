"""The knowledge and memory tools for an OpenAI Agents SDK ``Agent``: ``list_knowledge_packs``, ``search_knowledge``,
``read_knowledge_doc``, ``flash`` and ``recall_memory`` (``integrations.calls``), as the SDK's function tools.

``agentcontext_tools(workspace, principal=...)`` returns them bound to one workspace and principal:
``Agent(name=..., tools=agentcontext_tools(ws, principal="alice"))``. A call the principal may not make is refused
and audited by the service; by default the SDK hands the error's message to the model (its convention for a failing
tool), ``raise_errors=True`` lets it propagate out of ``Runner.run`` instead.
"""
from __future__ import annotations

from typing import Any

from agents import FunctionTool, function_tool

from ...errors import ValidationError
from ...workspace import Workspace
from ..calls import AgentCalls

NAMES = ("list_knowledge_packs", "search_knowledge", "read_knowledge_doc", "flash", "recall_memory")


def agentcontext_tools(workspace: Workspace, *, principal: str | None = None, memory_namespace: str = "default",
                       raise_errors: bool = False, names: tuple[str, ...] = NAMES) -> list[FunctionTool]:
    """Function tools over ``workspace`` acting as ``principal``; ``names`` picks some of ``NAMES``."""
    calls = AgentCalls(workspace, principal, memory_namespace)
    options: dict[str, Any] = {"failure_error_function": None} if raise_errors else {}
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        raise ValidationError(f"unknown tool names {unknown}; choose from {list(NAMES)}", names=unknown)
    return [function_tool(getattr(calls, name), **options) for name in names]
