"""A PostgreSQL store's other connections never change its schema: the read-ahead second connection
(store/pg_parallel.py) and the background fold's connection (store/pg_delta.py ``Folder``) open the schema the store
opened, at the version it found, and run no migration. A store pinned to an older schema (what tests, and a process
of an older agentcontext, open) stays at that version whatever its reads and folds do; a schema another process
upgraded after the store opened is refused by them with a StoreError saying to open the store again."""
from __future__ import annotations

import numpy as np
import psycopg
import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node, content_hash
from agentcontext.store.migrations import Migrations
from agentcontext.store.postgres import PostgresStore, split_url

pytestmark = pytest.mark.postgres


def pinned(url: str, **kwargs):
    """A store pinned to the step before the latest (its second connection on, as in production)."""

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:-1])

    return Before(url, prewarm=False, **kwargs)


def version(url: str) -> int:
    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as db:
        return db.execute(f'SELECT max(version) FROM "{schema}".schema_migrations').fetchone()[0]


def test_a_read_ahead_leaves_a_pinned_store_at_its_version(pg_url):
    latest = PostgresStore.MIGRATIONS.latest
    store = pinned(pg_url)
    try:
        assert version(pg_url) == latest - 1
        store.put_nodes([Node(id="a", kind="note", namespace="ns", content="hello")])
        assert store.read_ahead(lambda s: s.count_nodes(namespace="ns")).result() == 1
        assert store._ahead.opened  # the read ran on the second connection
        assert version(pg_url) == latest - 1  # which upgraded nothing
    finally:
        store.close()
    assert version(pg_url) == latest - 1


def test_a_background_fold_leaves_a_pinned_store_at_its_version(pg_url):
    latest = PostgresStore.MIGRATIONS.latest
    store = pinned(pg_url)
    try:
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((4, 16)).astype(np.float32)
        store.put_vectors({content_hash(f"t{i}"): v for i, v in enumerate(vectors)}, "m")
        assert store.folder.start()  # what a commit past the store's fold_at starts, on a connection of its own
        store.folder._thread.join(60)
        assert store.folder.last is not None and "error" not in store.folder.last, store.folder.last
        assert version(pg_url) == latest - 1
    finally:
        store.close()


def test_a_schema_upgraded_under_the_store_is_refused_by_its_second_connection(pg_url):
    store = pinned(pg_url)
    try:
        PostgresStore(pg_url, prewarm=False).close()  # another process opens the schema with every migration
        assert version(pg_url) == PostgresStore.MIGRATIONS.latest
        with pytest.raises(StoreError, match="open the store again"):
            store.read_ahead(lambda s: s.count_nodes()).result()
    finally:
        store.close()
