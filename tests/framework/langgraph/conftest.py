"""LangGraph's own store tests, run against AgentContextStore: their coroutine tests run under pytest-asyncio (as
upstream's ``asyncio_mode = auto``), and the tests listed in README.md are skipped, each with its reason."""
from __future__ import annotations

import inspect

import pytest

SKIPPED = {
    # SqliteStore internals, not the BaseStore contract
    "test_nonnull_migrations": "checks SqliteStore.MIGRATIONS, the SQLite store's own schema statements",
    "test_escape_glob_literal": "checks a private helper of langgraph's SQLite store (_escape_glob_literal)",
    "test_namespace_match_pattern": "checks a private helper of langgraph's SQLite store (_namespace_match_pattern)",
    "test_list_namespaces_prefix_uses_indexable_condition": "inspects the SQL BaseSqliteStore generates",
    "test_vector_store_initialization": "its last part reads SqliteStore's own tables through store.conn (its "
                                        "first part, index_config and embeddings, passes)",
    # langgraph's AsyncBatchedBaseStore with a mocked backend: no store of ours is involved, and pytest-mock is not
    # installed here
    "test_async_batch_store": "tests langgraph's AsyncBatchedBaseStore with pytest-mock's mocker (no backend)",
    "test_async_batch_store_deduplication": "tests langgraph's AsyncBatchedBaseStore with pytest-mock's mocker",
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if "framework/langgraph" not in str(item.path).replace("\\", "/"):
            continue
        name = item.originalname if hasattr(item, "originalname") else item.name
        if name == "test_vector_store_initialization" and item.path.name != "test_sqlite_store.py":
            continue  # only the SQLite store's version reads store.conn
        if name in SKIPPED:
            item.add_marker(pytest.mark.skip(reason=SKIPPED[name]))


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Mark each coroutine test for pytest-asyncio before it is collected (upstream runs them in auto mode)."""
    if name.startswith("test") and inspect.iscoroutinefunction(obj):
        pytest.mark.asyncio(obj)
