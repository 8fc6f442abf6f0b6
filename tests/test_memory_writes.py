"""Write paths (issue 9 s3): with vectors and context vectors supplied nothing is embedded; one store() lands its
vectors with the memory in one transaction."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import ValidationError


def unit(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / "ws"))
    yield mem
    mem.workspace.close()


def counting(mem, monkeypatch) -> list[int]:
    calls: list[int] = []
    embedder = mem.workspace.embedder
    real = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: calls.append(len(texts)) or real(texts))
    return calls


def test_supplied_context_vectors_mean_nothing_is_embedded(memory, monkeypatch):
    calls = counting(memory, monkeypatch)
    own, context = unit(6, 1), unit(6, 2)
    ids = memory.batch_store([{"content": f"turn {i}", "conversation_id": "c1", "vector": own[i],
                               "context_vector": context[i]} for i in range(6)])
    assert calls == []
    nodes = memory.db.get_nodes(ids)
    pairs = [nodes[i].props.get("pair_hash") for i in ids]
    assert pairs[0] is None and all(pairs[1:])  # the first turn has no previous one: its context vector is unused
    stored = memory.db.get_vectors(pairs[1:], memory.workspace.model_name)
    assert all(np.array_equal(stored[h], context[k + 1]) for k, h in enumerate(pairs[1:]))
    # the index uses them: a turn's dense vector mixes in its own context vector and the next turn's
    index = memory._index()
    row = index.row[ids[2]]
    expected = (own[2] + context[2] + context[3]) / 3
    assert np.allclose(index.rows.column("dense")[row], expected, atol=1e-6)


def test_without_context_vectors_the_context_text_is_embedded_as_before(memory, monkeypatch):
    calls = counting(memory, monkeypatch)
    own = unit(3, 3)
    ids = memory.batch_store([{"content": f"turn {i}", "conversation_id": "c1", "vector": own[i]} for i in range(3)])
    assert sum(calls) == 2  # the two pair texts, not the supplied own vectors
    node = memory.db.get_node(ids[1])
    assert memory.db.get_vectors([node.props["pair_hash"]], memory.workspace.model_name)


def test_a_context_vector_of_the_wrong_shape_is_refused_naming_it(memory):
    with pytest.raises(ValidationError, match="context_vector"):
        memory.batch_store([{"content": "a", "conversation_id": "c", "vector": unit(1, 1)[0]},
                            {"content": "b", "conversation_id": "c", "vector": unit(1, 2)[0],
                             "context_vector": [0.5, 0.5]}])
    assert memory.count() == 0


def test_one_store_writes_its_vector_and_memory_in_one_transaction(memory, monkeypatch):
    memory.store("warm the model up")
    begun: list[int] = []
    real = memory.db._begin
    monkeypatch.setattr(memory.db, "_begin", lambda: begun.append(1) or real())
    mid = memory.store("a fresh sentence nobody embedded before", conversation_id="c9")
    node = memory.db.get_node(mid)
    assert node.embed_hash and memory.db.get_vectors([node.embed_hash], memory.workspace.model_name)
    assert len(begun) == 1


# --- the bulk path writes what the one-at-a-time path writes --------------------------------------------------
def write_items() -> list[dict]:
    """Two interleaved conversations (one with context vectors supplied, one whose pair texts are embedded),
    memories outside any conversation, speakers, users, types and metadata; ids and times fixed."""
    own, context = unit(9, 11), unit(9, 12)
    items = []
    for i in range(9):
        item = {"id": f"m{i}", "content": f"note {i} about the harbour", "vector": own[i],
                "created_at": f"2026-03-0{i + 1}T10:00:00+02:00", "metadata": {"n": i, "speaker": "Ann" if i % 2
                                                                                else "Bo", "type": "fact"}}
        if i < 6:
            item["conversation_id"] = f"c{i % 2}"
            if i % 2 == 0:
                item["context_vector"] = context[i]
        if i % 3 == 0:
            item["user_id"] = "u1"
        items.append(item)
    return items


def store_contents(mem: AgentMemory) -> dict:
    """What the store holds for the memories, through the protocol, without the times of the writes: rows
    (key without its position in the batch, since time_key adds it; content_hash covers the key), every version,
    tags, vectors, the text index, the chain heads and the change log's node.put entries."""
    db, ns = mem.db, mem.namespace

    def row(n) -> dict:
        out = n.to_dict()
        out.pop("recorded_at")
        out["key"] = n.key[:17]  # t + 16 hex digits of microseconds; the batch position follows
        out.pop("content_hash")
        out["embed_hash"] = n.embed_hash
        return out

    nodes = db.find_nodes(namespace=ns, order="id")
    hashes = sorted({n.embed_hash for n in nodes} | {(n.props or {}).get("pair_hash") for n in nodes} - {None})
    vectors = db.get_vectors(hashes, mem.workspace.model_name)
    return {
        "nodes": [row(n) for n in nodes],
        "versions": [[row(v) for v in db.node_versions(n.id)] for n in nodes],
        "by_tag": {t: [n.id for n in db.find_nodes(namespace=ns, tags=[t], order="id")]
                   for t in ("conversation:c0", "conversation:c1", "user:u1", "type:fact")},
        "vectors": {h: vectors[h].tobytes() for h in hashes},
        "text": sorted(db.text_search("harbour", namespace=ns, limit=100)),
        "heads": db.list_records("memory.chain_head"),
        "puts": sorted((c.target, c.detail["version"]) for c in db.changes_since(0) if c.op == "node.put"),
        "hashes_match": all(n.content_hash == n.compute_hash() for n in nodes),
    }


