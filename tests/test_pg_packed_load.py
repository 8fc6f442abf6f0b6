"""Context vectors a bulk load writes whole, and the step that packs them (migration 15, store/pg_bulk.py,
store/pg_q8.py, issue 23 s2): after a pack, what every reader gets back is the same as the code before's pack gave
(the same int8 bytes and scales); the upgrade packs the rows
an older load left whole, keeps every row and search result, rewrites ``vectors`` compact when they were many, and a
crash mid-upgrade leaves the step before whole; a bad vector in a bulk load still refuses the batch."""
from __future__ import annotations


import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, transfer
from agentcontext.store.migrations import Migrations

from .upgrade_crash import kill_mid_step

pytestmark = pytest.mark.postgres
DIM = 16


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def close(got: np.ndarray, want: np.ndarray) -> bool:
    """Within half an int8 step of the vector's scale, plus float16's rounding of the rebuilt values."""
    return bool(np.abs(got - want).max() <= np.abs(want).max() / 127 / 2 + 1e-3)


def mine() -> int:
    """This step's number (the lead renumbers steps at a merge)."""
    from agentcontext.store.postgres import PostgresStore

    return next(m.version for m in PostgresStore.MIGRATIONS if m.apply.__name__ == "packed_context_vectors")


def before_store(url):
    """A store pinned to the step before this one, writing context vectors whole as the bulk path did before."""
    from agentcontext.store.postgres import PostgresStore

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:mine() - 1])

    store = Before(url)
    store._q8 = False  # the loader of the code before this step: every row's values whole (pg_bulk.VectorLoader)
    return store


def nodes() -> list[Node]:
    """40 turns, each naming its pair vector (``props.pair_hash``) as a conversation's turn does."""
    return [Node(id=f"n{i}", kind="memory", namespace="ns", content=f"turn {i}", embed_text=f"turn {i}",
                 props={"pair_hash": content_hash(f"pair {i}"), "i": i}) for i in range(40)]


def fill(store, rng) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """40 nodes with their own vectors, and 60 context vectors no node's text has: 40 the nodes' pair vectors."""
    store.put_nodes(nodes())
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, 40))}
    context = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, 60))}
    store.put_vectors({**own, **context}, "m")
    return own, context


def forms(store) -> dict[str, str]:
    return {h: ("q8" if q else "halfvec") for h, q in store._read(f"SELECT {store._hash_sql('hash')}, q8 IS NOT NULL "
                                                                  "FROM vectors")}


def filenode(store) -> int:
    return store._read("SELECT relfilenode FROM pg_class WHERE oid = 'vectors'::regclass")[0][0]


def view(store, own, context, queries) -> dict:
    everything = list(own) + list(context)
    return {"near": [store.nearest(q, "m", 5, namespace="ns") for q in queries],
            "sims": [store.similarities(q, "m", everything) for q in queries],
            "values": store.get_vectors(everything, "m"),
            "count": store._read("SELECT count(*) FROM vectors")[0][0]}


def test_a_bulk_load_writes_context_vectors_whole_and_a_pack_holds_them_as_the_code_before_did(pg_url, pg_server):
    rng = np.random.default_rng(4)
    packed_later = before_store(pg_url)
    own, context = fill(packed_later, rng)
    assert set(forms(packed_later).values()) == {"halfvec"}  # the code before: whole until a pack
    packed_later._q8 = True
    assert packed_later.pack()["packed"] == 60
    queries = unit(rng, 4)
    want = view(packed_later, own, context, queries)
    packed_later_rows = packed_later._read("SELECT q8, q8_scale FROM vectors WHERE q8 IS NOT NULL ORDER BY hash")
    packed_later.close()

    other = open_store(pg_server.url())  # this code, a store of its own
    transfer_rows = [[{"hash": h, "model": "m", "dim": DIM, "vector": v} for h, v in {**own, **context}.items()]]
    other.put_nodes(nodes())
    other.import_rows("vectors", transfer_rows)  # the bulk import path, into an empty vectors table
    # written whole (a lookup a row through the props' GIN index to find the pair vectors cost 2.5 ms a row at
    # 1,000,000 memories: reverted); a pack then holds the 60 context rows as int8
    assert set(forms(other).values()) == {"halfvec"}
    assert other.pack()["packed"] == 60
    got = view(other, own, context, queries)
    assert got["count"] == want["count"] == 100
    assert got["near"] == want["near"]
    assert all(np.array_equal(got["values"][h], want["values"][h]) for h in own)
    # the same int8 bytes and scale as a pack writes: the same values and scores read back
    assert all(np.array_equal(got["values"][h], want["values"][h]) and close(got["values"][h], v)
               for h, v in context.items())
    assert got["sims"] == want["sims"]
    assert other._read("SELECT q8, q8_scale FROM vectors WHERE q8 IS NOT NULL ORDER BY hash") == packed_later_rows
    rows = {r["hash"]: r["vector"] for page in transfer.pages(other, "vectors") for r in page}  # an export
    assert rows.keys() == set(own) | set(context)
    assert all(np.array_equal(rows[h], want["values"][h]) for h in rows)
    assert other.pack()["packed"] == 0
    other.close()


