"""The store conformance suite: every backend against the protocol (``agentcontext.store.base.Store``).

One module per protocol operation (``test_<operation>.py`` here); a backend's test file supplies only a factory and
calls ``conformance_tests()``, which puts every spec test into that file for pytest to run::

    @pytest.fixture
    def store_factory(tmp_path):
        return lambda: SQLiteStore(tmp_path / "store.db")  # each call opens another handle on one fresh store

    conformance_tests()

Optional capabilities (``Capability``) are declared by the store (``store.capabilities``) and detected here: a
spec test marked ``@needs(Capability.SHARED)`` is skipped, saying so, on a store that does not declare it.
The spec modules are not collected on their own (conftest.py); they run once per backend file.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

import pytest

from agentcontext.store import Capability

SPEC = [
    "test_transaction", "test_schema", "test_put_nodes", "test_get_nodes", "test_find_nodes", "test_node_index",
    "test_count_nodes", "test_node_versions", "test_retract_nodes", "test_purge_nodes", "test_put_edges",
    "test_edges", "test_adjacency", "test_text_search", "test_vectors", "test_records", "test_audit",
    "test_changes", "test_integrity", "test_reopen", "test_erasure", "test_nearest", "test_nodes_naming",
    "test_copy_rows", "test_nodes_linked", "test_read_ahead",
]


def needs(*capabilities: Capability) -> Callable[[Callable], Callable]:
    """Run the decorated spec test only on stores that declare every one of ``capabilities``."""
    def mark(fn: Callable) -> Callable:
        fn.needs = frozenset(capabilities)  # type: ignore[attr-defined]
        return fn

    return mark


@pytest.fixture
def store(request: pytest.FixtureRequest, store_factory: Callable[[], Any]):
    """A fresh store from the backend file's ``store_factory``, closed afterwards."""
    opened = store_factory()
    missing = sorted(c.value for c in getattr(request.function, "needs", ()) if c not in opened.capabilities)
    if missing:
        opened.close()
        pytest.skip(f"the {opened.backend} store at {opened.url} does not declare {', '.join(missing)}")
    yield opened
    opened.close()


def spec_tests() -> dict[str, Callable]:
    """Every spec test, named ``test_<operation>__<what it checks>``."""
    tests: dict[str, Callable] = {}
    for name in SPEC:
        module = importlib.import_module(f"{__name__}.{name}")
        for attr, fn in vars(module).items():
            if attr.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__:
                tests[f"{name}__{attr[len('test_'):]}"] = fn
    return tests


def conformance_tests(namespace: dict[str, Any] | None = None) -> None:
    """Put the ``store`` fixture and every spec test into the calling test module (or ``namespace``)."""
    target = namespace if namespace is not None else inspect.stack()[1].frame.f_globals
    target["store"] = store
    target.update(spec_tests())
