"""Browsing a memory store as people do: which conversations and users it holds, and one page of memories.

Read-only helpers over ``AgentMemory``, checked like its reads (read on the store's ``memory:<name>``).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import ValidationError
from .records import CONV, KIND, USER, to_memory
from .service import AgentMemory


def facets(mem: AgentMemory) -> dict[str, Any]:
    """How many memories each conversation and each user has (most first), and the total."""
    mem.check("read", "memory.read")
    convs: Counter[str] = Counter()
    users: Counter[str] = Counter()
    total = 0
    for node in mem.db.find_nodes(namespace=mem.namespace, kind=KIND, with_content=False, order="none"):
        total += 1
        for tag in node.tags:
            if tag.startswith(CONV):
                convs[tag[len(CONV):]] += 1
            elif tag.startswith(USER):
                users[tag[len(USER):]] += 1
    return {"namespace": mem.namespace, "total": total, "conversations": dict(convs.most_common()),
            "users": dict(users.most_common())}


def page(mem: AgentMemory, conversation_id: str | None = None, user_id: str | None = None, offset: int = 0,
         limit: int = 50, newest_first: bool = True) -> dict[str, Any]:
    """One page of memories (optionally of one conversation and/or user), newest first by default."""
    mem.check("read", "memory.read")
    if not isinstance(offset, int) or offset < 0 or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValidationError(f"offset must be >= 0 and limit from 1 to 1000, got {offset!r}, {limit!r}")
    tags = ([CONV + str(conversation_id)] if conversation_id else []) + ([USER + str(user_id)] if user_id else [])
    if tags:
        nodes = mem.db.find_nodes(namespace=mem.namespace, kind=KIND, tags=tags, order="key")
        ordered = nodes[::-1] if newest_first else nodes
        total, chunk = len(ordered), ordered[offset: offset + limit]
    else:  # the whole store: page in the store (keys sort by creation time)
        total = mem.db.count_nodes(namespace=mem.namespace, kind=KIND)
        first = max(0, total - offset - limit) if newest_first else offset
        count = max(0, total - offset - first) if newest_first else limit
        chunk = mem.db.find_nodes(namespace=mem.namespace, kind=KIND, order="key", offset=first,
                                  limit=count) if count else []
        if newest_first:
            chunk = chunk[::-1]
    return {"total": total, "offset": offset, "limit": limit, "memories": [to_memory(n) for n in chunk]}
