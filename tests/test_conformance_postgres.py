"""The conformance suite (tests/conformance/) on PostgreSQL (the session's embedded server, a fresh schema per
test): this file only supplies the factory."""
from __future__ import annotations

import pytest

from agentcontext.store import open_store

from .conformance import conformance_tests

pytestmark = pytest.mark.postgres


@pytest.fixture
def store_factory(pg_url):
    return lambda: open_store(pg_url)


conformance_tests()
