"""A store copied whole both ways it can go: ``migrate`` to another PostgreSQL schema (``import_rows``: COPY into
the new columns) and from there to SQLite (where the columns are text again); each copy's digests equal its
source's, and what the test reads of its new columns (``log``, ``held``) comes back the same."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def copies_keep(url: str, store: Any, copy_url: str, sqlite: Path, log: Callable[[Any], Any],
                held: Callable[[Any], Any]) -> None:
    from agentcontext.migrate import migrate
    from agentcontext.store import open_store

    before = log(store)
    assert migrate(url, copy_url)["digests_equal"]
    target = open_store(copy_url)
    assert log(target) == before and held(target) == held(store)
    target.close()
    assert migrate(copy_url, str(sqlite))["digests_equal"]
    assert log(open_store(str(sqlite)))["since"] == before["since"]
