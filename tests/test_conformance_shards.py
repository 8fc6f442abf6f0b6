"""The conformance suite (tests/conformance/) on a sharded store (``store/pg_shards.py``): two shards, the session's
embedded server (the directory shard) and one more started for this module, a fresh schema on both per test."""
from __future__ import annotations

import itertools

import pytest

from agentcontext.store import open_store

from .conformance import conformance_tests
from .pg_server import PgServer

pytestmark = pytest.mark.postgres
_schemas = itertools.count(1)


@pytest.fixture(scope="module")
def second_server():
    server = PgServer().start()
    yield server
    server.stop()


@pytest.fixture
def store_factory(pg_server, second_server):
    schema = f"cs_{next(_schemas)}"
    url = f"shards:a={pg_server.url(schema)},b={second_server.url(schema)}"
    return lambda: open_store(url)


conformance_tests()
