"""``AsyncAgentContextSaver``: the checkpointer for ``async`` graphs, opened like ``AsyncSqliteSaver``
(``async with AsyncAgentContextSaver.from_conn_string(url) as saver``)."""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator, Sequence

from .common import opened
from .saver import AgentContextSaver


class AsyncAgentContextSaver(AgentContextSaver):
    """``AgentContextSaver`` whose ``from_conn_string`` and ``setup`` are async; every ``a``-method works."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, url: str, *, name: str = "default",  # type: ignore[override]
                               principal: str | None = None,
                               subject_keys: Sequence[str] = ("user_id",)) -> AsyncIterator["AsyncAgentContextSaver"]:
        with opened(url) as ws:
            yield cls(ws, name=name, principal=principal, subject_keys=subject_keys)

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing to create (as ``AgentContextSaver.setup``)."""
