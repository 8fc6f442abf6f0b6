"""PostgreSQL bytes per memory (issue 23 s2): vectors are held as ``halfvec`` (2 bytes a dimension) and their HNSW
indexes are built over halfvec, in a new store and, by migration 5, in a store of step 4 (its float32 vectors
converted in place); a value float16 cannot hold is refused naming its vector, nothing written."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import StoreError, ValidationError
from agentcontext.model import Node, content_hash
from agentcontext.store import open_store
from agentcontext.store.migrations import Migrations
from agentcontext.store.pg_vectors import ann_index_name

pytestmark = pytest.mark.postgres


def unit(rng, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def column_type(store) -> str:
    return store._read("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'vectors'::regclass "
                       "AND attname = 'vector'")[0][0]


def index_def(store, model: str, dim: int) -> str:
    return store._read("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = %s",
                       (ann_index_name(model, dim),))[0][0]  # index names repeat in other tests' schemas


def half(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=np.float32).astype(np.float16).astype(np.float32)


def test_a_new_store_holds_vectors_as_halfvec_and_searches_them_over_a_halfvec_index(pg_url):
    store = open_store(pg_url)
    rng = np.random.default_rng(3)
    vectors = unit(rng, 40, 16)
    store.put_nodes([Node(id=f"n{i}", kind="doc", namespace="ns", content=f"text {i}", embed_text=f"text {i}")
                     for i in range(40)])
    by_hash = {content_hash(f"text {i}"): v for i, v in enumerate(vectors)}
    store.put_vectors(by_hash, "m")
    assert column_type(store) == "halfvec"
    assert "halfvec_ip_ops" in index_def(store, "m", 16) and "searched" in index_def(store, "m", 16)
    got = store.get_vectors(list(by_hash), "m")
    assert all(got[h].dtype == np.float32 and np.array_equal(got[h], half(v)) for h, v in by_hash.items())
    assert store._read("SELECT max(pg_column_size(vector)) FROM vectors")[0][0] <= 4 + 4 + 2 * 16  # float32: 4 + 4 + 64
    # scores are the stored (float16) values against the float32 query, in float32: what the client would compute
    q = vectors[7]
    sims = store.similarities(q, "m", list(by_hash))
    assert all(abs(sims[h] - float(half(v) @ q)) < 1e-5 for h, v in by_hash.items())
    top = store.nearest(q, "m", 3, namespace="ns")
    assert top[0][0] == "n7" and abs(top[0][1] - float(half(vectors[7]) @ q)) < 1e-5
    store.close()


def test_a_value_float16_cannot_hold_is_refused_naming_its_vector_and_nothing_is_written(pg_url):
    store = open_store(pg_url)
    ok, bad = np.ones(4, dtype=np.float32) / 2, np.array([0.5, 70000.0, 0, 0], dtype=np.float32)
    with pytest.raises(ValidationError, match="hb.*65504"):
        store.put_vectors({"ha": ok, "hb": bad}, "m")
    with pytest.raises(ValidationError, match="hb.*65504"):
        store.import_rows("vectors", iter([[{"hash": "ha", "model": "m", "dim": 4, "vector": ok},
                                            {"hash": "hb", "model": "m", "dim": 4, "vector": bad}]]))
    assert store.get_vectors(["ha", "hb"], "m") == {}
    store.put_vectors({"ha": np.array([65504.0, -65504.0, 1e-9, 0.1], dtype=np.float32)}, "m")  # the edges fit
    assert store.get_vectors(["ha"], "m")["ha"].tolist() == [65504.0, -65504.0, 0.0, np.float16(0.1).item()]
    store.close()


def step4_store(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step4(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:4])

    return Step4(pg_url)


def put_as_step_4_did(store, by_hash: dict, model: str, dim: int) -> None:
    """float32 rows (``searched`` where a live node's text has the vector) and an HNSW index over vector(dim)."""
    db = store._db
    for h, v in by_hash.items():
        db.execute("INSERT INTO vectors(hash, model, dim, vector, searched) VALUES (%s, %s, %s, %s, EXISTS (SELECT 1 "
                   "FROM nodes WHERE embed_hash = %s))", (h, model, dim, np.asarray(v, dtype=np.float32), h))
    db.execute(f"CREATE INDEX {ann_index_name(model, dim)} ON vectors USING hnsw ((vector::vector({dim})) "
               f"vector_ip_ops) WHERE model = '{model}' AND dim = {dim} AND searched")


def test_step_5_converts_a_step_4_stores_float32_vectors_and_rebuilds_their_index_over_halfvec(pg_url):
    old = step4_store(pg_url)
    assert old.schema_version() == 4 and column_type(old) == "vector"
    rng = np.random.default_rng(5)
    vectors = unit(rng, 30, 8)
    old.put_nodes([Node(id=f"n{i}", kind="doc", namespace="ns", content=f"t{i}", embed_text=f"t{i}")
                   for i in range(30)])
    by_hash = {content_hash(f"t{i}"): v for i, v in enumerate(vectors)}
    by_hash["context"] = unit(rng, 1, 8)[0]  # no node's text: held, not searched
    put_as_step_4_did(old, by_hash, "m", 8)
    assert "vector_ip_ops" in index_def(old, "m", 8)
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= 5 and column_type(store) == "halfvec"
    assert "halfvec_ip_ops" in index_def(store, "m", 8) and "searched" in index_def(store, "m", 8)
    got = store.get_vectors(list(by_hash), "m")
    assert all(np.array_equal(got[h], half(v)) for h, v in by_hash.items() if h != "context")
    # the context vector is held as int8 from step 9 (pg_q8): within half a step of its scale, and float16's rounding
    context = by_hash["context"]
    assert np.abs(got["context"] - context).max() <= np.abs(context).max() / 127 / 2 + 1e-3
    assert store.nearest(vectors[4], "m", 1, namespace="ns")[0][0] == "n4"
    assert dict(store._read("SELECT actx_hex(hash), searched FROM vectors WHERE hash = actx_hash('context')")) == {
        "context": False}  # keyed by the hash's bytes from step 10 on (store/pg_hash.py)
    assert store.check_integrity() == "ok"
    store.close()


def test_step_5_refuses_a_store_holding_a_value_float16_cannot_hold_and_leaves_it_at_step_4(pg_url):
    old = step4_store(pg_url)
    put_as_step_4_did(old, {"big": np.array([1.0, 1e6], dtype=np.float32)}, "m", 2)
    old.close()
    with pytest.raises(StoreError, match="65504"):
        open_store(pg_url)
    again = step4_store(pg_url)
    assert again.schema_version() == 4 and column_type(again) == "vector"
    assert again.get_vectors(["big"], "m")["big"].tolist() == [1.0, 1e6]
    again.close()


TITLED = [Node(id="a", kind="memory", namespace="ns", title="Ann", content="hello there",
               embed_text="Ann: hello there"),
          Node(id="b", kind="doc", namespace="ns", title="Bob", content="plain body", embed_text="plain body"),
          Node(id="c", kind="doc", namespace="ns", title="Cy", content="body", embed_text="Cy | body | tags"),
          Node(id="d", kind="doc", namespace="ns", title="", content="untitled", embed_text="untitled"),
          Node(id="e", kind="doc", namespace="ns", title="Eve", content="not embedded")]


def embed_texts_of(store) -> dict[str, str | None]:
    rows, _ = store.export_rows("nodes", None, 100)
    return {r["id"]: r["embed_text"] for r in rows}


def test_a_nodes_embed_text_is_held_once_when_it_is_its_content_or_its_title_and_content(pg_url, tmp_path):
    from agentcontext.store import SQLiteStore

    store = open_store(pg_url)
    store.put_nodes(TITLED)
    held = dict(store._read("SELECT id, embed_text FROM nodes"))
    assert held == {"a": None, "b": None, "c": "Cy | body | tags", "d": None, "e": None}
    want = {"a": "Ann: hello there", "b": "plain body", "c": "Cy | body | tags", "d": "untitled", "e": None}
    assert embed_texts_of(store) == want  # read back whole (export, migrate)
    assert sorted(t for _, t in store.missing_vectors("m")) == sorted(t for t in want.values() if t)  # reindex
    store.put_nodes([Node(id="a", kind="memory", namespace="ns", title="Ann", content="hello again",
                          embed_text="Ann: hello again")])  # an update: held once too
    assert store._read("SELECT embed_text FROM nodes WHERE id = 'a'") == [(None,)]
    assert embed_texts_of(store)["a"] == "Ann: hello again"
    copy = SQLiteStore(tmp_path / "copy.db")  # out to SQLite and back into a new schema: the same texts
    for table in ("nodes", "node_versions"):
        copy.import_rows(table, [store.export_rows(table, None, 100)[0]])
    back = open_store(pg_url.rsplit("=", 1)[0] + "=back_" + pg_url.rsplit("=", 1)[1])
    for table in ("nodes", "node_versions"):
        back.import_rows(table, [copy.export_rows(table, None, 100)[0]])
    assert embed_texts_of(back) == embed_texts_of(store) == embed_texts_of(copy)
    assert dict(back._read("SELECT id, embed_text FROM nodes"))["a"] is None
    for s in (store, copy, back):
        s.close()


def test_step_6_holds_a_step_5_stores_embed_texts_once(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step5(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:5])

    old = Step5(pg_url)
    old.put_nodes(TITLED)
    old._db.execute("UPDATE nodes SET embed_text = %s WHERE id = 'a'", ("Ann: hello there",))  # as step 5 wrote it
    old._db.execute("UPDATE nodes SET embed_text = content WHERE id IN ('b', 'd')")
    old.close()
    store = open_store(pg_url)
    assert store.schema_version() >= 6  # step 6 applied (later steps too)
    assert dict(store._read("SELECT id, embed_text FROM nodes")) == {
        "a": None, "b": None, "c": "Cy | body | tags", "d": None, "e": None}
    assert embed_texts_of(store) == {"a": "Ann: hello there", "b": "plain body", "c": "Cy | body | tags",
                                     "d": "untitled", "e": None}
    assert store.check_integrity() == "ok" and store.text_search("hello", namespace="ns")[0][0] == "a"
    store.close()
