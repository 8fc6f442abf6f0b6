"""Retrieval as one configuration (issue 27 s5): a validated ``RetrievalConfig`` built once at the facade and handed
whole to memory, the retriever, decisions and reasoning; echoed beside each result's signals; one result type from
candidate to output; ``min_score`` applied once, to the final score."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentcontext import AgentContext, AgentMemory, ContextGraph, ValidationError
from agentcontext.engine.retrieval_config import RetrievalConfig, above
from agentcontext.engine.retrieved import RetrievedContext
from agentcontext.retrieval import ContextRetriever
from agentcontext.vector_store import VectorStore

SRC = Path(__file__).resolve().parent.parent / "src" / "agentcontext"
TEXTS = ("FastAPI is a Python web framework", "Django is a Python web framework", "I like cats",
         "Starlette provides the ASGI toolkit underneath FastAPI")


def framework_graph() -> ContextGraph:
    g = ContextGraph()
    g.add_node("fastapi", "framework")
    g.add_node("python", "language")
    g.add_edge("python", "fastapi", "enables")
    return g


@pytest.fixture(scope="module")
def ctx():
    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=framework_graph(),
                     decision_tracking=True, proximity_weight=0.2, hybrid_alpha=0.4, max_expansion_hops=3)
    for text in TEXTS:
        c.store(text)
    c.record_decision(category="framework", scenario="Pick the web framework for the API", reasoning="async, typed",
                      outcome="fastapi", confidence=0.9)
    return c


# --- validated once, a bad value named -----------------------------------------------------------------
@pytest.mark.parametrize("field, value, allowed", [
    ("min_score", 1.5, "in [0, 1]"), ("min_score", "high", "in [0, 1]"), ("hybrid_alpha", -0.1, "in [0, 1]"),
    ("proximity_weight", 2, "in [0, 1]"), ("max_expansion_hops", -1, ">= 0"), ("max_expansion_hops", 1.5, ">= 0"),
    ("budget_tokens", 0, ">= 1"), ("sources", ("memory", "web"), "docs"), ("sources", "memory", "docs"),
    ("graph_expansion", "yes", "True or False"), ("rerank", 1, "True or False"),
    ("truth_filter", object(), "TruthMaintenanceContextFilter"), ("weights", {"dense": 1}, "FusionWeights"),
    ("answer_temperature", -1.0, "in [0, 2]"),
])
def test_a_bad_value_is_a_validation_error_naming_the_field_and_what_it_takes(field, value, allowed):
    with pytest.raises(ValidationError, match=field) as raised:
        RetrievalConfig(**{field: value})
    assert raised.value.data["field"] == field
    assert allowed in str(raised.value.data["allowed"])


def test_the_facade_and_a_call_are_checked_the_same_way(ctx):
    with pytest.raises(ValidationError, match="hybrid_alpha") as raised:
        AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), hybrid_alpha=1.5)
    assert raised.value.data["field"] == "hybrid_alpha"
    with pytest.raises(ValidationError, match="min_score"):
        ctx.retrieve("web framework", min_score=1.2)
    with pytest.raises(ValidationError, match="min_score"):
        ctx.memory.retrieve("web framework", min_score=-0.5)
    with pytest.raises(ValidationError, match="max_expansion_hops"):
        ctx.retriever.retrieve("web framework", max_hops=-2)
    with pytest.raises(ValidationError, match="budget_tokens"):
        ctx.context_for("web framework", budget_tokens=0)
    with pytest.raises(ValidationError, match="no field"):
        ctx.config.override(min_scor=0.3)
    with pytest.raises(ValidationError, match="RetrievalConfig"):
        AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), retrieval_config={"min_score": 1})


def test_one_configuration_is_handed_to_every_service(ctx):
    cfg = ctx.config
    assert (cfg.hybrid_alpha, cfg.proximity_weight, cfg.max_expansion_hops) == (0.4, 0.2, 3)
    assert ctx.retriever.config is cfg and ctx.decisions.config is cfg and ctx.reasoning.config is cfg
    # memory holds the same configuration with its own fusion weights filled in
    assert ctx.memory.config.min_score == cfg.min_score and ctx.memory.config.rerank == cfg.rerank
    assert ctx.memory.weights is ctx.memory.config.weights
    # the seed's attribute names read the configuration
    assert (ctx.retriever.hybrid_alpha, ctx.retriever.max_expansion_hops, ctx.decisions.proximity_weight) == \
        (0.4, 3, 0.2)


# --- the echo is what ran --------------------------------------------------------------------------------
def test_each_result_echoes_the_configuration_that_ran(ctx):
    results = ctx.retrieve("python web framework", max_results=4, min_score=0.05, proximity_weight=0.5)
    assert results
    for r in results:
        assert r["config"] == {"sources": ["memory", "vector", "graph", "docs", "decisions"], "hybrid_alpha": 0.4,
                               "proximity_weight": 0.5, "hops": 3, "min_score": 0.05, "rerank": False,
                               "ranker": "linear", "weights": "default", "truth_filter": None}
        assert r["score"] >= 0.05 and "signals" in r
        assert r["combined_score"] == pytest.approx(0.5 * r["semantic_score"] + 0.5 * r["proximity_score"])
    assert results[0]["config"] is not results[-1]["config"]  # each result's own copy
    plain = ctx.retriever.retrieve("python web framework", use_graph_expansion=False, max_hops=1)
    assert plain and all(r.config["hops"] == 0 and r.config["min_score"] == 0.0 for r in plain)
    hops = ctx.retriever.retrieve("python web framework", max_hops=1)
    assert all(r.config["hops"] == 1 and r.config["proximity_weight"] == 0.2 for r in hops)
    memories = ctx.memory.retrieve("python web framework", min_score=0.1)
    assert memories and all(m["config"]["min_score"] == 0.1 and m["score"] >= 0.1 for m in memories)
    bundle = ctx.context_for("python web framework", budget_tokens=900, min_score=0.02)
    assert bundle.config["min_score"] == 0.02 and bundle.budget_tokens == 900
    precedents = ctx.find_precedents("web framework for the API", proximity_weight=0.3, max_hops=1)
    assert precedents and all(p.metadata["config"]["proximity_weight"] == 0.3 for p in precedents)
    assert precedents[0].metadata["config"]["hops"] == 1
    queried = ctx.query_decisions("web framework", max_hops=0)
    assert queried and queried[0].metadata["config"]["proximity_weight"] == 0.2
    assert ctx.config.min_score == 0.0 and ctx.config.proximity_weight == 0.2  # a call's override stays its own


def test_a_configuration_given_whole_applies_and_a_call_overrides_it():
    cfg = RetrievalConfig(min_score=0.5, graph_expansion=False, sources=("memory",), budget_tokens=None)
    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=framework_graph(),
                     retrieval_config=cfg)
    for text in TEXTS:
        c.store(text)
    strict = c.retrieve("python web framework", max_results=4)
    assert all(r["score"] >= 0.5 and r["config"]["min_score"] == 0.5 for r in strict)
    loose = c.retrieve("python web framework", max_results=4, min_score=0.0)
    assert len(loose) == 4 > len(strict)
    assert all(r["source"] == "memory" for r in loose)  # sources: memory alone, the graph's nodes left out
    assert c.memory.retrieve("I like cats", max_results=4, min_score=0.0)[0]["config"]["min_score"] == 0.0
    assert all(m["score"] >= 0.5 for m in c.memory.retrieve("python web framework", max_results=4))
    bundle = c.context_for("python web framework")
    assert bundle.budget_tokens is None and {s.kind for s in bundle.sources} <= {"memory"}


# --- min_score once, to the final score -----------------------------------------------------------------
def test_min_score_applies_once_to_the_blended_score(ctx):
    """A result whose first-stage score is under min_score but whose proximity-blended score reaches it is
    kept, and the reverse dropped: the bound is applied once, after the rescaling, not before it too."""
    base = ctx.retrieve("fastapi", max_results=6, min_score=0.0, proximity_weight=0.9)
    lifted = [r for r in base if r["semantic_score"] < r["score"]]
    lowered = [r for r in base if r["semantic_score"] > r["score"]]
    assert lifted and lowered
    up = lifted[0]
    bound = (up["semantic_score"] + up["score"]) / 2
    kept = ctx.retrieve("fastapi", max_results=6, min_score=bound, proximity_weight=0.9)
    assert up["id"] in {r["id"] for r in kept}
    assert all(r["score"] >= bound for r in kept)
    down = lowered[0]
    bound = (down["semantic_score"] + down["score"]) / 2
    assert down["id"] not in {r["id"] for r in ctx.retrieve("fastapi", max_results=6, min_score=bound,
                                                              proximity_weight=0.9)}


def _compares_min_score(node: ast.AST) -> bool:
    names = {"min_score", "min_relevance_score"}
    for side in [node.left, *node.comparators]:
        for sub in ast.walk(side):
            if (isinstance(sub, ast.Name) and sub.id in names) or (isinstance(sub, ast.Attribute)
                                                                   and sub.attr in names):
                return True
    return False


def test_min_score_is_compared_in_one_place_only():
    """Every retrieval path filters through engine/retrieval_config.py's ``above``; any other comparison with
    min_score (a second filter, or a range check of its own) would let two filters drift apart."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and _compares_min_score(node):
                found.append(f"{rel}:{node.lineno}")
    assert found and all(f.startswith("engine/retrieval_config.py:") for f in found), found


