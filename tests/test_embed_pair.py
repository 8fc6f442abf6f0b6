"""Two embedding models as one (embed/pair.py; the registry's minilm+e5-small), issue 29: the store's dot product of a
query's and a memory's vectors is the mix of the two models' cosines, every vector of unit length."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.embed.models import PAIR, PAIR_MIX, PAIR_OFFSET, PAIR_SCALE, load_model, spec_of
from agentcontext.embed.pair import PairEmbedder
from agentcontext.errors import ValidationError

DOCS = ["Rex is the dog Ben adopted last week.", "Paris had a rainy weekend."]
QUERY = "Which dog did Ben adopt?"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("AGENTCONTEXT_EMBED_MODEL", raising=False)


def test_the_dot_product_is_the_mix_of_the_two_cosines():
    pair = load_model("minilm+e5")
    assert pair is load_model(PAIR) and spec_of("pair").dimension == pair.dimension == 384 + 384 + 1
    docs, q = pair.embed(DOCS), pair.embed_query(QUERY)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1, atol=1e-5) and abs(np.linalg.norm(q) - 1) < 1e-5
    first = pair.first.embed(DOCS) @ pair.first.embed([QUERY])[0]
    second = pair.second.embed(DOCS) @ pair.second.embed_query(QUERY)
    norm2 = (1 - PAIR_MIX) + PAIR_MIX * PAIR_SCALE - PAIR_MIX * PAIR_OFFSET
    want = ((1 - PAIR_MIX) * first + PAIR_MIX * (PAIR_SCALE * second + PAIR_OFFSET)) / norm2
    assert np.allclose(docs @ q, want, atol=1e-5)
    assert float(docs[0] @ q) > float(docs[1] @ q)


def test_out_of_range_parameters_are_refused():
    minilm = load_model("minilm")
    for mix, scale, offset in ((0.0, 1.0, 0.0), (1.0, 1.0, 0.0), (0.5, 0.0, 0.0), (0.5, 1.0, 0.2)):
        with pytest.raises(ValidationError, match="mix must be in \\(0, 1\\)"):
            PairEmbedder("p", minilm, minilm, mix, scale, offset)


def test_a_workspace_built_with_the_pair_finds_by_both(tmp_path):
    mem = AgentMemory(VectorStore(home=tmp_path / "ws", embedding_model="pair"))
    mem.store(DOCS)
    assert mem.workspace.model_name == PAIR and mem.dimension == 769
    got = mem.retrieve(QUERY, max_results=2)
    assert got[0]["content"] == DOCS[0] and got[0]["score"] > got[1]["score"]
    mem.workspace.close()
