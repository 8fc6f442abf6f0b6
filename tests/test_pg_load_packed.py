"""A bulk load writes a context (pair) vector as int8 at once, with no lookup a row (issue 23 s2, store/pg_bulk.py):
``batch_store`` knows the pair hashes from the nodes it wrote in the same transaction (their props name them), and a
load that rebuilds the HNSW index (large beside the store: a first load, a copy, the 1M build) reads every node's pair
hash once; what a reader gets back is what a pack gives (the same int8 bytes and scale); a vector whose node came in
an earlier, small transaction stays whole (packed later); a strict erasure leaves none of the int8 bytes."""
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


def test_a_load_that_rebuilds_the_index_packs_the_pair_vectors_every_node_names(pg_url):
    """``import_rows`` of the vectors after the nodes (a copy, the 1M build: one transaction a table), large enough
    that the HNSW index is built after the rows: the pair vectors the nodes name land as int8, a vector no node names
    (an embedding cache) and the nodes' own vectors whole."""
    from agentcontext.store.pg_bulk import REBUILD_MIN

    rng = np.random.default_rng(2)
    n = REBUILD_MIN // 2 + 10
    store = open_store(pg_url)
    store.put_nodes(turns(n))
    own = {content_hash(f"turn {i}"): v for i, v in enumerate(unit(rng, n))}
    context = {content_hash(f"pair {i}"): v for i, v in enumerate(unit(rng, n))}
    loose = {content_hash(f"cache {i}"): v for i, v in enumerate(unit(rng, 5))}
    rows = [{"hash": h, "model": "m", "dim": DIM, "vector": v} for h, v in {**own, **context, **loose}.items()]
    store.import_rows("vectors", [rows[:REBUILD_MIN + 10], rows[REBUILD_MIN + 10:]])  # the first one decides
    assert store._read("SELECT count(*) FROM vectors") == [(len(rows),)]
    assert forms(store) == {**{h: "halfvec" for h in own}, **{h: "q8" for h in context},
                            **{h: "halfvec" for h in loose}}
    values = store.get_vectors(list(context), "m")
    assert all(np.abs(values[h] - v).max() <= np.abs(v).max() / 254 + 1e-3 for h, v in context.items())
    near = store.nearest(own[content_hash("turn 3")], "m", 1, namespace="ns")
    assert near[0][0] == "n3"
    assert store.pack()["packed"] == 5  # only the cache rows no node names are left for a pack
    store.close()


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