def test_above_keeps_order_and_reads_objects_and_dicts():
    rows = [{"score": 0.9}, {"score": 0.2}, {"score": 0.6}]
    assert above(rows, 0.5) == [{"score": 0.9}, {"score": 0.6}]
    assert above(rows, 0.0) == rows
    hits = [RetrievedContext(content="a", score=0.4, source="memory"),
            RetrievedContext(content="b", score=0.7, source="vector")]
    assert [h.content for h in above(hits, 0.5)] == ["b"]


# --- one result type ------------------------------------------------------------------------------------
def test_one_result_type_from_candidate_to_output(ctx):
    from agentcontext import retrieval

    assert retrieval.RetrievedContext is RetrievedContext
    found = ctx.memory.results("python web framework", max_results=3, count_use=False)
    assert found and all(isinstance(r, RetrievedContext) and r.source == "memory" for r in found)
    as_dicts = ctx.memory.retrieve("python web framework", max_results=3, count_use=False)
    assert as_dicts == [r.as_memory() for r in found]
    assert list(as_dicts[0])[:4] == ["id", "memory_id", "content", "metadata"]  # seed 003's memory dict
    out = ctx.retriever.retrieve("python web framework", max_results=3)
    assert all(isinstance(r, RetrievedContext) for r in out)
    memory_hit = next(r for r in out if r.source == "memory")
    assert memory_hit.extra["conversation_id"] is None and memory_hit.to_dict()["created_at"]


