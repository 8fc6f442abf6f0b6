"""The fixtures the SDK's session tests are run with: the names they construct (``SQLiteSession``,
``SQLAlchemySession``) build an ``AgentContextSession`` instead, on the same kind of store the test asked for, and the
SDK test helper they import (``tests.test_responses.get_text_message``), which is not shipped in the wheel."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from openai.types.responses import ResponseOutputItem, ResponseOutputMessage, ResponseOutputText

from agentcontext.integrations.openai_agents import AgentContextSession


def get_text_message(content: str) -> ResponseOutputItem:
    """As in the SDK's tests/test_responses.py."""
    return ResponseOutputMessage(id="1", type="message", role="assistant",
                                 content=[ResponseOutputText(text=content, type="output_text", annotations=[])],
                                 status="completed")


def SQLiteSession(session_id: str, db_path: str | Path = ":memory:", session_settings: Any = None,  # noqa: N802
                  **kwargs: Any) -> AgentContextSession:
    """``SQLiteSession(session_id, db_path)``: an in-memory workspace for ``:memory:``, else the store file
    ``db_path`` (two sessions on one path share it, as two SQLiteSessions do)."""
    if str(db_path) == ":memory:":
        return AgentContextSession(session_id, session_settings=session_settings, **kwargs)
    return AgentContextSession.from_url(session_id, url=f"sqlite:///{db_path}", session_settings=session_settings,
                                        **kwargs)


class SQLAlchemySession:
    """``SQLAlchemySession.from_url(session_id, url=...)``: ``sqlite+aiosqlite:///:memory:`` is an in-memory
    workspace, ``sqlite+aiosqlite:///path`` the store file ``path``. The options that shape SQLAlchemy's own tables
    (``create_tables``, ``ensure_ascii``) have no counterpart: the store's schema exists once opened."""

    @staticmethod
    def from_url(session_id: str, *, url: str, create_tables: bool = False, ensure_ascii: bool = True,
                 session_settings: Any = None) -> AgentContextSession:
        path = url.split(":///", 1)[1]
        return SQLiteSession(session_id, path, session_settings=session_settings)
