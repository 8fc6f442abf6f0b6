"""``get_context``: derived from its declaration (``agentcontext.operations.context``), which holds the argument
model, output type, call and help. It reads what the session's principal may read; a store it may not read is named
in ``skipped``."""
from __future__ import annotations

from ..operations import context
from .registry import register_tools, specs_for

register_tools("context", lambda: specs_for(context.MCP_TOOLS))
