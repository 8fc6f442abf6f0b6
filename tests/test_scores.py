"""Scores that mean something (issue 13 s4): retrieve(), search_knowledge and find_precedents score in [0, 1],
absolutely, so an unrelated query scores low whatever the store holds and ``min_score`` filters it out."""
from __future__ import annotations

import json
import subprocess

import pytest

from agentcontext import AgentContext, AgentMemory, VectorStore
from agentcontext.engine.fusion import RELEVANCE, Calibration
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge import packs
from agentcontext.knowledge.search import search_knowledge
from agentcontext.mcp_server import build_server

from .conftest import CLI
from .test_mcp import call, run

COOKING = [
    "I cooked a spicy tomato pasta sauce with fresh basil for dinner",
    "Knead the bread dough for ten minutes before letting it rise",
    "Roast the chicken at 200 degrees with garlic and rosemary",
    "My grandmother's recipe for apple pie uses cinnamon and butter",
    "Simmer the vegetable soup slowly so the flavours blend",
]
GLUONS = "how do gluons bind quarks inside protons"


def test_calibration_curves_are_monotonic_and_bounded():
    for curve in (RELEVANCE, Calibration(2.0, -1.0)):
        values = [curve(v) for v in (-1.0, 0.0, 0.2, 0.5, 1.0, 3.0)]
        assert values == sorted(values) and all(0.0 <= v <= 1.0 for v in values)
        assert curve(curve.midpoint) == pytest.approx(0.5)
    assert RELEVANCE(0.05) < 0.05 < 0.9 < RELEVANCE(0.6)


@pytest.fixture
def cooking_memory(tmp_path):
    vs = VectorStore(home=tmp_path / ".agentcontext")
    memory = AgentMemory(vector_store=vs, max_memory_size=1000)
    memory.batch_store(COOKING)
    yield memory
    vs.close()


def test_retrieve_scores_unrelated_memories_low_and_min_score_filters_them(cooking_memory):
    unrelated = cooking_memory.retrieve(GLUONS, max_results=5)
    assert len(unrelated) == 5  # without min_score every memory comes back, ranked ...
    assert all(0.0 <= r["score"] < 0.1 for r in unrelated)  # ... but none scores as relevant (no top-is-1.0)
    assert cooking_memory.retrieve(GLUONS, max_results=5, min_score=0.3) == []
    relevant = cooking_memory.retrieve("how long should I knead bread dough", max_results=5, min_score=0.3)
    assert relevant and relevant[0]["content"] == COOKING[1] and relevant[0]["score"] >= 0.5
    assert all(r["score"] >= 0.3 for r in relevant) and len(relevant) < 5
    assert {"dense", "bm25", "keyword"} <= set(relevant[0]["signals"])  # the signals are still exposed


def test_retrieve_scores_compare_across_stores(cooking_memory, tmp_path):
    """The same memory scores the same for the same query whatever else the store holds."""
    other = VectorStore(home=tmp_path / "other")
    try:
        alone = AgentMemory(vector_store=other, max_memory_size=1000)
        alone.store(COOKING[2])
        query = "roast chicken with garlic"
        top_alone = alone.retrieve(query, max_results=1)[0]
        top_many = cooking_memory.retrieve(query, max_results=1)[0]
        assert top_alone["content"] == top_many["content"] == COOKING[2]
        assert top_alone["score"] == pytest.approx(top_many["score"], abs=0.05)
        assert alone.retrieve(GLUONS, max_results=1)[0]["score"] < 0.1  # the best of one is not 1.0
    finally:
        other.close()


