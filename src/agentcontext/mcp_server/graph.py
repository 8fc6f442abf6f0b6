"""The read-only graph algorithm tools (issue 11 s4), ``predict_links`` and ``find_paths``: derived from their
declarations (``agentcontext.operations.graph``), which hold the argument models, output types, calls and help."""
from __future__ import annotations

from ..operations import graph
from .registry import register_tools, specs_for

register_tools("graph", lambda: specs_for(graph.MCP_TOOLS))
