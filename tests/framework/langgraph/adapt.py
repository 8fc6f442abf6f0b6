"""The fixtures' adaptation: LangGraph's own store tests build ``SqliteStore`` / ``AsyncSqliteStore`` /
``InMemoryStore``; these names build agentcontext's ``AgentContextStore`` instead, on the same connection string
(``:memory:`` or a file path), with the same ``index`` and ``ttl`` configuration. Nothing else changes."""
from __future__ import annotations

from contextlib import asynccontextmanager, contextmanager
from typing import Any

from agentcontext.integrations.langgraph import AgentContextStore, AsyncAgentContextStore
from agentcontext.workspace import Workspace

MockerFixture = Any  # pytest-mock is not installed: the two tests that use ``mocker`` are skipped (conftest.py)


class SqliteStore:
    @staticmethod
    @contextmanager
    def from_conn_string(conn_string: str, *, index: Any = None, ttl: Any = None):
        with AgentContextStore.from_conn_string(conn_string, index=index, ttl=ttl) as store:
            yield store


class AsyncSqliteStore:
    @staticmethod
    @asynccontextmanager
    async def from_conn_string(conn_string: str, *, index: Any = None, ttl: Any = None):
        async with AsyncAgentContextStore.from_conn_string(conn_string, index=index, ttl=ttl) as store:
            yield store


def InMemoryStore(*, index: Any = None) -> AgentContextStore:  # noqa: N802  (it stands for the class)
    """``InMemoryStore(index=...)``: a store on an in-memory agentcontext workspace."""
    return AgentContextStore(Workspace.in_memory(), index=index)
