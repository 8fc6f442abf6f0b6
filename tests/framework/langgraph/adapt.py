"""The fixtures' adaptation: LangGraph's own store tests build ``SqliteStore`` / ``AsyncSqliteStore`` /
``InMemoryStore``; these names build agentcontext's ``AgentContextStore`` instead, on the same connection string
(``:memory:`` or a file path), with the same ``index`` and ``ttl`` configuration. Nothing else changes.

With ``LANGGRAPH_STORE_TESTS_ON_POSTGRES=1`` in the environment, every store these tests open is a fresh schema on
one embedded PostgreSQL server instead (an opt-in: it roughly doubles their time; see README.md)."""
from __future__ import annotations

import atexit
import os
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from agentcontext.integrations.langgraph import AgentContextStore, AsyncAgentContextStore
from agentcontext.workspace import Workspace

_SERVER: list[Any] = []


def _url(conn_string: str) -> str:
    """The connection string the test chose, or a fresh PostgreSQL schema when the opt-in is set."""
    if os.environ.get("LANGGRAPH_STORE_TESTS_ON_POSTGRES") != "1":
        return conn_string
    if not _SERVER:
        from tests.pg_server import PgServer

        _SERVER.append(PgServer().start())
        atexit.register(_SERVER[0].stop)
    return _SERVER[0].url()


MockerFixture = Any  # pytest-mock is not installed: the two tests that use ``mocker`` are skipped (conftest.py)


class SqliteStore:
    @staticmethod
    @contextmanager
    def from_conn_string(conn_string: str, *, index: Any = None, ttl: Any = None):
        with AgentContextStore.from_conn_string(_url(conn_string), index=index, ttl=ttl) as store:
            yield store


class AsyncSqliteStore:
    @staticmethod
    @asynccontextmanager
    async def from_conn_string(conn_string: str, *, index: Any = None, ttl: Any = None):
        async with AsyncAgentContextStore.from_conn_string(_url(conn_string), index=index, ttl=ttl) as store:
            yield store


def InMemoryStore(*, index: Any = None) -> AgentContextStore:  # noqa: N802  (it stands for the class)
    """``InMemoryStore(index=...)``: a store on an in-memory agentcontext workspace."""
    return AgentContextStore(Workspace.in_memory(), index=index)  # LangGraph's in-memory store: ours in memory