def same_rows_both_ways(make) -> None:
    batch, single = make("batch"), make("single")
    try:
        batch.batch_store(write_items())
        for item in write_items():
            single.store(item.pop("content"), **item)
        a, b = store_contents(batch), store_contents(single)
        assert a["hashes_match"] and len(a["nodes"]) == 9 and len(a["vectors"]) == 9 + 4
        assert [n["props"].get("prev") for n in a["nodes"][:6]] == [None, None, "m0", "m1", "m2", "m3"]
        assert a == b
    finally:
        batch.workspace.close()
        single.workspace.close()


def test_a_batch_and_single_stores_write_the_same_rows(tmp_path):
    same_rows_both_ways(lambda name: AgentMemory(vector_store=VectorStore(home=tmp_path / name)))


@pytest.mark.postgres
def test_a_batch_and_single_stores_write_the_same_rows_on_postgres(pg_server):
    same_rows_both_ways(lambda name: AgentMemory(vector_store=VectorStore(url=pg_server.url())))


def test_a_new_conversation_costs_the_same_in_a_small_and_a_large_store(tmp_path):
    """Finding a conversation's head when the store never saw it reads the tag's rows, not every memory of the
    namespace (which made batch_store with conversation ids slower as the store grew)."""
    from agentcontext.memory import chain

    def steps(count: int) -> int:
        mem = AgentMemory(vector_store=VectorStore(home=tmp_path / f"s{count}"), max_memory_size=10**6)
        try:
            vecs = unit(count, count)
            mem.batch_store([{"content": f"fact {i}", "vector": vecs[i], "conversation_id": f"old-{i // 20}"}
                             for i in range(count)])
            done = [0]
            mem.db._db.set_progress_handler(lambda: done.__setitem__(0, done[0] + 1), 10)
            assert chain.head(mem.db, mem.namespace, "never-seen") is None
            mem.db._db.set_progress_handler(None, 10)
            return done[0]
        finally:
            mem.workspace.close()

    small, large = steps(100), steps(2000)
    assert large <= small * 2 + 20, (small, large)


def test_memory_ids_never_repeat_in_a_process_nor_across_a_fork():
    import os

    from agentcontext.memory.records import new_id

    ids = [new_id() for _ in range(200_000)]  # four random bytes per id repeated about once in 10^3 such runs
    assert len(set(ids)) == len(ids) and all(len(i) == 24 for i in ids[:10])
    assert ids[-1] > ids[0]  # still time-ordered
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child's sequence starts afresh, not where the parent's stood
        os.write(write, " ".join(new_id()[-8:] for _ in range(3)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode().split()
    parent = [new_id()[-8:] for _ in range(3)]
    assert int(child[1], 16) - int(child[0], 16) == 1 and child[0] not in parent
