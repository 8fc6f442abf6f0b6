"""The SQLite writer's settings for bulk writes (issue 9 s3): the WAL is checkpointed by size, not after every
commit, and a large write gets a larger page cache for its transaction only, back to the usual size after it
commits or rolls back. A new store file has 16 KiB pages (issue 23 s1); a file made with smaller ones keeps them."""
from __future__ import annotations

import numpy as np
import pytest
import sqlean

from agentcontext.model import Node
from agentcontext.store import SQLiteStore


def pragma(store: SQLiteStore, name: str) -> int:
    return store._db.execute(f"PRAGMA {name}").fetchone()[0]


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "store.db")
    s.BATCH_ROWS = 3  # a "large" write, kept small for the test
    yield s
    s.close()


def nodes(n: int, start: int = 0) -> list[Node]:
    return [Node(id=f"n{i}", kind="note", namespace="t", content=f"text {i}", embed_text=f"text {i}")
            for i in range(start, start + n)]


def test_the_wal_is_checkpointed_by_size(store):
    assert pragma(store, "wal_autocheckpoint") == SQLiteStore.WAL_CHECKPOINT_BYTES // SQLiteStore.PAGE_BYTES
    assert pragma(store, "journal_size_limit") == SQLiteStore.WAL_KEEP_BYTES


def test_a_new_store_has_large_pages(store, tmp_path):
    # Ten 384-d vectors fill a 16 KiB page (two a 4 KiB one, a fifth of it left empty); a batch writes a quarter
    # of the pages to the WAL and the file
    assert SQLiteStore.PAGE_BYTES == 16384
    assert pragma(store, "page_size") == SQLiteStore.PAGE_BYTES
    store.put_nodes(nodes(3))
    store.close()
    again = SQLiteStore(tmp_path / "store.db")
    assert pragma(again, "page_size") == SQLiteStore.PAGE_BYTES and again.get_node("n2") is not None
    again.close()


def test_a_store_made_with_small_pages_keeps_them(tmp_path):
    path = tmp_path / "old.db"
    old = sqlean.connect(str(path))
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA journal_mode = WAL")
    old.execute("CREATE TABLE kept (x)")
    old.close()
    s = SQLiteStore(path)
    try:
        assert pragma(s, "page_size") == 4096
        assert pragma(s, "wal_autocheckpoint") == SQLiteStore.WAL_CHECKPOINT_BYTES // 4096  # the same bytes
        s.put_nodes(nodes(3))
        assert s.get_node("n1").content == "text 1"
        assert s.check_integrity() == "ok"
    finally:
        s.close()


def test_a_large_write_gets_the_batch_cache_for_its_transaction_only(store):
    usual, batch = -SQLiteStore.PAGE_CACHE_KIB, -SQLiteStore.BATCH_CACHE_KIB
    assert pragma(store, "cache_size") == usual
    store.put_nodes(nodes(2))  # small: the cache stays as it is
    assert pragma(store, "cache_size") == usual
    with store.transaction():
        store.put_vectors({f"h{i}": np.ones(4, dtype=np.float32) * i for i in range(3)}, "m")
        assert pragma(store, "cache_size") == batch
        store.put_nodes(nodes(3, 10))
        assert pragma(store, "cache_size") == batch
    assert pragma(store, "cache_size") == usual
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_nodes(nodes(3, 20))
            assert pragma(store, "cache_size") == batch
            raise RuntimeError("abandon the batch")
    assert pragma(store, "cache_size") == usual
    assert store.get_node("n20") is None and store.get_node("n10") is not None
    assert sorted(store.get_vectors(["h2", "h0", "h1"], "m")) == ["h0", "h1", "h2"]
    assert store.get_vectors(["h2"], "m")["h2"].tolist() == [2.0] * 4
