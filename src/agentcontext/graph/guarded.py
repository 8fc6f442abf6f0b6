"""The workspace graph as a principal may use it: the access rule shared by the CLI, MCP and the web console.

The graph decisions, policies and entities live in is ``ContextGraph(workspace=ws)`` (namespace
``graph:default``), one per workspace. It is checked like a pack named by its namespace: reading needs
``read``, recording, checking compliance and erasing need ``write`` (``agentcontext grant bob 'graph:*' read``).
Denials are audited by ``access.require``.
"""
from __future__ import annotations

import threading
import weakref

from .. import access
from ..workspace import Workspace
from .context_graph import ContextGraph

_graphs: "weakref.WeakKeyDictionary[Workspace, ContextGraph]" = weakref.WeakKeyDictionary()
_graphs_lock = threading.Lock()


def workspace_graph(ws: Workspace) -> ContextGraph:
    """The workspace's default graph (one per workspace, reused across calls)."""
    with _graphs_lock:
        graph = _graphs.get(ws)
        if graph is None:
            graph = _graphs[ws] = ContextGraph(workspace=ws)
        return graph


def open_graph(ws: Workspace, principal: str | None, level: str, action: str, target: str = "") -> ContextGraph:
    """The workspace graph, after checking that ``principal`` holds ``level`` on ``graph:default``."""
    graph = workspace_graph(ws)
    access.require(ws, principal, graph.namespace, level, action, target)
    return graph
