"""The conformance suite (tests/conformance/) on SQLite in memory: this file only supplies the factory."""
from __future__ import annotations

import pytest

from agentcontext.store import SQLiteStore

from .conformance import conformance_tests


@pytest.fixture
def store_factory():
    return lambda: SQLiteStore(":memory:")


conformance_tests()
