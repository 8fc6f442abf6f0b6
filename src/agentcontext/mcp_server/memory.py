"""The memory tools (seed 003's AgentMemory) on the workspace's default memory store: derived from their
declarations (``agentcontext.operations.memory``), which hold the argument models, output types, calls and help.

Access: the memory service checks and audits every call (``memory:default``, read to retrieve and read, write to
store, edit and forget); the tools only pass the session's principal on.
"""
from __future__ import annotations

from ..operations import memory
from .registry import register_tools, specs_for

register_tools("memory", lambda: specs_for(memory.MCP_TOOLS))