def test_a_bad_vector_in_a_bulk_load_still_refuses_the_batch(pg_url):
    rng = np.random.default_rng(5)
    store = open_store(pg_url)
    store.put_nodes([Node(id="n0", kind="memory", namespace="ns", content="turn 0", embed_text="turn 0")])
    bad = unit(rng, 3)
    bad[2, 4] = np.nan
    rows = [{"hash": content_hash(f"pair {i}"), "model": "m", "dim": DIM, "vector": v} for i, v in enumerate(bad)]
    with pytest.raises(ValidationError, match=content_hash("pair 2")):
        store.import_rows("vectors", [rows])
    assert store._read("SELECT count(*) FROM vectors") == [(0,)]
    store.close()


def test_the_upgrade_packs_what_a_load_wrote_whole_and_keeps_every_row_and_search_result(pg_url):
    rng = np.random.default_rng(14)
    old = before_store(pg_url)
    own, context = fill(old, rng)
    old.fold()
    queries = unit(rng, 4)
    before = view(old, own, context, queries)
    was = filenode(old)
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= mine()
    assert forms(store) == {**{h: "halfvec" for h in own}, **{h: "q8" for h in context}}
    assert filenode(store) != was  # 60 of 100 rows packed: rewritten, no old row versions left behind
    after = view(store, own, context, queries)
    assert after["count"] == before["count"] == 100
    assert after["near"] == before["near"]
    assert all(np.array_equal(after["values"][h], before["values"][h]) for h in own)
    assert all(close(after["values"][h], v) for h, v in context.items())
    assert all(after["sims"][i][h] == before["sims"][i][h] for i in range(len(queries)) for h in own)
    assert store.check_integrity() == "ok"
    store.close()


def test_a_crash_mid_upgrade_leaves_the_step_before_whole(pg_url, tmp_path):
    rng = np.random.default_rng(15)
    old = before_store(pg_url)
    own, context = fill(old, rng)
    queries = unit(rng, 3)
    before = view(old, own, context, queries)
    old.close()
    kill_mid_step(pg_url, "packed_context_vectors", tmp_path)
    held = before_store(pg_url)
    assert held.schema_version() == mine() - 1
    assert set(forms(held).values()) == {"halfvec"}
    got = view(held, own, context, queries)
    assert got["near"] == before["near"] and got["count"] == before["count"]
    assert all(np.array_equal(got["values"][h], before["values"][h]) for h in got["values"])
    held.close()
    store = open_store(pg_url)  # the next open upgrades it whole
    assert store.schema_version() >= mine()
    assert forms(store) == {**{h: "halfvec" for h in own}, **{h: "q8" for h in context}}
    store.close()


def test_vectors_put_before_their_nodes_keep_their_values_whole(pg_url):
    """An embedding cache filled before the nodes (a pair's text may become a node's own): nothing is packed on the
    way, so a node's own vector is its values as sent (float16), never rebuilt from int8 bytes."""
    rng = np.random.default_rng(16)
    store = open_store(pg_url)
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, 40))}
    store.put_vectors(own, "m")
    assert set(forms(store).values()) == {"halfvec"}
    store.put_nodes(nodes())
    got = store.get_vectors(list(own), "m")
    assert all(np.array_equal(got[h], v.astype(np.float16).astype(np.float32)) for h, v in own.items())
    store.close()
