"""A new connection's first search, run at open in the background (store/pg_warmup.py, issue 23 s3): the store's
search calls run once on its own backend with a sample of its data; a first query asked meanwhile waits for it; a
small store is not warmed unless asked; a failing step never fails the open and is reported; ``close`` stops a
warm-up still running."""
from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store.pg_sql import split_url
from agentcontext.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres
MODEL, DIM = "test-model", 32
WORDS = "tea trip meeting garden river music paint novel travel coffee".split()


def _fill(url: str, n: int = 120) -> None:
    """n conversation turns (each naming the one before in ``props.prev``) with their own vectors."""
    rng = np.random.default_rng(5)
    store = PostgresStore(url, warm_up=False)
    texts = [f"Ann: about {WORDS[i % 10]} and {WORDS[(3 * i) % 10]} number {i}" for i in range(n)]
    store.put_nodes([Node(id=f"m{i}", kind="memory", namespace="memory:talk", content=text, embed_text=text,
                          props={"prev": f"m{i - 1}"} if i else {}) for i, text in enumerate(texts)])
    store.put_vectors({content_hash(text): rng.standard_normal(DIM).astype(np.float32) for text in texts}, MODEL)
    store.close()


def test_a_store_opened_with_a_warm_up_runs_a_first_search_on_its_own_connection(pg_url):
    _fill(pg_url)
    store = PostgresStore(pg_url, warm_up=True)
    try:
        assert store.warmed.wait(60)
        report = store.warmed
        assert report.failed is None and report.skipped is None, report
        assert {"sample", "nearest", "text", "linked", "similarities"} <= set(report.steps)
        assert report.client_cpu_ms is not None and report.ended > report.started
        assert report.backend_pid == store._db.info.backend_pid  # the backend that serves the process's queries
        query = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
        cold = PostgresStore(pg_url, warm_up=False)
        assert cold.warmed.skipped == "not asked"
        assert store.nearest(query, MODEL, 10, namespace="memory:talk") == cold.nearest(query, MODEL, 10,
                                                                                        namespace="memory:talk")
        assert store.text_search("tea garden", namespace="memory:talk") == cold.text_search("tea garden",
                                                                                          namespace="memory:talk")
        cold.close()
    finally:
        store.close()


def test_a_small_store_is_not_warmed_unless_asked(pg_url):
    _fill(pg_url, 10)
    store = PostgresStore(pg_url)
    assert store.warmed.skipped.startswith("the search indexes are small")
    assert store.warmed.wait(0) and store.warmed.steps == {}
    store.close()
    assert PostgresStore(pg_url, prewarm=False).warmed.skipped == "not asked"


def test_an_empty_store_warmed_says_it_found_nothing_to_search_with(pg_url):
    store = PostgresStore(pg_url, warm_up=True)
    assert store.warmed.wait(60)
    assert store.warmed.failed is None and store.warmed.skipped == "no node with a vector to search with"
    store.close()


def test_a_warm_up_step_that_fails_never_fails_the_open_and_is_reported(pg_url):
    """A role that may read the nodes but not the vectors: the open succeeds, the failed step is named, and the
    store serves what the role may read."""
    _fill(pg_url)
    conninfo, schema = split_url(pg_url)
    role = f"reader_{schema}"
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        # no CREATE on the database: a store whose schema exists opens without asking to create it
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
        admin.execute(f"REVOKE SELECT ON {schema}.vectors FROM {role}")
    url = pg_url.replace("postgresql://postgres@", f"postgresql://{role}@")
    store = PostgresStore(url, warm_up=True)
    try:
        assert store.warmed.wait(60)
        assert store.warmed.failed is not None and store.warmed.failed.startswith("sample: ")
        assert store.get_node("m3").content.startswith("Ann: about")  # the connection still serves
    finally:
        store.close()


def test_a_call_waits_for_the_warm_up_step_in_flight_a_search_stops_it_and_close_cancels_it(pg_url):
    """The vectors table locked by another session holds the warm-up's first step: a call of the store asked
    meanwhile waits for that step (never runs beside it on the connection); a plain read then lets the warm-up go
    on, a search makes it stop; ``close`` cancels a step in flight and returns."""
    _fill(pg_url)
    conninfo, schema = split_url(pg_url)
    query = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
    with psycopg.connect(conninfo) as locker:
        for call, finished in ((lambda s: s.count_nodes(), None),
                               (lambda s: s.nearest(query, MODEL, 5, namespace="memory:talk"),
                                "yielded to the store's first search or write before nearest")):
            locker.execute(f"LOCK TABLE {schema}.vectors IN ACCESS EXCLUSIVE MODE")
            store = PostgresStore(pg_url, warm_up=True)
            answered: list[object] = []
            asker = threading.Thread(target=lambda a=answered, c=call, s=store: a.append(c(s)))
            asker.start()
            time.sleep(0.5)
            assert not store.warmed.done.is_set() and not answered  # the warm-up waits on the lock, the call on it
            locker.rollback()
            asker.join(60)
            assert answered and answered[0] and store.warmed.wait(60)
            assert store.warmed.failed == finished, store.warmed
            assert ("similarities" in store.warmed.steps) == (finished is None)
            if finished:  # the search waited for the step the lock held (~0.5 s), and the report says how long
                assert store.warmed.waited_ms is not None and store.warmed.waited_ms >= 400, store.warmed
            else:
                assert store.warmed.waited_ms is None
            store.close()
        locker.execute(f"LOCK TABLE {schema}.vectors IN ACCESS EXCLUSIVE MODE")
        held = PostgresStore(pg_url, warm_up=True)
        time.sleep(0.3)
        started = time.perf_counter()
        held.close()
        assert time.perf_counter() - started < 10
        assert held.warmed.done.is_set() and held.warmed.failed.startswith("stopped by close"), held.warmed
        locker.rollback()
