"""The knowledge tools as LangChain tools: ``list_knowledge_packs``, ``search_knowledge``, ``list_knowledge_neighbors``,
``read_knowledge_doc`` and ``flash`` (``integrations.calls``; ``recall_memory`` too on request), bound to one
workspace and principal: ``agentcontext_tools(ws, principal="alice")``. Each returns JSON text. A call the principal
may not make raises ``AccessDeniedError`` (audited by the service); LangChain's ``handle_tool_error`` can turn it into
the tool's answer instead, as for any tool."""
from __future__ import annotations

from langchain_core.tools import BaseTool, StructuredTool

from ...errors import ValidationError
from ...workspace import Workspace
from ..calls import AgentCalls, as_json

NAMES = ("list_knowledge_packs", "search_knowledge", "list_knowledge_neighbors", "read_knowledge_doc", "flash")
ALL = (*NAMES, "recall_memory")


def agentcontext_tools(workspace: Workspace, *, principal: str | None = None, memory_namespace: str = "default",
                       names: tuple[str, ...] = NAMES) -> list[BaseTool]:
    """LangChain tools over ``workspace`` acting as ``principal``; ``names`` picks some of ``ALL``."""
    unknown = sorted(set(names) - set(ALL))
    if unknown:
        raise ValidationError(f"unknown tool names {unknown}; choose from {list(ALL)}", names=unknown)
    calls = AgentCalls(workspace, principal, memory_namespace)
    return [StructuredTool.from_function(as_json(getattr(calls, name)), name=name,  # kept: tools named by the caller
                                         parse_docstring=True) for name in names]
