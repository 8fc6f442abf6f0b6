"""Context vectors held as int8 on PostgreSQL (store/pg_q8.py, migration 9, issue 23 s2): the vectors no index walks
(a conversation turn's pair vector, read by hash) keep one byte a dimension after the upgrade and after a pack; every
reader gets their values back within half a step of their scale; a row whose text becomes a node's gets them whole
again; an upgrade from step 8 keeps every row and every search result."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext import access
from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, pg_q8
from agentcontext.store.migrations import Migrations

pytestmark = pytest.mark.postgres
DIM = 16


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def close(got: np.ndarray, want: np.ndarray) -> bool:
    """Within half an int8 step of the vector's scale, plus float16's rounding of the rebuilt values."""
    return bool(np.abs(got - want).max() <= np.abs(want).max() / 127 / 2 + 1e-3)


def score_bound(v: np.ndarray) -> float:
    """How far an inner product with a unit query can move: each value by half a step, summed over |q| <= 1."""
    return float(np.sqrt(v.size) * np.abs(v).max() / 127 / 2 + 1e-3)


def hexed(store) -> str:
    """``vectors.hash`` as its text (bytes from migration 10 on: pg_hash)."""
    return store._hash_sql("hash")


def forms(store) -> dict[str, str]:
    rows = store._read(f"SELECT {hexed(store)}, q8 IS NOT NULL FROM vectors")
    return {h: ("q8" if q else "halfvec") for h, q in rows}


def step8_store(pg_url):
    from agentcontext.store.postgres import PostgresStore

    class Step8(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:8])

    return Step8(pg_url)


def fill(store, rng) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """30 nodes with their own vectors, and 20 context vectors no node's text has."""
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", title="Ann" if i % 2 else "Bob",
                          content=f"turn {i}", embed_text=f"turn {i}") for i in range(30)])
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, 30))}
    context = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, 20))}
    store.put_vectors({**own, **context}, "m")
    return own, context


def test_an_upgrade_from_step_8_keeps_every_row_and_search_result_and_holds_context_vectors_as_int8(pg_url):
    rng = np.random.default_rng(9)
    old = step8_store(pg_url)
    assert old.schema_version() == 8
    own, context = fill(old, rng)
    old.fold()
    queries = unit(rng, 5)
    near = [old.nearest(q, "m", 5, namespace="ns") for q in queries]
    sims = [old.similarities(q, "m", list(context) + list(own)) for q in queries]
    rows = old._read("SELECT count(*) FROM vectors")[0][0]
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= 10  # 9, then 10 (vectors keyed by bytes: test_pg_hash_bytes.py) and after
    assert store._read("SELECT count(*) FROM vectors")[0][0] == rows == 50
    assert forms(store) == {**{h: "halfvec" for h in own}, **{h: "q8" for h in context}}
    assert [store.nearest(q, "m", 5, namespace="ns") for q in queries] == near  # own vectors untouched
    got = store.get_vectors(list(own) + list(context), "m")
    assert all(np.array_equal(got[h], v.astype(np.float16).astype(np.float32)) for h, v in own.items())
    assert all(close(got[h], v) for h, v in context.items())
    for q, before in zip(queries, sims):
        after = store.similarities(q, "m", list(context) + list(own))
        assert after.keys() == before.keys()
        assert all(after[h] == before[h] for h in own)
        assert all(abs(after[h] - before[h]) <= score_bound(v) for h, v in context.items())
    assert store.check_integrity() == "ok"
    store.close()


def test_a_pack_holds_new_context_vectors_as_int8_and_their_text_becoming_a_nodes_gets_them_whole(pg_url):
    rng = np.random.default_rng(3)
    store = open_store(pg_url)
    own, context = fill(store, rng)
    assert set(forms(store).values()) == {"halfvec"}  # written whole: packed later, off the write path
    assert store.pack()["packed"] == 20 and store.pack()["packed"] == 0
    assert forms(store) == {**{h: "halfvec" for h in own}, **{h: "q8" for h in context}}
    # a context vector's text becomes a node's: its values come back from the bytes, and it is searched
    first = next(iter(context))
    store.put_nodes([Node(id="late", kind="memory", namespace="ns", content="pair 0", embed_text="pair 0")])
    assert forms(store)[first] == "halfvec"
    store.fold()
    assert store.nearest(context[first], "m", 1, namespace="ns")[0][0] == "late"
    # put again with a node behind it: written whole
    second = list(context)[1]
    store.put_nodes([Node(id="later", kind="memory", namespace="ns", content="pair 1", embed_text="pair 1")])
    store.put_vectors({second: context[second]}, "m")
    assert forms(store)[second] == "halfvec"
    assert np.array_equal(store.get_vectors([second], "m")[second], context[second].astype(np.float16)
                          .astype(np.float32))
    # put again without one: left as it is (the same text, the same values)
    third = list(context)[2]
    store.put_vectors({third: context[third]}, "m")
    assert forms(store)[third] == "q8"
    assert store._read("SELECT count(*) FROM vectors WHERE vector IS NULL AND (searched OR pending)") == [(0,)]
    store.close()


def test_retrieve_and_export_read_packed_context_vectors(pg_url, tmp_path):
    from agentcontext.memory import AgentMemory
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=pg_url)
    memory = AgentMemory(workspace=ws, namespace="q8")
    topics = ["the garden needs water", "a trip to the mountains", "bread baked on sunday", "the cat sleeps late"]
    memory.batch_store([{"content": f"{topics[i % len(topics)]} (note {i})", "conversation_id": f"c{i % 3}"}
                        for i in range(24)])
    assert "q8" in forms(ws.store).values()  # the context vectors written as int8 by batch_store itself
    assert ws.store._read(f"SELECT count(*) FROM vectors WHERE {pg_q8.UNPACKED}") == [(0,)]
    done = access.store_fold(ws)
    assert done["packed"] == 0
    hits = memory.retrieve("when does the cat sleep", max_results=5)
    assert hits and "cat" in hits[0]["content"]
    from agentcontext.store import transfer

    rows = [r for page in transfer.pages(ws.store, "vectors") for r in page]
    assert len(rows) == ws.store._read("SELECT count(*) FROM vectors")[0][0]
    assert all(r["vector"].shape == (r["dim"],) and np.isfinite(r["vector"]).all() for r in rows)
    ws.close()


def test_scores_read_the_bytes_as_the_server_rebuilds_them(pg_url):
    store = open_store(pg_url)
    rng = np.random.default_rng(4)
    _, context = fill(store, rng)
    store.pack()
    q = unit(rng, 1)[0]
    raw = store._vector_rows(f"SELECT {hexed(store)}, q8, q8_scale FROM vectors WHERE q8 IS NOT NULL", [])
    mine = pg_q8.scores(q, raw)
    server = dict(store._read(f"SELECT {hexed(store)}, -({pg_q8.value_sql()}::vector <#> %s::vector) FROM vectors "
                              "WHERE q8 IS NOT NULL", [q]))
    assert mine.keys() == server.keys() == context.keys()
    assert max(abs(mine[h] - server[h]) for h in mine) < 1e-3  # the server's rebuilt values are float16
    assert all(abs(mine[h] - float(v @ q)) <= score_bound(v) for h, v in context.items())
    store.close()
