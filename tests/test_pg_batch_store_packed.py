"""A bulk load writes a context (pair) vector as int8 at once, with no lookup a row (issue 23 s2, store/pg_bulk.py):
``batch_store`` knows the pair hashes from the nodes it wrote in the same transaction (their props name them); what a
reader gets back is what a pack gives (the same int8 bytes and scale); a vector whose node came in an earlier
transaction stays whole (packed later); a copy (migrate) holds as int8 at once only the rows the source held so
(exact: the digests hold); a strict erasure leaves none of the int8 bytes."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, pg_q8

pytestmark = pytest.mark.postgres
DIM = 16


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def forms(store) -> dict[str, str]:
    return {h: ("q8" if q else "halfvec") for h, q in store._read(f"SELECT {store._hash_sql('hash')}, q8 IS NOT NULL "
                                                                  "FROM vectors")}


def turns(n: int) -> list[Node]:
    """``n`` turns, each naming its pair vector (``props.pair_hash``) as a conversation's turn does."""
    return [Node(id=f"n{i}", kind="memory", namespace="ns", content=f"turn {i}", embed_text=f"turn {i}",
                 props={"pair_hash": content_hash(f"pair {i}"), "i": i}) for i in range(n)]


def test_batch_store_writes_the_context_vectors_of_its_own_turns_as_int8(pg_url):
    from agentcontext.memory import AgentMemory
    from agentcontext.workspace import Workspace

    rng = np.random.default_rng(1)
    ws = Workspace.open(url=pg_url)
    memory = AgentMemory(workspace=ws, namespace="load")
    dim = ws.embedder.dimension
    own, context = unit(rng, 12, dim), unit(rng, 12, dim)
    ids = memory.batch_store([{"content": f"turn number {i}", "conversation_id": "c", "vector": own[i],
                               "context_vector": context[i]} for i in range(12)])
    store = ws.store
    nodes = store.get_nodes(ids)
    pairs = {nodes[i].props["pair_hash"]: i for i in ids if nodes[i].props.get("pair_hash")}
    assert len(pairs) == 11  # every turn but the first follows another
    got = forms(store)
    assert {got[h] for h in pairs} == {"q8"}  # at once: no pack, no fold
    assert {got[nodes[i].embed_hash] for i in ids} == {"halfvec"}
    assert store._read(f"SELECT count(*) FROM vectors WHERE {pg_q8.UNPACKED}") == [(0,)]
    # the same bytes and scale a pack writes (pg_q8.quantize of the values as float16)
    held = dict(store._read(f"SELECT {store._hash_sql('hash')}, q8 FROM vectors WHERE q8 IS NOT NULL"))
    index = {n.props["pair_hash"]: int(n.content.split()[-1]) for n in nodes.values() if n.props.get("pair_hash")}
    for h, i in index.items():
        assert bytes(held[h]) == pg_q8.quantize(context[i][None, :])[0][0]
    assert store.pack()["packed"] == 0
    hits = memory.retrieve("turn number 5", max_results=3)
    assert hits
    ws.close()


def fill(store, rng, n: int) -> tuple[dict, dict, dict]:
    """``n`` turns (put alone), then their own vectors, their pair vectors and 5 vectors no node names (an embedding
    cache), put in a transaction of their own: all whole until a pack."""
    store.put_nodes(turns(n))
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, n))}
    context = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, n))}
    loose = {content_hash(f"cache {i}"): v for i, v in enumerate(unit(rng, 5))}
    store.put_vectors({**own, **context, **loose}, "m")
    return own, context, loose


def test_a_copy_of_a_packed_store_comes_out_packed_and_migrate_digests_hold(pg_server, tmp_path):
    """A copy (``import_rows``: migrate) is exact: a row whose values are an int8 row's (rebuilt by the export) is held
    as int8 again at once, with the same bytes and scale; a row the source holds whole stays whole (a SQLite source:
    every row), so both stores' digests are equal. Large enough that the copy rebuilds the HNSW index."""
    from agentcontext.migrate import migrate
    from agentcontext.store.pg_bulk import REBUILD_MIN

    rng = np.random.default_rng(2)
    n = REBUILD_MIN // 2 + 10
    source_url = pg_server.url()
    source = open_store(source_url)
    own, context, loose = fill(source, rng, n)
    assert source.pack()["packed"] == n + 5
    late = {content_hash(f"late {i}"): v for i, v in enumerate(unit(rng, 3))}
    source.put_vectors(late, "m")  # whole: no node named them in their transaction
    want = forms(source)
    assert want == {**{h: "halfvec" for h in own}, **{h: "q8" for h in [*context, *loose]},
                    **{h: "halfvec" for h in late}}
    packed = source._read("SELECT q8, q8_scale FROM vectors WHERE q8 IS NOT NULL ORDER BY hash")
    q = unit(rng, 1)[0]
    near = source.nearest(q, "m", 5, namespace="ns")
    source.close()

    copy_url = pg_server.url()
    assert migrate(source_url, copy_url)["digests_equal"]
    copy = open_store(copy_url)
    assert forms(copy) == want  # packed at once: no pack, no rewrite
    assert copy._read("SELECT q8, q8_scale FROM vectors WHERE q8 IS NOT NULL ORDER BY hash") == packed
    assert copy.nearest(q, "m", 5, namespace="ns") == near
    assert copy.pack()["packed"] == 3
    copy.close()

    sqlite_url = f"sqlite:///{tmp_path}/whole.db"  # every vector whole (float32): copied whole, digests equal
    lite = open_store(sqlite_url)
    fill(lite, np.random.default_rng(3), n)
    lite.close()
    from_lite = pg_server.url()
    assert migrate(sqlite_url, from_lite)["digests_equal"]
    copy = open_store(from_lite)
    assert set(forms(copy).values()) == {"halfvec"}
    copy.close()


