"""``workspace_reasoning``: the reasoning service over a workspace, as the doors use it.

The MCP tool ``get_context`` and the CLI's ``agentcontext context`` both read the workspace's default memory
(``memory:default``), the workspace graph (``graph:default``, with the decisions recorded there) and every
knowledge pack, acting as one principal. This builds that ``ReasoningService`` once for both, so neither
interface imports the other. It sits above memory and retrieval (which ``reasoning/`` may not import), in the
reasoning service's room.
"""
from __future__ import annotations

from . import access
from .decisions.recorder import DecisionRecorder
from .engine import rerank as reranking
from .engine.retrieval_config import RetrievalConfig
from .graph.context_graph import workspace_graph
from .memory import AgentMemory
from .reasoning.service import ReasoningService
from .retrieval import ContextRetriever
from .workspace import Workspace


def workspace_reasoning(ws: Workspace, principal: str | None) -> ReasoningService:
    """The reasoning service over a workspace's default memory, its graph (with its decisions) and its packs,
    acting as ``principal``: what ``get_context`` and ``agentcontext context`` read. One ``RetrievalConfig``
    (the retriever does not expand: the cited context walks the graph itself) is handed to all three."""
    config = RetrievalConfig(graph_expansion=False, rerank=reranking.enabled(None))
    memory = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                         actor=access.effective_principal(ws, principal), config=config)
    graph = workspace_graph(ws)
    return ReasoningService(ContextRetriever(memory_store=memory, config=config), graph=graph, workspace=ws,
                            decisions=DecisionRecorder(graph), principal=principal, config=config)
