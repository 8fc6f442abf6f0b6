"""agentcontext inside LangChain: ``AgentContextRetriever`` (a ``BaseRetriever`` over memories and knowledge packs)
and ``agentcontext_tools`` (the knowledge tools as LangChain tools). Needs the extra:
``pip install 'agentcontext[langchain]'``."""
from __future__ import annotations

from .. import require

require("langchain_core", extra="langchain")

from .retriever import AgentContextRetriever  # noqa: E402
from .tools import ALL, NAMES, agentcontext_tools  # noqa: E402

__all__ = ["AgentContextRetriever", "agentcontext_tools", "NAMES", "ALL"]
