"""agentcontext inside the OpenAI Agents SDK: ``AgentContextSession`` (the SDK's ``Session`` protocol over our
memory) and ``agentcontext_tools`` (knowledge and memory function tools). Needs the extra:
``pip install 'agentcontext[openai-agents]'``."""
from __future__ import annotations

from .. import require

require("agents", extra="openai-agents")

from .session import AgentContextSession  # noqa: E402
from .tools import NAMES, agentcontext_tools  # noqa: E402

__all__ = ["AgentContextSession", "agentcontext_tools", "NAMES"]
