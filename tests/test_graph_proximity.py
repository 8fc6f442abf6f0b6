"""Proximity-blended retrieval (seed 003) and AgentContext.load_graph, with the real memory and model."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, ContextGraph, ValidationError
from agentcontext.engine import proximity
from agentcontext.vector_store import VectorStore


def framework_graph() -> ContextGraph:
    g = ContextGraph(advanced_analytics=True)
    g.add_node("web API frameworks", "topic", content="Web API frameworks")
    g.add_edges([
        {"source": "web API frameworks", "target": "FastAPI", "type": "includes"},
        {"source": "web API frameworks", "target": "Flask", "type": "includes"},
        {"source": "FastAPI", "target": "Starlette", "type": "built_on"},
        {"source": "Kubernetes", "target": "Helm", "type": "packaged_by"},
    ])
    return g


@pytest.fixture
def context() -> AgentContext:
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=framework_graph(),
                       proximity_weight=0.3)
    ctx.store("FastAPI generates OpenAPI docs automatically")
    ctx.store("Starlette provides the ASGI toolkit underneath")
    ctx.store("Helm charts package Kubernetes applications")
    ctx.store("REST endpoints should return JSON error bodies")
    return ctx


def test_seed_proximity_example(context: AgentContext) -> None:
    results = context.retrieve("web API frameworks", max_results=10)
    lines = [f"[{r['combined_score']:.3f}]  semantic={r['semantic_score']:.3f}  proximity={r['proximity_score']:.3f}"
             f"  {r['content'][:60]}" for r in results]
    assert len(lines) == len(results) >= 3
    for r in results:
        assert r["combined_score"] == pytest.approx(0.7 * r["semantic_score"] + 0.3 * r["proximity_score"])
    prox = {r["content"].split()[0]: r["proximity_score"] for r in results}
    assert prox["FastAPI"] == pytest.approx(1 / 2)  # named node, one hop from the anchor
    assert prox["Starlette"] == pytest.approx(1 / 3)  # two hops
    assert prox["Helm"] == 0.0  # another component of the graph
    assert [r["combined_score"] for r in results] == sorted((r["combined_score"] for r in results), reverse=True)


def test_weight_one_ranks_purely_by_proximity_and_zero_purely_by_semantics(context: AgentContext) -> None:
    base = context.retrieve("web API frameworks", max_results=10)
    texts = {r["content"]: r for r in base}
    graph = context.knowledge_graph
    graph_only = proximity.blend_proximity(graph, base, "web API frameworks", proximity_weight=1.0)
    # memories are linked to the nodes their text names (issue 11 s3), so expansion brings graph nodes in too
    assert [r["content"].split()[0] for r in graph_only if r["source"] == "memory"][:2] == ["FastAPI", "Starlette"]
    assert graph_only[0]["id"] == graph.store_id("web API frameworks")  # the anchor itself, proximity 1
    assert all(r["combined_score"] == r["proximity_score"] for r in graph_only)
    plain = proximity.blend_proximity(graph, base, "web API frameworks", proximity_weight=0.0)
    assert [r["combined_score"] for r in plain] == [texts[r["content"]]["semantic_score"] for r in plain]
    assert [r["semantic_score"] for r in plain] == sorted((r["semantic_score"] for r in plain), reverse=True)
    with pytest.raises(ValidationError):
        proximity.blend_proximity(graph, base, "x", proximity_weight=1.5)


def test_proximity_scores_and_anchors() -> None:
    graph = framework_graph()
    anchors = proximity.query_anchors(graph, "Which web API frameworks exist?")
    assert anchors["web API frameworks"] == 1.0
    scores = proximity.proximity_scores(graph, "web API frameworks", ["FastAPI", "Starlette", "Helm", "unknown"])
    assert scores == {"FastAPI": 0.5, "Starlette": pytest.approx(1 / 3), "Helm": 0.0, "unknown": 0.0}
    assert proximity.proximity_scores(graph, "web API frameworks", ["Starlette"], hops=1) == {"Starlette": 0.0}
    assert proximity.mentioned_nodes(graph, "We moved from Flask to FastAPI") == ["Flask", "FastAPI"]


def test_load_graph_replaces_the_knowledge_graph(tmp_path) -> None:
    framework_graph().save_to_file(str(tmp_path / "company_kg.json"))
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph(),
                       hybrid_alpha=0.4, max_expansion_hops=3)
    stats = ctx.load_graph(str(tmp_path / "company_kg.json"))
    assert stats["node_count"] == 6 and stats["edge_count"] == 4
    assert [n["id"] for n in ctx.knowledge_graph.get_neighbors("FastAPI")] == ["Starlette"]


def test_per_call_proximity_weight_overrides_and_never_filters():
    from agentcontext import AgentContext, ContextGraph, VectorStore

    g = ContextGraph()
    g.add_node("fastapi", "framework")
    g.add_node("python", "language")
    g.add_edge("python", "fastapi", "enables")
    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=g,
                     proximity_weight=0.0)
    for text in ("FastAPI is a Python web framework", "Django is a Python web framework", "I like cats"):
        c.store(text)
    plain = c.retrieve("web frameworks", max_results=2)
    assert len(plain) == 2
    heavy = c.retrieve("fastapi", max_results=3, proximity_weight=0.9)
    assert len(heavy) == 3
    for r in heavy:
        assert abs(r["combined_score"] - (0.1 * r["semantic_score"] + 0.9 * r["proximity_score"])) < 1e-6
    assert heavy[0]["id"] == g.store_id("fastapi")  # the node the query names: a candidate in its own right
    assert [r for r in heavy if r["source"] == "memory"][0]["content"].startswith("FastAPI")
