"""The knowledge and memory tools for an OpenAI Agents SDK ``Agent``: ``list_knowledge_packs``, ``search_knowledge``,
``read_knowledge_doc``, ``flash`` and ``recall_memory`` (``integrations.calls``), as the SDK's function tools.

``agentcontext_tools(workspace, principal=...)`` returns them bound to one workspace and principal:
``Agent(name=..., tools=agentcontext_tools(ws, principal="alice"))``. A call the principal may not make is refused
and audited by the service; by default the error's type and message go to the model as the tool's output (the SDK's
convention for a failing tool; our messages say what to do; other errors get the SDK's generic text).
``raise_errors=True`` makes ``Runner.run`` raise instead (the SDK's ``UserError``, our error its ``__cause__``).
"""
from __future__ import annotations

from typing import Any

from agents import FunctionTool, RunContextWrapper, default_tool_error_function, function_tool

from ...errors import AgentContextError, ValidationError
from ...workspace import Workspace
from ..calls import AgentCalls, as_json

NAMES = ("list_knowledge_packs", "search_knowledge", "read_knowledge_doc", "flash", "recall_memory")


def agentcontext_tools(workspace: Workspace, *, principal: str | None = None, memory_namespace: str = "default",
                       raise_errors: bool = False, names: tuple[str, ...] = NAMES) -> list[FunctionTool]:
    """Function tools over ``workspace`` acting as ``principal``; ``names`` picks some of ``NAMES``."""
    calls = AgentCalls(workspace, principal, memory_namespace)
    options: dict[str, Any] = {"failure_error_function": None if raise_errors else tell_the_model}
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        raise ValidationError(f"unknown tool names {unknown}; choose from {list(NAMES)}", names=unknown)
    return [function_tool(as_json(getattr(calls, name)), **options)  # kept: the tools the caller names, by name
            for name in names]


def tell_the_model(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """A failing tool's output: our error's type and message; any other error as the SDK words it."""
    if isinstance(error, AgentContextError):
        return f"{type(error).__name__}: {error}"
    return default_tool_error_function(ctx, error)

