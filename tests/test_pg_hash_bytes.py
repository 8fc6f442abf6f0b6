"""Vectors keyed by the hash's bytes on PostgreSQL (store/pg_hash.py, migration 10, issue 23 s2): an upgrade from
step 9 keeps every vector row readable and identical through the API (get, load, export, nearest, similarities,
missing and counted vectors, a packed context vector too); a bulk import, a row write and a put of vectors keyed by
any text land bytes and read back as the same text."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, pg_hash
from agentcontext.store.migrations import Migrations

pytestmark = pytest.mark.postgres
DIM = 16
# texts that are no SHA-256 digest: short, 31 bytes (one NUL would make them 32, a digest's length), 32, upper case
ODD = ["h1", "x" * 31, "y" * 32, "A" * 64, "é" * 20, "", "ab" * 31]


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def step9_store(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step9(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:9])

    return Step9(pg_url)


def fill(store, rng) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """30 nodes with their own vectors, 10 context vectors no node's text has, and vectors keyed by odd texts."""
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", title="Ann" if i % 2 else "Bob",
                          content=f"turn {i}", embed_text=f"turn {i}") for i in range(30)])
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, 30))}
    other = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, 10))}
    other.update({h: v for h, v in zip(ODD, unit(rng, len(ODD)))})
    store.put_vectors({**own, **other}, "m")
    return own, other


def held(store) -> dict[str, int]:
    """Each stored key as its text, with its width in bytes."""
    return dict(store._read("SELECT actx_hex(hash), octet_length(hash) FROM vectors"))


def test_the_python_and_sql_forms_agree_and_give_every_text_back(pg_url):
    store = open_store(pg_url)
    texts = [content_hash("a"), *ODD, "\x1f", "0" * 64]
    rows = store._read("SELECT x, actx_hash(x), actx_hex(actx_hash(x)) FROM unnest(%s::text[]) x", [texts])
    for text, raw, back in rows:
        assert bytes(raw) == pg_hash.to_bytes(text) and back == text == pg_hash.from_bytes(bytes(raw))
    widths = {t: len(pg_hash.to_bytes(t)) for t in texts}
    assert widths[content_hash("a")] == 32 and all(w != 32 for t, w in widths.items() if len(t) != 64 or t[0] == "A")
    store.close()


def test_the_checks_and_texts_of_many_keys_at_once_are_those_of_each_key():
    """``all_digests`` (one check of the joined text: issue 23 s3, ~1,500 keys a query) says what the check of each
    key says, and ``texts`` (the digests' hex made in one call) gives each key's ``from_bytes``, for lists of
    digests with an odd text among them (a 63 and a 65 character text join to twice 64, upper case, a space)."""
    digests = [content_hash(f"t{i}") for i in range(5)]
    odd = [*ODD, "a" * 63 + "b" * 65, "a" * 63, " " * 64, "g" * 64, "é" * 64, "0" * 63 + "\n"]
    for keys in ([], digests, *([*digests, x] for x in odd), [*digests[:1], "a" * 63, "b" * 65]):
        assert pg_hash.all_digests(keys) == all(pg_hash._DIGEST.fullmatch(k) for k in keys), keys
        raw = [pg_hash.to_bytes(k) for k in keys]
        assert pg_hash.texts(raw) == [pg_hash.from_bytes(b) for b in raw] == keys


def test_an_upgrade_from_step_9_keeps_every_vector_readable_and_identical(pg_url, tmp_path):
    rng = np.random.default_rng(10)
    old = step9_store(pg_url)
    assert old.schema_version() == 9 and not old._hb
    own, other = fill(old, rng)
    old.fold()
    old.pack()  # the context vectors as int8 (migration 9)
    queries = unit(rng, 5)
    every = list(own) + list(other)
    near = [old.nearest(q, "m", 5, namespace="ns") for q in queries]
    sims = [old.similarities(q, "m", every) for q in queries]
    got = old.get_vectors(every, "m")
    ids, loaded = old.load_vectors("m", "ns")
    exported = list(old.export_rows("vectors", None, 1000)[0])
    counted, missing = old.count_vectors("m", "ns"), old.missing_vectors("m")
    old.put_nodes([Node(id="late", kind="memory", namespace="ns", content="late turn", embed_text="late turn")])
    missing_late = old.missing_vectors("m")
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= 10 and store._hb  # and the steps after 10
    widths = held(store)
    assert widths.keys() == set(every) and all(widths[h] == 32 for h in list(own) + list(other)[:10])
    assert [store.nearest(q, "m", 5, namespace="ns") for q in queries] == near
    assert [store.similarities(q, "m", every) for q in queries] == sims
    digests = list(own) + list(other)[:10]  # only digests: sent as one text, sliced in the server
    for q, before in zip(queries, sims):
        scored = store.similarities(q, "m", digests)
        want = {h: before[h] for h in digests}
        assert scored.keys() == want.keys()
        assert scored == pytest.approx(want, rel=1e-5, abs=1e-7)  # an int8 row's float32 sum depends on the batch
    again = store.get_vectors(every, "m")
    assert again.keys() == got.keys() and all(np.array_equal(again[h], got[h]) for h in got)
    ids2, loaded2 = store.load_vectors("m", "ns")
    assert ids2 == ids and np.array_equal(loaded2, loaded)
    export = sorted(store.export_rows("vectors", None, 1000)[0], key=lambda r: (r["hash"], r["model"]))
    before = sorted(exported, key=lambda r: (r["hash"], r["model"]))
    assert [(r["hash"], r["model"], r["dim"]) for r in export] == [(r["hash"], r["model"], r["dim"]) for r in before]
    assert all(np.array_equal(a["vector"], b["vector"]) for a, b in zip(export, before))
    assert store.count_vectors("m", "ns") == counted and missing == [] and store.missing_vectors("m") == missing_late
    # pages of an export follow the key (bytes) with text cursors, and give every row once
    paged, after = [], None
    while True:
        rows, after = store.export_rows("vectors", after, 7)
        paged += [r["hash"] for r in rows]
        if after is None:
            break
    assert sorted(paged) == sorted(every) and len(paged) == len(every)
    # deletes and a copy into another store by the text hashes
    assert store.delete_vectors(ODD[:2]) == 2 and store.get_vectors(ODD[:2], "m") == {}
    store.close()


