"""Processes sharing one PostgreSQL server (the short version of benchmarks/postgres_concurrency.py): no write lost,
each visible to the others within a second, no error reaching a caller; a client killed inside a batch leaves the
batch whole or absent. And the change log's order: a follower reading ``changes_since`` never passes a lower
sequence number that another connection holds uncommitted."""
from __future__ import annotations

import threading
import time

import pytest

from benchmarks.postgres_concurrency import run, visibility


@pytest.mark.postgres
def test_writers_and_readers_share_a_server_and_kills_are_all_or_nothing(pg_url):
    figures = run(pg_url, processes=3, seconds=3, kills=2, kill_size=600)
    assert figures["writes"] >= 10 and figures["retrieves"] >= 5, figures
    assert figures["lost_writes"] == 0 and figures["errors_seen_by_callers"] == [], figures
    assert figures["read_your_writes_misses"] == 0, figures
    assert figures["not_seen_by_others"] == 0 and figures["visible_to_others_max_s"] <= 1.0, figures
    killed = figures["sigkill_mid_batch"]
    assert killed["killed_inside_a_batch"] >= 1 and killed["torn_batches"] == {}, killed
    assert killed["batches_in_store"] >= 1 and killed["integrity"] == "ok", killed


@pytest.mark.postgres
def test_a_follower_never_passes_a_lower_sequence_number_held_uncommitted(pg_url):
    from agentcontext.store.postgres import PostgresStore

    first, second, follower = PostgresStore(pg_url), PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        cursor = follower.change_counter()
        failed: list[BaseException] = []

        def write_second() -> None:
            try:
                second.put_record("order", "second", {})
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                failed.append(exc)

        with first.transaction():
            first.put_record("order", "first", {})  # its change-log number is taken, not committed
            writer = threading.Thread(target=write_second)
            writer.start()
            deadline = time.monotonic() + 30
            while writer.is_alive() and time.monotonic() < deadline:  # until it waits for the writer lock
                waiting = follower._read("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                         "AND wait_event = 'advisory'")[0][0]
                if waiting:
                    break
                time.sleep(0.01)
            assert writer.is_alive(), "a second writer committed while another held an uncommitted change"
            seen = follower.changes_since(cursor)
            assert seen == [], seen  # nothing committed yet: a tail stays where it is
        writer.join(30)
        assert not writer.is_alive() and not failed, failed
        seen = follower.changes_since(cursor)
        assert [c.target for c in seen] == ["order/first", "order/second"]
        assert seen[0].seq < seen[1].seq  # the first transaction's number is the lower: a tail passed nothing
    finally:
        for store in (first, second, follower):
            store.close()


def test_visibility_judges_only_writes_after_the_observers_tail_began():
    """A write that committed before another worker's tail began (change-log number <= its start) but returned to
    its writer after that worker's start time is not the tail's to report (the cause of a flaky failure)."""
    writer = {"writes": [["early", 10.0], ["late", 12.0], ["lost", 12.5]], "polls": [], "seen": {}, "start_seq": 0}
    reader = {"writes": [], "polls": [9.9, 12.1, 14.0], "seen": {"late": 12.1}, "start_seq": 5}
    stale, lags, unseen = visibility([writer, reader], {"early": 5, "late": 6, "lost": 7})
    assert unseen == 1  # "lost" was committed after the reader's start and never reported by its tail
    assert lags == [pytest.approx(0.1)] and stale == [0.0]
