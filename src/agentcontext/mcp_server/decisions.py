"""The decision tools (seed 003: DecisionRecorder, CausalChainAnalyzer, PolicyEngine): derived from their
declarations (``agentcontext.operations.decisions``), which hold the argument models, output types, calls and help.

Access: the decision services check and audit every call under ``graph:default`` for the session's principal; the
tools only pass the principal on.
"""
from __future__ import annotations

from ..operations import decisions
from .registry import register_tools, specs_for

register_tools("decisions", lambda: specs_for(decisions.MCP_TOOLS))
