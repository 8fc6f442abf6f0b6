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