def test_a_bulk_import_a_row_write_and_a_put_land_bytes(pg_url, pg_server):
    from agentcontext import AgentMemory
    from agentcontext.migrate import migrate
    from agentcontext.workspace import Workspace

    store = open_store(pg_url)
    rng = np.random.default_rng(11)
    own, other = fill(store, rng)  # put_nodes (rows) and put_vectors
    widths = held(store)
    assert all(widths[h] == 32 for h in own) and widths["h1"] == 3 and widths["x" * 31] == 33
    assert store._read("SELECT count(*) FROM vectors WHERE pending")[0][0] == 30  # found by their nodes' hashes
    store.fold()
    assert store._read("SELECT count(*) FROM vectors WHERE searched")[0][0] == 30
    # a whole-store copy into an empty schema (Store.import_rows: the bulk path) keeps every key's text
    copy_url = pg_server.url()
    assert migrate(pg_url, copy_url)["digests_equal"]
    target = open_store(copy_url)
    assert held(target) == held(store)
    q = unit(rng, 1)[0]
    assert target.nearest(q, "m", 5, namespace="ns") == store.nearest(q, "m", 5, namespace="ns")
    target.close()
    # batch_store's bulk path (vectors supplied: each memory's own and its turn's context vector)
    ws = Workspace(store)
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    vectors, contexts = unit(rng, 20, 384), unit(rng, 20, 384)
    ids = memory.batch_store([{"id": f"b{i}", "content": f"fact {i}", "conversation_id": "c1", "vector": vectors[i],
                               "context_vector": contexts[i]} for i in range(20)])
    hashes = [store.get_node(i).embed_hash for i in ids]
    widths = held(store)
    assert len(ids) == 20 and all(widths[h] == 32 for h in hashes)
    got = store.get_vectors(hashes, ws.model_name)
    assert all(np.allclose(got[h], v, atol=1e-3) for h, v in zip(hashes, vectors))
    assert len(widths) == 40 + len(ODD) + 20 + 19  # 19 context vectors: a first turn has no pair
    assert all(w == 32 for h, w in widths.items() if h not in ODD)
    ws.close()


def test_step_10_builds_an_older_graph_once_with_the_graph_a_store_now_builds(pg_url):
    """The rewrite of step 10 would build an HNSW index of an older graph as it was, and step 11 build it again (a
    1,000,000-memory store: minutes each): step 10 drops it before the rewrite and builds the current graph once."""
    from agentcontext.store.pg_vectors import (HNSW_EF_CONSTRUCTION, HNSW_M, ann_graph, ann_index_name,
                                               ann_predicate)
    from agentcontext.store.postgres import PostgresStore

    class Step10(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:10])

    rng = np.random.default_rng(11)
    old = step9_store(pg_url)
    fill(old, rng)
    old.fold()
    index, predicate = ann_index_name("m", DIM), ann_predicate(old._db, "m", DIM)
    old._db.execute(f"DROP INDEX {index}")
    old._db.execute(f"CREATE INDEX {index} ON vectors USING hnsw ((vector::halfvec({DIM})) halfvec_ip_ops) "
                    f"WITH (m = 16, ef_construction = 64) WHERE {predicate}")
    query = unit(rng, 1)[0]
    near = old.nearest(query, "m", 5, namespace="ns")
    old.close()

    store = Step10(pg_url)
    assert store.schema_version() == 10
    assert ann_graph(store._db, "m", DIM) == (HNSW_M, HNSW_EF_CONSTRUCTION)
    assert store.nearest(query, "m", 5, namespace="ns") == near
    store.close()
