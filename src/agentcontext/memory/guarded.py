"""A workspace's memory store as a principal may use it: the access rule shared by the CLI and MCP.

A memory store is checked like a pack whose name is its namespace, ``memory:<name>``: reading needs
``read``, storing, forgetting and importing need ``write`` (``agentcontext grant alice 'memory:*' write``).
Denials are audited by ``access.require``; successful writes are audited with ``audit_write``.
"""
from __future__ import annotations

from typing import Any

from .. import access
from ..workspace import Workspace
from .service import AgentMemory


def open_memory(ws: Workspace, namespace: str = "default", principal: str | None = None, level: str = "read",
                action: str = "memory.read") -> AgentMemory:
    """The workspace's AgentMemory ``namespace`` (no eviction or expiry: limits are the application's policy),
    after checking that ``principal`` holds ``level`` on ``memory:<namespace>``."""
    mem = AgentMemory(workspace=ws, namespace=namespace, max_memory_size=None, retention_policy="unlimited",
                      actor=access.effective_principal(ws, principal))
    access.require(ws, principal, mem.namespace, level, action)
    return mem


def audit_write(ws: Workspace, principal: str | None, action: str, target: str, detail: dict[str, Any]) -> None:
    ws.store.append_audit(access.effective_principal(ws, principal), action, target, "ok", detail)
