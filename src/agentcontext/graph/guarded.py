"""The workspace graph as a principal may use it: the access rule shared by the CLI, MCP and the web console.

The graph decisions, policies and entities live in is ``ContextGraph(workspace=ws)`` (namespace
``graph:default``), one per workspace; ``name=`` opens another graph of the workspace (``graph:<name>``,
seeing only its own nodes). A graph is checked like a pack named by its namespace: reading (neighbours,
paths, analytics, precedents, causal chains, explanations, policy and checkpoint listings) needs ``read``;
writing (nodes, edges, decisions, policies, exceptions, compliance checks, checkpoints) and erasing need
``write`` (``agentcontext grant bob 'graph:*' read``). Denials are audited by ``access.require``; successful
writes are audited with ``audit_write``.
"""
from __future__ import annotations

from typing import Any

from .. import access
from ..workspace import Workspace
from .context_graph import ContextGraph


def workspace_graph(ws: Workspace) -> ContextGraph:
    """The workspace's default graph (one per workspace, held by it and reused across calls)."""
    return ws.held("graph:default", lambda: ContextGraph(workspace=ws))


def graph_namespace(name: str | None) -> str:
    return f"graph:{name or 'default'}"


def open_graph(ws: Workspace, principal: str | None, level: str, action: str, target: str = "",
               name: str | None = None) -> ContextGraph:
    """The workspace graph (or the graph ``name``), after checking that ``principal`` holds ``level`` on
    ``graph:default`` (``graph:<name>``)."""
    access.require(ws, principal, graph_namespace(name), level, action, target)
    if name is None:
        return workspace_graph(ws)
    return ContextGraph(workspace=ws, name=name, actor=access.effective_principal(ws, principal))


def audit_write(ws: Workspace, principal: str | None, action: str, target: str, detail: dict[str, Any]) -> None:
    ws.store.append_audit(access.effective_principal(ws, principal), action, target, "ok", detail)
