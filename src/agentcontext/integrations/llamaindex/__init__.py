"""agentcontext inside LlamaIndex: ``AgentContextMemoryBlock`` (a ``BaseMemoryBlock`` for its ``Memory``: our cited
context for the latest messages; flushed messages stored as memories) and ``AgentContextRetriever`` (a
``BaseRetriever`` over memories and knowledge packs). Needs the extra: ``pip install 'agentcontext[llamaindex]'``."""
from __future__ import annotations

from .. import require

require("llama_index.core", extra="llamaindex")

from .memory_block import AgentContextMemoryBlock  # noqa: E402
from .retriever import AgentContextRetriever  # noqa: E402

__all__ = ["AgentContextMemoryBlock", "AgentContextRetriever"]
