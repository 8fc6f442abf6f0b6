"""``AgentContextSession``: the OpenAI Agents SDK's ``Session`` protocol over agentcontext's memory.

Each conversation item is one memory of the conversation ``session_id`` in the memory store ``memory:<namespace>``
(``memory:default`` unless told otherwise, the store the CLI, MCP and the console read), in the order added: so
``retrieve_memories``/``agentcontext memory retrieve`` recall what was said, and an erasure of the session's
``user_id`` removes every item (the items name the user in their metadata). The item itself is kept unchanged
in the memory's metadata; ``get_items`` returns exactly what ``add_items`` was given.

Access: the memory service checks every call for ``principal`` (read for ``get_items``, write for the others) and
audits denials and writes, as it does for the CLI and MCP. The store calls are blocking; each runs on a worker
thread (as the SDK's ``SQLiteSession`` does), and a write, once started, is waited for even if the caller is
cancelled, so its outcome is known.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, TypeVar

from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from ...errors import ValidationError
from ...memory.service import AgentMemory, workspace_memory
from ...workspace import Workspace
from ..opening import open_workspace
from .items import TYPE, check_item, from_memory, to_memory

T = TypeVar("T")


async def _settled(awaitable: Awaitable[T]) -> T:
    """Wait for a write to finish even when the caller is cancelled meanwhile, then re-raise the cancellation."""
    task = asyncio.ensure_future(awaitable)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved, so asyncio logs no "exception was never retrieved"
        raise cancelled
    return task.result()


class AgentContextSession:
    """A conversation's history for the OpenAI Agents SDK, kept as memories in an agentcontext store.

    ``AgentContextSession(session_id, workspace, principal=..., user_id=...)`` on a workspace you hold (without one,
    a new in-memory workspace); ``AgentContextSession.from_url(session_id, url="sqlite:///path/store.db")`` (or a
    ``postgresql://`` URL) opens the store and closes it in ``close()``."""

    session_settings: SessionSettings | None

    def __init__(self, session_id: str, workspace: Workspace | None = None, *, principal: str | None = None,
                 namespace: str = "default", user_id: str | None = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None, _owned: bool | None = None) -> None:
        if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 300:
            raise ValidationError("session_id must be a non-empty string of at most 300 characters",
                                  session_id=str(session_id)[:300])
        if user_id is not None and (not isinstance(user_id, str) or not user_id.strip()):
            raise ValidationError("user_id must be a non-empty string (the user an erasure names) or None")
        self.session_settings = coerce_session_settings(session_settings) if session_settings is not None \
            else SessionSettings()
        self.session_id = session_id
        self.user_id = user_id
        self.workspace, owned = open_workspace(workspace)
        self._owned = owned if _owned is None else _owned
        self.memory: AgentMemory = workspace_memory(self.workspace, namespace, principal)
        self._closed = False

    @classmethod
    def from_url(cls, session_id: str, *, url: str, **kwargs: Any) -> "AgentContextSession":
        """A session on the store at ``url`` (``sqlite:///path`` or ``postgresql://...``), closed by ``close()``."""
        workspace, _ = open_workspace(url=url)
        try:
            return cls(session_id, workspace, _owned=True, **kwargs)
        except BaseException:
            workspace.close()
            raise

    @property
    def principal(self) -> str | None:
        return self.memory.principal

    def _open(self) -> AgentMemory:
        if self._closed:
            raise ValidationError(f"session {self.session_id!r} is closed; open a new AgentContextSession")
        return self.memory

    # --- the blocking calls, each run on a worker thread ----------------------------------------------------------
    def _memories(self) -> list[dict[str, Any]]:
        return self._open().list_memories(conversation_id=self.session_id, type=TYPE)

    def _read(self, limit: int | None) -> list[dict[str, Any]]:
        items = [i for i in map(from_memory, self._memories()) if i is not None]
        if limit is None or limit < 0:  # a negative limit is no limit, as in the SDK's SQLiteSession
            return items
        return items[-limit:] if limit else []

    def _add(self, items: list[dict[str, Any]]) -> None:
        memory = self._open()
        memory.check("write", "memory.store")  # an empty list is checked too
        rows = [{**to_memory(check_item(item, n), self.user_id), "conversation_id": self.session_id}
                for n, item in enumerate(items)]
        if rows:
            memory.batch_store(rows)

    def _pop(self) -> dict[str, Any] | None:
        memory = self._open()
        memory.check("write", "memory.forget")
        with memory.db.transaction():  # the newest item is read and deleted under the write lock: popped once
            for found in reversed(self._memories()):
                item = from_memory(found)
                if item is not None and memory.delete_memory(found["id"]):
                    return item
        return None

    def _clear(self) -> None:
        memory = self._open()
        memory.check("write", "memory.forget")
        ids = [m["id"] for m in self._memories()]
        if ids:
            memory.batch_delete(ids)

    # --- the Session protocol -------------------------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items, oldest first; ``limit`` (else ``session_settings.limit``) keeps the latest N."""
        return await asyncio.to_thread(self._read, resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[Any]) -> None:
        """Append items (JSON objects) to the conversation, in order, in one transaction."""
        await _settled(asyncio.to_thread(self._add, list(items)))

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (None when the conversation is empty)."""
        return await _settled(asyncio.to_thread(self._pop))

    async def clear_session(self) -> None:
        """Delete every item of the conversation (the memories, their versions and vectors)."""
        await _settled(asyncio.to_thread(self._clear))

    def close(self) -> None:
        """Stop using the session; a workspace it opened (``from_url`` or in memory) is closed."""
        if self._closed:
            return
        self._closed = True
        if self._owned:
            self.workspace.close()

    def __repr__(self) -> str:
        return f"AgentContextSession({self.session_id!r}, namespace={self.memory.namespace!r})"