def test_a_small_load_whose_nodes_came_earlier_stays_whole(pg_url):
    """The nodes in an earlier transaction and a small load (no index rebuild): no lookup a row, so written whole as
    before (a pack holds them as int8 later)."""
    rng = np.random.default_rng(3)
    store = open_store(pg_url)
    store.put_nodes(turns(10))
    context = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, 10))}
    store.put_vectors(context, "m")
    assert set(forms(store).values()) == {"halfvec"}
    assert store.pack()["packed"] == 10
    store.close()


def test_a_strict_erasure_leaves_none_of_a_context_vectors_int8_bytes(pg_url, pg_server):
    from agentcontext import AgentMemory, ContextGraph, VectorStore
    from agentcontext.erasure import erase_workspace_entity
    from agentcontext.workspace import Workspace

    from .bytescan import folder_files, new_secret

    rng = np.random.default_rng(4)
    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node("customer-7", "customer", content=f"Joe, card {secret}")
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    dim = ws.embedder.dimension
    own, context = unit(rng, 3, dim), unit(rng, 3, dim)
    ids = memory.batch_store([{"content": f"Joe said {i} about card {secret}", "conversation_id": "joe",
                               "metadata": {"entities": ["customer-7"]}, "vector": own[i],
                               "context_vector": context[i]} for i in range(3)])
    memory.store("an unrelated note")
    pairs = [n.props["pair_hash"] for n in ws.store.get_nodes(ids).values() if n.props.get("pair_hash")]
    held = ws.store._read(f"SELECT q8 FROM vectors WHERE {ws.store._hash_sql('hash')} = ANY(%s) AND q8 IS NOT NULL",
                          (pairs,))
    needles = {bytes(r[0]) for r in held}
    assert len(needles) == 2  # the second and third turns' context vectors, as int8 at once
    base = pg_server.data / "base"
    ws.store._db.execute("CHECKPOINT")

    def found() -> set[bytes]:
        files = [f.read_bytes() for f in folder_files(base) if f.is_file()]
        return {n for n in needles if any(n in data for data in files)}

    assert found() == needles, "each context vector's int8 bytes are in the heap before the erasure"
    receipt = erase_workspace_entity(ws, "customer-7", reason="GDPR", erase_mentions=True).to_dict()
    assert receipt["complete"] is True and receipt["physical"]["vacuum"] == "full"
    ws.store._db.execute("CHECKPOINT")
    assert found() == set()
    ws.close()


def test_a_context_vector_held_already_and_put_again_changed_takes_the_new_values(pg_url):
    """A pair vector the store holds (whole, from an earlier transaction), put again with other values in a transaction
    whose node names it: the row takes the new values (as int8: a context row), as a put did before; put again with
    the same values, it is left alone; changed again, it takes those."""
    rng = np.random.default_rng(5)
    store = open_store(pg_url)
    first, second, third = unit(rng, 3)
    h = content_hash("pair 0")
    store.put_vectors({h: first}, "m")
    with store.transaction():
        store.put_nodes(turns(1))
        store.put_vectors({h: second}, "m")
    assert forms(store) == {h: "q8"}
    got = store.get_vectors([h], "m")[h]
    assert np.abs(got - second).max() <= np.abs(second).max() / 254 + 1e-3
    xmin = store._read("SELECT xmin::text FROM vectors")
    for again, values in enumerate((second, third)):
        with store.transaction():  # the node written again (a new version), naming its pair vector
            store.put_nodes([Node(id="n0", kind="memory", namespace="ns", content="turn 0", embed_text="turn 0",
                                  props={"pair_hash": h, "again": again})])
            store.put_vectors({h: values}, "m")
        if values is second:
            assert store._read("SELECT xmin::text FROM vectors") == xmin  # the same bytes: no new row version
    got = store.get_vectors([h], "m")[h]
    assert np.abs(got - third).max() <= np.abs(third).max() / 254 + 1e-3
    assert store._read("SELECT count(*) FROM vectors WHERE vector IS NULL AND (searched OR pending)") == [(0,)]
    store.close()
