"""The conformance suite (tests/conformance/) on a SQLite file: this file only supplies the factory."""
from __future__ import annotations

import pytest

from agentcontext.store import SQLiteStore

from .conformance import conformance_tests


@pytest.fixture
def store_factory(tmp_path):
    return lambda: SQLiteStore(tmp_path / "store.db")


conformance_tests()