def test_search_knowledge_scores_are_absolute(ws, write_pack):
    docs = {f"kitchen.{key}": {"title": title, "summary": summary, "body": body}
            for key, title, summary, body in [
                ("pasta", "Tomato pasta", "A quick tomato sauce for pasta.", COOKING[0]),
                ("bread", "Bread dough", "Kneading and proving bread dough.", COOKING[1]),
                ("chicken", "Roast chicken", "Roasting a whole chicken.", COOKING[2]),
                ("pie", "Apple pie", "Grandmother's apple pie.", COOKING[3])]}
    pack = packs.install_folder(ws, write_pack("kitchen", docs))[0]["pack"]
    unrelated = search_knowledge(ws, pack, GLUONS)
    assert all(0.0 <= h.score < 0.3 for h in unrelated)
    assert search_knowledge(ws, pack, GLUONS, min_score=0.3) == []
    relevant = search_knowledge(ws, pack, "how to knead bread dough", min_score=0.3)
    assert relevant and relevant[0].selector == "kitchen.bread" and relevant[0].score >= 0.5
    assert all(0.0 <= h.score <= 1.0 for h in relevant)
    assert sum(relevant[0].signals.values()) == pytest.approx(relevant[0].score)  # signals: shares of the score
    with pytest.raises(Exception, match="min_score"):
        search_knowledge(ws, pack, "bread", min_score=1.5)
    # The same through the MCP tool and the CLI.
    async def mcp(client):
        return [await call(client, "search_knowledge", {"pack": pack, "query": q, "min_score": 0.3})
                for q in (GLUONS, "how to knead bread dough")]
    (err1, none), (err2, some) = run(build_server(ws), mcp)
    assert not err1 and not err2 and none["hits"] == [] and some["hits"][0]["selector"] == "kitchen.bread"
    home = str(ws.store.path.parent)
    for query, expected in ((GLUONS, []), ("how to knead bread dough", ["kitchen.bread"])):
        done = subprocess.run([*CLI, "--home", home, "search", pack, query, "--min-score", "0.3", "--json"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert [h["selector"] for h in json.loads(done.stdout)][:1] == expected


def test_find_precedents_scores_are_absolute(tmp_path):
    ctx = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    ctx.record_decisions([dict(category="kitchen", scenario=s, reasoning="house recipe", outcome=f"cooked_{i}",
                               confidence=0.9) for i, s in enumerate(COOKING)])
    unrelated = ctx.find_precedents(GLUONS, limit=5)
    assert unrelated and all(0.0 <= d.metadata["similarity"] < 0.2 for d in unrelated)
    assert ctx.find_precedents(GLUONS, limit=5, min_similarity=0.3) == []
    relevant = ctx.find_precedents("roasting a chicken with garlic", limit=5, min_similarity=0.3)
    assert relevant and relevant[0].outcome == "cooked_2" and relevant[0].metadata["similarity"] >= 0.5
    assert all(d.metadata["similarity"] >= 0.3 for d in relevant) and len(relevant) < 5


def test_find_precedents_blends_graph_proximity_as_seed_003_says():
    """proximity_weight blends engine/proximity's graph-hop proximity: 0.7 x semantic + 0.3 x proximity at 0.3,
    1.0 ranks purely by proximity to what the query names, 0.0 is purely semantic; the context's weight is the
    default of every call."""
    ctx = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True, proximity_weight=0.3)
    near = ctx.record_decision(category="infra", scenario="Quarterly tax filing for the subsidiary",
                               reasoning="deadline", outcome="filed", confidence=0.9, entities=["kubernetes"])
    similar = ctx.record_decision(category="infra", scenario="Scale the web cluster up when traffic spikes",
                                  reasoning="load above 80%", outcome="scaled", confidence=0.9,
                                  entities=["nginx"])
    query = "scaling decisions for kubernetes"
    default = ctx.find_precedents(query, limit=5, use_hybrid_search=False)
    assert {d.decision_id for d in default} == {near, similar}
    for d in default:
        m = d.metadata
        assert m["proximity_weight"] == 0.3
        assert m["combined_score"] == pytest.approx(0.7 * m["semantic_score"] + 0.3 * m["proximity_score"], abs=1e-5)
    prox = {d.decision_id: d.metadata["proximity_score"] for d in default}
    assert prox[near] == pytest.approx(0.5) and prox[similar] == 0.0  # one hop from the named entity
    graph_only = ctx.find_precedents(query, limit=5, use_hybrid_search=False, proximity_weight=1.0)
    assert graph_only[0].decision_id == near
    assert all(d.metadata["similarity"] == pytest.approx(d.metadata["proximity_score"]) for d in graph_only)
    plain = ctx.find_precedents(query, limit=5, use_hybrid_search=False, proximity_weight=0.0)
    assert plain[0].decision_id == similar
    assert all(d.metadata["similarity"] == pytest.approx(d.metadata["semantic_score"]) for d in plain)
    with pytest.raises(Exception, match="proximity_weight"):
        ctx.find_precedents(query, proximity_weight=1.5)
