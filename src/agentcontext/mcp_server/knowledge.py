"""The knowledge tools (seed 002), flash (seed 000) and the doc writers: derived from their declarations
(``agentcontext.operations.knowledge``), which hold the argument models, output types, calls and help."""
from __future__ import annotations

from ..operations import knowledge
from .registry import register_tools, specs_for

register_tools("knowledge", lambda: specs_for(knowledge.MCP_TOOLS))
