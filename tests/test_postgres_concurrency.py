"""Processes sharing one PostgreSQL server (the short version of benchmarks/postgres_concurrency.py): no write lost,
each visible to the others within a second, no error reaching a caller; a client killed inside a batch leaves the
batch whole or absent."""
from __future__ import annotations

import pytest

from benchmarks.postgres_concurrency import run

pytestmark = pytest.mark.postgres


def test_writers_and_readers_share_a_server_and_kills_are_all_or_nothing(pg_url):
    figures = run(pg_url, processes=3, seconds=3, kills=2, kill_size=600)
    assert figures["writes"] >= 10 and figures["retrieves"] >= 5, figures
    assert figures["lost_writes"] == 0 and figures["errors_seen_by_callers"] == [], figures
    assert figures["read_your_writes_misses"] == 0, figures
    assert figures["not_seen_by_others"] == 0 and figures["visible_to_others_max_s"] <= 1.0, figures
    killed = figures["sigkill_mid_batch"]
    assert killed["killed_inside_a_batch"] >= 1 and killed["torn_batches"] == {}, killed
    assert killed["batches_in_store"] >= 1 and killed["integrity"] == "ok", killed
