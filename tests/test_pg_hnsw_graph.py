"""The HNSW graph a PostgreSQL store builds (issue 23: dense recall@10 >= 0.98 at 1,000,000 memories): every path
that makes the index (a small store's first vectors, a bulk load's build after its rows, the fold) builds the graph
``pg_vectors`` names; migration 11 builds a schema-10 store's index again with it, keeping every row and search
result; the walk over it finds the exact top 10 of a small real store."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import open_store
from agentcontext.store.migrations import Migrations
from agentcontext.store.pg_vectors import (EXACT_ROWS, HNSW_EF_CONSTRUCTION, HNSW_M, ann_graph, ann_index_name,
                                          ann_predicate)

pytestmark = pytest.mark.postgres
DIM = 16
CHOSEN = (HNSW_M, HNSW_EF_CONSTRUCTION)


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def fill(store, rng, n: int, start: int = 0) -> dict[str, np.ndarray]:
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", content=f"turn {i}", embed_text=f"turn {i}")
                     for i in range(start, start + n)])
    own = {content_hash(f"turn {i}"): v for i, v in zip(range(start, start + n), unit(rng, n))}
    store.put_vectors(own, "m")
    return own


def step10_store(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step10(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:10])

    return Step10(pg_url)


def test_the_chosen_graph_is_denser_than_pgvectors_default():
    assert HNSW_M > 16 and HNSW_EF_CONSTRUCTION > 64  # recall@10 at 1M: 0.968-0.972 with 16 / 64


def test_a_small_stores_index_and_its_fold_build_the_chosen_graph(pg_url):
    store = open_store(pg_url)
    fill(store, np.random.default_rng(1), 30)
    assert ann_graph(store._db, "m", DIM) == CHOSEN
    store.fold()
    assert ann_graph(store._db, "m", DIM) == CHOSEN
    store.close()


def test_a_bulk_loads_build_after_its_rows_is_the_chosen_graph(pg_url):
    store = open_store(pg_url)
    fill(store, np.random.default_rng(2), 1200)  # pg_bulk.REBUILD_MIN: the index is built after the rows
    assert ann_graph(store._db, "m", DIM) == CHOSEN
    assert store._read("SELECT count(*) FROM vectors WHERE searched")[0][0] == 1200
    store.close()


def test_an_upgrade_from_step_10_builds_the_graph_again_and_keeps_rows_and_results(pg_url):
    rng = np.random.default_rng(9)
    old = step10_store(pg_url)
    assert old.schema_version() == 10
    fill(old, rng, 40)
    old.fold()
    # the index as schema 10 built it (m 16, ef_construction 64: pgvector's defaults)
    index, predicate = ann_index_name("m", DIM), ann_predicate(old._db, "m", DIM)
    old._db.execute(f"DROP INDEX {index}")
    old._db.execute(f"CREATE INDEX {index} ON vectors USING hnsw ((vector::halfvec({DIM})) halfvec_ip_ops) "
                    f"WITH (m = 16, ef_construction = 64) WHERE {predicate}")
    assert ann_graph(old._db, "m", DIM) == (16, 64)
    fill(old, rng, 5, start=40)  # left in the delta: the upgrade keeps it there
    queries = unit(rng, 5)
    near = [old.nearest(q, "m", 5, namespace="ns") for q in queries]
    rows = old._read("SELECT hash, searched, pending FROM vectors ORDER BY hash")
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() == store.MIGRATIONS.latest
    assert ann_graph(store._db, "m", DIM) == CHOSEN
    assert store._read("SELECT hash, searched, pending FROM vectors ORDER BY hash") == rows
    assert [store.nearest(q, "m", 5, namespace="ns") for q in queries] == near
    assert store.check_integrity() == "ok"
    store.close()


def test_the_walk_over_the_graph_finds_the_exact_top_10(pg_url):
    """More nodes than ``EXACT_ROWS``: ``nearest`` walks the index; its top 10 is exact search's over the stored
    (float16) values, scores too."""
    rng = np.random.default_rng(4)
    store = open_store(pg_url)
    n = EXACT_ROWS + 500
    own = fill(store, rng, n)
    ids = {content_hash(f"turn {i}"): f"n{i}" for i in range(n)}
    stored = np.stack([v.astype(np.float16).astype(np.float32) for v in own.values()])
    names = [ids[h] for h in own]
    assert store._read("SELECT count(*) FROM vectors WHERE pending")[0][0] == 0  # all in the index
    for q in unit(rng, 20):
        scores = stored @ q
        want = [names[i] for i in np.argsort(-scores, kind="stable")[:10]]
        got = store.nearest(q, "m", 10, namespace="ns", kind="memory")
        assert [i for i, _ in got] == want
        assert np.allclose([s for _, s in got], np.sort(scores)[::-1][:10], atol=1e-5)
    store.close()
