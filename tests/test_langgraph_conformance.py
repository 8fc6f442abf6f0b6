"""``langgraph-checkpoint-conformance`` run against ``AgentContextSaver`` with every capability it detects (the base
five and delete_for_runs, copy_thread, prune), on a SQLite file and on PostgreSQL (the session's server)."""
from __future__ import annotations

import asyncio
import itertools

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, DetectedCapabilities  # noqa: E402

from agentcontext.integrations.langgraph import AgentContextSaver, AsyncAgentContextSaver  # noqa: E402

_COUNT = itertools.count()


def run_suite(url_for) -> None:
    @checkpointer_test(name="AgentContextSaver")
    async def factory():
        async with AsyncAgentContextSaver.from_conn_string(url_for(next(_COUNT))) as saver:
            yield saver

    report = asyncio.run(validate(factory))
    failures = {cap: r.failures for cap, r in report.results.items() if r.passed is False}
    assert not failures, failures
    detected = {cap for cap, r in report.results.items() if r.detected}
    assert detected == {c.value for c in ALL_CAPABILITIES}, detected
    assert all(r.passed for r in report.results.values()), report.results
    assert sum(r.tests_passed for r in report.results.values()) >= 80  # 81 in langgraph-checkpoint-conformance 0.0.2


def test_every_capability_is_detected():
    with AgentContextSaver.from_conn_string(":memory:") as saver:
        assert DetectedCapabilities.from_instance(saver).missing == frozenset()


def test_conformance_on_sqlite(tmp_path):
    run_suite(lambda n: f"sqlite:///{tmp_path}/cp{n}.db")


@pytest.mark.postgres
def test_conformance_on_postgres(pg_server):
    run_suite(lambda n: pg_server.url())
