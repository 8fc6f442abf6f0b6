"""The memory tools (seed 003's AgentMemory) as MCP tool specs, on the workspace's default memory store.

The store is the one ``agentcontext memory ...`` uses by default (namespace ``memory:default``; no eviction,
no expiry: limits are an application policy). Results are what the Python calls return.

Access: the memory service checks and audits every call (``memory:default``, read to retrieve and read, write
to store and forget); the tools only pass the session's principal on.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from ..errors import ValidationError
from ..memory import AgentMemory
from ..memory.service import workspace_memory
from .registry import CallContext, StrictArgs, ToolSpec, register_tools
from .schemas import INT, JSON_OBJECT, NUM, STR, array, free_json, nullable, obj

NAMESPACE = "default"
ID = Field(min_length=1, max_length=300, description="A memory id as store_memory or retrieve_memories returned.")
CONVERSATION = Field(None, min_length=1, max_length=300, description="A conversation id: memories of one "
                     "conversation are linked in order.")
USER = Field(None, min_length=1, max_length=300, description="The user the memory is about or from.")
MAX_DAYS = 100_000  # about 270 years: any older cut-off is before every memory


def open_memory(ctx: CallContext) -> AgentMemory:
    """The workspace's default memory store, acting as the session's principal."""
    return workspace_memory(ctx.ws, NAMESPACE, ctx.principal)


class StoreArgs(StrictArgs):
    content: str = Field(min_length=1, max_length=1_000_000, description="The text to remember.")
    metadata: Optional[free_json(100)] = Field(None, description="Free-form JSON metadata (e.g. type, speaker, "
                                               "entities); retrieval can filter on it.")
    conversation_id: Optional[str] = CONVERSATION
    user_id: Optional[str] = USER


class RetrieveArgs(StrictArgs):
    query: str = Field(min_length=1, max_length=10_000, description="What you want to recall, in words.")
    max_results: int = Field(5, ge=1, le=100, description="At most this many memories, best first.")
    conversation_id: Optional[str] = Field(None, min_length=1, max_length=300,
                                           description="Only memories of this conversation.")
    user_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Only memories of this user.")
    min_score: Optional[float] = Field(None, ge=0.0, description="Drop results scoring below this (the best is "
                                       "near 1).")


class ForgetArgs(StrictArgs):
    memory_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Forget this one memory.")
    conversation_id: Optional[str] = Field(None, min_length=1, max_length=300,
                                           description="Forget this conversation's memories.")
    user_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Forget this user's memories.")
    days_old: Optional[float] = Field(None, ge=0.0, le=MAX_DAYS, description="Forget memories older than this "
                                      "many days.")


class GetArgs(StrictArgs):
    memory_id: str = ID


class HistoryArgs(StrictArgs):
    conversation_id: str = Field(min_length=1, max_length=300, description="The conversation id.")
    max_items: int = Field(50, ge=1, le=1000, description="The last this many memories, oldest first.")


def _store(ctx: CallContext, a: StoreArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    mid = mem.store(a.content, metadata=a.metadata, conversation_id=a.conversation_id, user_id=a.user_id)
    return {"id": mid, "namespace": mem.namespace}


def _retrieve(ctx: CallContext, a: RetrieveArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    rows = mem.retrieve(a.query, max_results=a.max_results, min_score=a.min_score or 0.0,
                        conversation_id=a.conversation_id, user_id=a.user_id)
    return {"namespace": mem.namespace, "results": rows}


def _forget(ctx: CallContext, a: ForgetArgs) -> dict[str, Any]:
    given = {k: v for k, v in a.model_dump().items() if v is not None}
    if not given:
        raise ValidationError("forget_memories needs at least one of memory_id, conversation_id, user_id, days_old",
                              fields=list(ForgetArgs.model_fields))
    mem = open_memory(ctx)
    count = mem.forget(a.memory_id, a.conversation_id, a.days_old, a.user_id)
    return {"namespace": mem.namespace, "forgotten": count}


def _get(ctx: CallContext, a: GetArgs) -> dict[str, Any]:
    return open_memory(ctx).require(a.memory_id)  # NotFoundError when absent


def _history(ctx: CallContext, a: HistoryArgs) -> dict[str, Any]:
    mem = open_memory(ctx)
    return {"conversation_id": a.conversation_id,
            "memories": mem.get_conversation_history(a.conversation_id, a.max_items)}


MEMORY = {"id": STR, "memory_id": STR, "content": STR, "metadata": JSON_OBJECT, "conversation_id": nullable(STR),
          "user_id": nullable(STR), "timestamp": nullable(STR), "created_at": nullable(STR),
          "updated_at": nullable(STR), "version": INT}
RECALLED = {**MEMORY, "score": NUM, "signals": {"type": "object", "additionalProperties": NUM,
                                                "description": "Each retrieval signal and its value."},
            "source": STR}
STORE_OUT = obj({"id": STR, "namespace": STR})
RETRIEVE_OUT = obj({"namespace": STR, "results": array(obj(RECALLED))})
FORGET_OUT = obj({"namespace": STR, "forgotten": INT})
HISTORY_OUT = obj({"conversation_id": STR, "memories": array(obj(MEMORY))})


def memory_tools() -> list[ToolSpec]:
    return [
        ToolSpec("store_memory",
                 "Remember something for later sessions: a fact, a preference, a turn of a conversation. Pass "
                 "conversation_id for turns of one conversation (they are linked in order) and user_id for what "
                 "belongs to one user. Returns the new memory's id.",
                 StoreArgs, _store, STORE_OUT, read_only=False, title="Store a memory"),
        ToolSpec("retrieve_memories",
                 "Recall what was remembered before: the memories most relevant to a query (meaning, keywords and "
                 "conversation context), best first, each with its score and the signals behind it. Use before "
                 "answering anything that may depend on earlier sessions.",
                 RetrieveArgs, _retrieve, RETRIEVE_OUT, title="Retrieve memories"),
        ToolSpec("forget_memories",
                 "Delete memories for good: one by memory_id, a whole conversation, a user's, or those older than "
                 "days_old (give at least one; given together, all must match). Returns how many were deleted.",
                 ForgetArgs, _forget, FORGET_OUT, read_only=False,
                 destructive=True, title="Forget memories"),
        ToolSpec("get_memory",
                 "Read one memory by id (its full text, metadata, conversation, user and times), e.g. one that "
                 "retrieve_memories returned. Fails with NotFoundError for an unknown id.",
                 GetArgs, _get, obj(MEMORY), title="Get a memory"),
        ToolSpec("conversation_history",
                 "The last max_items memories of one conversation in the order they were stored (oldest first). "
                 "Use to pick a conversation up where it stopped.",
                 HistoryArgs, _history, HISTORY_OUT, title="Conversation history"),
    ]


register_tools("memory", memory_tools)