def test_the_echo_names_the_memory_weights_that_ran():
    from dataclasses import replace

    from agentcontext.engine.fusion import FusionWeights

    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384))
    c.store("FastAPI is a Python web framework")
    assert c.retrieve("python framework")[0]["config"]["weights"] == "default"
    c.memory.weights = replace(FusionWeights(), mention=0.0)
    (hit,) = c.retrieve("python framework")
    ran = c.memory.retrieve("python framework")[0]["config"]["weights"]
    assert hit["config"]["weights"] == ran != "default"


class CallersMemory:
    """A caller's own memory object: seed 003's memory shape (retrieve returns dicts), no ``results``."""

    def __init__(self, memory: AgentMemory) -> None:
        self.inner = memory
        self.namespace, self.workspace, self.principal = memory.namespace, memory.workspace, memory.principal
        self.retention, self.db = memory.retention, memory.db

    def retrieve(self, query, max_results=5, **filters):
        return self.inner.retrieve(query, max_results=max_results, **filters)

    def used(self, memory_ids):
        self.inner.used(memory_ids)


def test_a_callers_memory_object_still_feeds_the_retriever():
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory", dimension=384))
    memory.store("FastAPI is a Python web framework", conversation_id="c1")
    (hit,) = ContextRetriever(memory_store=CallersMemory(memory)).retrieve("python framework", max_results=1)
    assert isinstance(hit, RetrievedContext) and hit.source == "memory" and hit.extra["conversation_id"] == "c1"
    assert hit.config["min_score"] == 0.0


def test_a_retriever_without_a_facade_builds_its_own_configuration(tmp_path):
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory", dimension=384))
    memory.store("FastAPI is a Python web framework")
    r = ContextRetriever(memory_store=memory, hybrid_alpha=0.3, max_expansion_hops=1, use_graph_expansion=False)
    assert (r.config.hybrid_alpha, r.config.max_expansion_hops, r.config.graph_expansion) == (0.3, 1, False)
    (hit,) = r.retrieve("python framework", max_results=1)
    assert hit.config["hybrid_alpha"] == 0.3 and hit.config["hops"] == 0
    r.hybrid_alpha = 0.6
    assert r.config.hybrid_alpha == 0.6
    with pytest.raises(ValidationError, match="hybrid_alpha"):
        r.hybrid_alpha = 3


def test_the_echo_names_the_weights_fitted_for_the_workspace_model(monkeypatch):
    """A workspace whose model has fitted weights (engine/fusion.py MODEL_WEIGHTS: the minilm+mpnet pair) ranks
    with them when given the defaults: every echo names those, not "default" (the pair's own model is not
    installed in CI; the registry entry for this workspace's model stands in for it)."""
    from dataclasses import replace

    from agentcontext.engine import fusion
    from agentcontext.engine.fusion import FusionWeights

    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384))
    fitted = replace(FusionWeights(), mention=0.5, answer=0.8)
    monkeypatch.setitem(fusion.MODEL_WEIGHTS, c.memory.workspace.model_name, fitted)
    c = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384))
    c.store("FastAPI is a Python web framework")
    assert c.memory.weights == fitted
    ran = c.memory.retrieve("python framework")[0]["config"]["weights"]
    assert ran != "default" and c.retrieve("python framework")[0]["config"]["weights"] == ran
    c.memory.weights = FusionWeights()  # the defaults again: still the fitted ones rank
    assert c.memory.weights == fitted
