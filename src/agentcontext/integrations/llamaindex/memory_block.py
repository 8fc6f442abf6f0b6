"""``AgentContextMemoryBlock``: a LlamaIndex ``BaseMemoryBlock`` for its ``Memory``, over agentcontext.

Reading (``aget``): the cited context for the latest messages, what the MCP tool ``get_context`` returns: the best
memories of ``memory:default``, knowledge docs, decisions and graph entities, numbered ``[1]``, ``[2]``... with their
ids, within ``budget_tokens`` (``ReasoningService.context_for``, via ``workspace_reasoning``). As there, a store the
principal may not read is left out (named in the bundle's ``skipped``), never an error.
Writing (``aput``): messages the ``Memory`` flushes from its short-term history are stored as memories of the
conversation (the ``Memory``'s session id, else ``conversation_id``), with ``user_id`` named in their metadata so an
erasure of that user removes them; the write is checked for the principal (``AccessDeniedError``, audited).
"""
from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import ConfigDict, Field

from ...memory.service import workspace_memory
from ...workspace import Workspace
from ...workspace_reasoning import workspace_reasoning


def message_text(message: ChatMessage) -> str:
    return " ".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text).strip()


class AgentContextMemoryBlock(BaseMemoryBlock[str]):
    """``Memory.from_defaults(memory_blocks=[AgentContextMemoryBlock(workspace=ws, principal="alice")])``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "agentcontext"
    description: Optional[str] = "What agentcontext knows that bears on the conversation: memories, docs, decisions."
    workspace: Workspace
    principal: Optional[str] = None
    user_id: Optional[str] = None
    conversation_id: Optional[str] = Field(None, description="Where flushed messages go without a session id.")
    context_window: int = Field(2, ge=1, description="The latest this many messages make the query.")
    max_results: int = Field(5, ge=1, le=100)
    budget_tokens: int = Field(1000, ge=1)
    max_hops: int = Field(1, ge=0, le=5)
    min_score: float = Field(0.0, ge=0.0, le=1.0)

    def context(self, query: str) -> str:
        """The cited context text for ``query`` ("" when nothing bears on it)."""
        bundle = workspace_reasoning(self.workspace, self.principal).context_for(
            query, max_results=self.max_results, max_hops=self.max_hops, budget_tokens=self.budget_tokens,
            min_score=self.min_score)
        return bundle.text if bundle.sources else ""

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        texts = [message_text(m) for m in (messages or [])[-self.context_window:]]
        query = "\n".join(t for t in texts if t)
        if not query:
            return ""
        return await asyncio.to_thread(self.context, query)

    def store(self, messages: List[ChatMessage]) -> list[str]:
        """Store the messages with text as memories; returns their ids."""
        memory = workspace_memory(self.workspace, "default", self.principal)
        memory.check("write", "memory.store")
        items = []
        for message in messages:
            session = message.additional_kwargs.pop("session_id", None) or self.conversation_id
            text = message_text(message)
            if not text:
                continue
            metadata: dict[str, Any] = {"speaker": str(message.role.value), "source": "llamaindex"}
            if self.user_id is not None:
                metadata["entities"] = [self.user_id]
            items.append({"content": text, "metadata": metadata, "conversation_id": session, "user_id": self.user_id})
        return memory.batch_store(items) if items else []

    async def _aput(self, messages: List[ChatMessage]) -> None:
        await asyncio.to_thread(self.store, list(messages))
