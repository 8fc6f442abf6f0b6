"""DecisionRecorder and AgentContext decision methods over a real store and the real embedding model."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from agentcontext import (AgentContext, CausalChainAnalyzer, ConflictError, CycleError, DecisionRecorder, NotFoundError,
                          ValidationError, Workspace)
from agentcontext.decision_models import Decision
from agentcontext.decisions.common import embed_text
from agentcontext.decisions.index import index_for
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.model import content_hash


@pytest.fixture
def graph() -> ContextGraph:
    return ContextGraph()


@pytest.fixture
def ctx(graph: ContextGraph) -> AgentContext:
    return AgentContext(knowledge_graph=graph, decision_tracking=True)


def test_record_decision_stores_node_embedding_entities_and_metadata(ctx: AgentContext, graph: ContextGraph):
    did = ctx.record_decision(
        category="model_selection", scenario="Choose LLM for production reasoning pipeline",
        reasoning="GPT-4 benchmark advantage justifies 3x cost increase", outcome="selected_gpt4",
        confidence=0.91, entities=["gpt-4", "gpt-3.5"], decision_maker="pipeline_agent",
        metadata={"ticket": "OPS-1"})
    assert isinstance(did, str) and did
    node = graph.store.get_node(did)
    assert node.kind == "decision" and node.namespace == graph.namespace
    captured = node.props["metadata"].pop("captured")  # the calling system and context (issue 26 s3)
    assert captured["graph"] == graph.namespace and captured["system"].startswith("agentcontext")
    assert node.props["outcome"] == "selected_gpt4" and node.props["metadata"] == {"ticket": "OPS-1"}
    text = embed_text("Choose LLM for production reasoning pipeline",
                      "GPT-4 benchmark advantage justifies 3x cost increase")
    vec = graph.store.get_vectors([content_hash(text)], graph.workspace.embedder.name)
    assert node.embed_hash == content_hash(text) and vec[node.embed_hash].shape == (384,)
    targets = sorted(e.dst for e in graph.store.edges(src=did, type="involves"))
    assert targets == [graph.store_id("gpt-3.5"), graph.store_id("gpt-4")]
    assert graph.find_node("gpt-4") is not None  # the entities are graph nodes
    d = ctx.get_decision(did, with_embedding=True)
    assert d.decision_maker == "pipeline_agent" and d.confidence == 0.91
    assert {k: v for k, v in d.metadata.items() if k != "captured"} == {"ticket": "OPS-1"}
    assert len(d.reasoning_embedding) == 384
    assert d.valid_from is not None and d.valid_until is None


def test_entities_reuse_existing_graph_nodes(graph: ContextGraph):
    graph.add_node("Python", "language", properties={"paradigm": "multi-paradigm"})
    did = graph.record_decision(category="technology_choice", scenario="Web API framework selection",
                                reasoning="async support", outcome="selected_fastapi", confidence=0.9,
                                entities=["Python"])
    assert graph.find_node("Python")["type"] == "language"  # not overwritten by an entity stub
    assert [e.dst for e in graph.store.edges(src=did, type="involves")] == [graph.store_id("Python")]


def test_record_decision_needs_tracking_and_graph():
    with pytest.raises(RuntimeError, match="knowledge graph"):
        AgentContext(decision_tracking=True).record_decision(
            category="ops", scenario="Scale up", reasoning="Load > 80%", outcome="scaled", confidence=0.9)
    with pytest.raises(RuntimeError, match="decision_tracking"):
        AgentContext(knowledge_graph=ContextGraph()).record_decision(
            category="ops", scenario="Scale up", reasoning="Load > 80%", outcome="scaled", confidence=0.9)


@pytest.mark.parametrize("bad", [
    {"confidence": 1.5}, {"confidence": -0.1}, {"confidence": "high"}, {"category": ""}, {"scenario": "  "},
    {"valid_from": "2025-01-02T00:00:00Z", "valid_until": "2025-01-01T00:00:00Z"}, {"valid_from": "not a date"},
])
def test_invalid_decisions_are_refused(ctx: AgentContext, bad: dict):
    args = dict(category="ops", scenario="Scale up", reasoning="Load > 80%", outcome="scaled", confidence=0.9)
    with pytest.raises(ValidationError):
        ctx.record_decision(**{**args, **bad})
    assert ctx.knowledge_graph.store.count_nodes(kind="decision") == 0


def test_unknown_causes_are_refused_before_anything_is_written(ctx: AgentContext):
    with pytest.raises(NotFoundError):
        ctx.record_decision(category="ops", scenario="Scale up", reasoning="Load", outcome="scaled",
                            confidence=0.9, caused_by=["dec_missing"])
    assert ctx.knowledge_graph.store.count_nodes(kind="decision") == 0


def test_paraphrase_finds_the_seed_loan_decision(ctx: AgentContext):
    ctx.record_decisions([
        dict(category="loan_approval", scenario="First-time homebuyer: 30yr fixed, 20% down",
             reasoning="Credit score above threshold, DTI within limits", outcome="approved_300k", confidence=0.94),
        dict(category="treatment_plan", scenario="Hypertension with comorbid diabetes",
             reasoning="ACE inhibitors are renoprotective in diabetic patients", outcome="prescribed_lisinopril",
             confidence=0.91),
        dict(category="ops", scenario="Scale up", reasoning="Load > 80%", outcome="scaled_to_10_replicas",
             confidence=0.97),
        dict(category="model_selection", scenario="Choose LLM for production reasoning pipeline",
             reasoning="GPT-4 benchmark advantage justifies 3x cost", outcome="selected_gpt4", confidence=0.91),
    ])
    found = ctx.find_precedents("first time home buyer mortgage application", limit=3)
    assert found[0].outcome == "approved_300k"
    assert isinstance(found[0], Decision)
    assert found[0].metadata["semantic_score"] > found[1].metadata["semantic_score"]
    sims = [d.metadata["similarity"] for d in found]
    assert sims == sorted(sims, reverse=True)
    # no entities or policies anywhere: nothing structural to blend, the similarity is the cosine
    assert all(d.metadata["similarity"] == d.metadata["semantic_score"] for d in found)
    assert found[0].metadata["similarity"] > 0.4 > found[1].metadata["similarity"]
    only = ctx.find_precedents("first time home buyer mortgage application", category="ops", limit=3)
    assert [d.outcome for d in only] == ["scaled_to_10_replicas"]
    assert ctx.find_precedents("anything", category="no_such_category") == []
    assert len(ctx.find_precedents("loan", limit=2)) == 2


def test_as_of_sees_only_decisions_valid_then(ctx: AgentContext):
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    old = ctx.record_decision(category="pricing", scenario="Set price for basic plan", reasoning="Match competitors",
                              outcome="price_10", confidence=0.8, valid_from=t0, valid_until=t0 + timedelta(days=180))
    new = ctx.record_decision(category="pricing", scenario="Set price for the basic plan",
                              reasoning="Costs went up", outcome="price_12", confidence=0.85,
                              valid_from=t0 + timedelta(days=180))
    at_march = ctx.find_precedents("basic plan pricing", as_of=t0 + timedelta(days=60))
    assert [d.decision_id for d in at_march] == [old]
    at_autumn = ctx.find_precedents("basic plan pricing", as_of=t0 + timedelta(days=270))
    assert [d.decision_id for d in at_autumn] == [new]
    assert ctx.find_precedents("basic plan pricing", as_of=t0 - timedelta(days=1)) == []
    assert {d.decision_id for d in ctx.find_precedents("basic plan pricing")} == {old, new}


def test_structural_similarity_through_shared_entities(ctx: AgentContext):
    a = ctx.record_decision(category="vendor", scenario="Renew the database support contract",
                            reasoning="Vendor met its SLA all year", outcome="renewed", confidence=0.9,
                            entities=["acme_db", "support_team"])
    b = ctx.record_decision(category="vendor", scenario="Renew the analytics tool licence",
                            reasoning="Usage is high across teams", outcome="renewed", confidence=0.9,
                            entities=["beta_analytics"])
    pure = ctx.find_precedents("renew a vendor contract", use_hybrid_search=False, limit=2)
    assert all(d.metadata["structural_score"] == 0.0 for d in pure)
    by_entity = ctx.find_precedents("renew a vendor contract", entities=["beta_analytics"], limit=2)
    assert by_entity[0].decision_id == b and by_entity[0].metadata["structural_score"] == 1.0
    assert by_entity[0].metadata["shared_links"] == [ctx.knowledge_graph.store_id("beta_analytics")]
    by_other = ctx.find_precedents("renew a vendor contract", entities=["acme_db"], limit=2, proximity_weight=0.6)
    assert by_other[0].decision_id == a
    assert by_other[0].metadata["structural_score"] == pytest.approx(0.5)  # 1 shared of 2 linked


def test_graph_hops_pull_in_decisions_sharing_entities(ctx: AgentContext):
    ctx.record_decisions([dict(category="misc", scenario=f"Unrelated topic number {i} about gardening tulips",
                               reasoning="seasonal", outcome=f"o{i}", confidence=0.5) for i in range(60)])
    far = ctx.record_decision(category="misc", scenario="Quarterly tax filing for subsidiary",
                              reasoning="deadline", outcome="filed", confidence=0.9, entities=["kubernetes"])
    # 2 hops (decision -> entity -> decision) reach it although it is the least similar in meaning
    found = ctx.find_precedents("garden tulips", entities=["kubernetes"], limit=5, max_hops=2, proximity_weight=0.7)
    assert found[0].decision_id == far and found[0].metadata["semantic_score"] < 0.3
    found1 = ctx.find_precedents("garden tulips", entities=["kubernetes"], limit=5, max_hops=1, proximity_weight=0.7)
    assert far not in [d.decision_id for d in found1]


def test_index_follows_appends_updates_and_retractions(ctx: AgentContext, graph: ContextGraph):
    rec = DecisionRecorder(graph)
    first = rec.record_decision(category="ops", scenario="Rotate database credentials", reasoning="quarterly",
                                outcome="rotated", confidence=0.9)
    assert [d.decision_id for d in rec.find_precedents("credential rotation", limit=1)] == [first]
    index = index_for(graph.workspace, graph.namespace)
    before = index.matrix
    second = rec.record_decision(category="ops", scenario="Rotate API keys for payment provider",
                                 reasoning="leaked key", outcome="rotated_keys", confidence=0.95)
    ids = [d.decision_id for d in rec.find_precedents("rotate payment api keys", limit=2)]
    assert ids[0] == second and first in ids
    assert index.matrix is before  # appended in place, not rebuilt
    graph.store.retract_nodes([second])
    assert [d.decision_id for d in rec.find_precedents("rotate payment api keys", limit=5)] == [first]
    # an update of the decision text moves its vector
    node = graph.store.get_node(first)
    node.props = {**node.props, "scenario": "Choose a coffee machine for the office"}
    node.embed_text = embed_text(node.props["scenario"], node.props["reasoning"])
    graph.store.put_nodes([node])
    assert rec.find_precedents("espresso machine purchase", limit=1)[0].scenario.startswith("Choose a coffee")
    row = index.matrix[index.pos[first]]
    assert np.allclose(row, graph.workspace.embedder.embed([node.embed_text])[0], atol=1e-5)


def test_decisions_written_without_vectors_are_embedded_by_the_index(tmp_path):
    ws = Workspace.open(home=tmp_path / "ws", create=True)
    rec = DecisionRecorder(ws)
    did = rec.record_decision(category="ops", scenario="Migrate logs to cold storage", reasoning="cost",
                              outcome="migrated", confidence=0.8)
    ws.store.close()
    ws2 = Workspace.open(home=tmp_path / "ws")  # a fresh process: the index is rebuilt from the store
    found = DecisionRecorder(ws2).find_precedents("archive old logs cheaply", limit=1)
    assert [d.decision_id for d in found] == [did]


def test_query_decisions_combines_meaning_keywords_and_causal_neighbours(ctx: AgentContext):
    root = ctx.record_decision(category="infra", scenario="Adopt Kubernetes for deployments",
                               reasoning="standardise deploys", outcome="adopted_k8s", confidence=0.9)
    child = ctx.record_decision(category="hiring", scenario="Hire a platform engineer",
                                reasoning="someone must run the cluster", outcome="hired", confidence=0.8,
                                caused_by=[root])
    ctx.record_decision(category="food", scenario="Order pizza for the offsite", reasoning="team vote",
                        outcome="pizza", confidence=0.6)
    found = ctx.query_decisions("Kubernetes adoption", max_hops=1, limit=2)
    assert found[0].decision_id == root
    assert child in [d.decision_id for d in found]
    assert all(d.metadata["hops"] in (0, 1) for d in found)
    assert [d.decision_id for d in ctx.query_decisions("Kubernetes adoption", max_hops=0, limit=1)] == [root]
    pizza = ctx.query_decisions("pizza", max_hops=1, limit=1, use_hybrid_search=True)
    assert pizza[0].outcome == "pizza" and pizza[0].metadata["hops"] == 0


def test_link_precedent_and_explainability(ctx: AgentContext):
    engine = ctx.get_policy_engine()
    from agentcontext.decision_models import Policy
    engine.add_policy(Policy(policy_id="lending", name="Lending", description="min conf", rules={"min_confidence": 0.8},
                             category="loan_approval"))
    a = ctx.record_decision(category="loan_approval", scenario="Approve loan A", reasoning="good credit",
                            outcome="approved", confidence=0.9, entities=["applicant_a"], policies=["lending"])
    b = ctx.record_decision(category="loan_approval", scenario="Approve loan B", reasoning="like A",
                            outcome="approved", confidence=0.7, caused_by=[a], entities=["applicant_b"])
    c = ctx.record_decision(category="loan_approval", scenario="Fund loan B", reasoning="approved",
                            outcome="funded", confidence=0.95, informed_by=[b])
    rec = DecisionRecorder(ctx.knowledge_graph)
    p = rec.link_precedent(b, a, "similar_scenario", 0.83)
    assert p.source_decision_id == a and p.similarity_score == 0.83
    assert not engine.check_compliance(b, "lending")
    engine.record_exception(b, "lending", reason="manual review", approver="cro",
                            justification="collateral covers risk")
    engine.record_approval(b, approver="cro", approval_method="email", approval_context="loan committee")
    ex = ctx.trace_decision_explainability(b)
    assert [x["decision_id"] for x in ex["causes"]] == [a]
    assert ex["causes"][0]["relationships"] == ["caused"]
    assert [x["decision_id"] for x in ex["effects"]] == [c] and ex["effects"][0]["relationships"] == ["informed"]
    assert [x["entity_id"] for x in ex["entities"]] == ["applicant_b"]
    assert [x["policy_id"] for x in ex["policies_applied"]] == ["lending"]
    assert ex["policies_applied"][0]["compliant"] is False
    assert ex["exceptions"][0]["approver"] == "cro" and ex["exceptions"][0]["relationships"] == [
        "has_exception", "exception_to"]
    assert ex["approvals"][0]["approval_method"] == "email"
    assert ex["precedents"][0]["decision_id"] == a and ex["precedents"][0]["similarity_score"] == 0.83
    assert ex["total_connections"] == 7 == len(ex["relationship_paths"])
    actions = [x["action"] for x in ex["audit_trail"]]
    assert "policy.check" in actions and "policy.exception" in actions and "decision.approval" in actions
    ex_a = ctx.trace_decision_explainability(a)
    assert [x["decision_id"] for x in ex_a["effects"]] == [b, c]
    assert [x["causal_distance"] for x in ex_a["effects"]] == [1, 2]
    assert ex_a["effects"][1]["path"] == [a, b, c]
    with pytest.raises(NotFoundError):
        ctx.trace_decision_explainability("dec_nope")


def test_two_handles_on_one_store_see_each_others_decisions(tmp_path):
    home = tmp_path / "shared"
    ws_a = Workspace.open(home=home, create=True)
    ws_b = Workspace.open(home=home)  # a second connection, as another process would have
    a, b = DecisionRecorder(ws_a), DecisionRecorder(ws_b)
    first = a.record_decision(category="ops", scenario="Enable autoscaling on the web tier", reasoning="spiky load",
                              outcome="enabled", confidence=0.9)
    assert [d.decision_id for d in b.find_precedents("turn on automatic scaling", limit=1)] == [first]
    second = a.record_decision(category="ops", scenario="Switch CDN provider", reasoning="cheaper egress",
                               outcome="switched", confidence=0.8)
    assert b.find_precedents("change content delivery network", limit=1)[0].decision_id == second
    ws_b.store.purge_nodes([first], reason="erasure request")
    assert first not in [d.decision_id for d in a.find_precedents("turn on automatic scaling", limit=5)]


def test_batches_refuse_repeats_and_forward_causes_atomically(graph: ContextGraph):
    rec = DecisionRecorder(graph)
    rec.record_decision(decision_id="d1", category="x", scenario="first", reasoning="", outcome="o", confidence=0.5)
    with pytest.raises(ConflictError):
        rec.record_decision(decision_id="d1", category="x", scenario="again", reasoning="", outcome="o",
                            confidence=0.5)
    with pytest.raises(CycleError):  # d3 names d4 as its cause, but d4 comes later: could close a loop
        rec.record_decisions([
            dict(decision_id="d3", category="x", scenario="c", outcome="o", confidence=0.5, caused_by=["d4"]),
            dict(decision_id="d4", category="x", scenario="d", outcome="o", confidence=0.5, caused_by=["d3"])])
    assert graph.store.get_node("d3") is None and graph.store.get_node("d4") is None
    ok = rec.record_decisions([
        dict(decision_id="d5", category="x", scenario="e", outcome="o", confidence=0.5, caused_by=["d1"]),
        dict(decision_id="d6", category="x", scenario="f", outcome="o", confidence=0.5, informed_by=["d5"])])
    assert ok == ["d5", "d6"]
    chain = CausalChainAnalyzer(graph).get_causal_chain("d1", "downstream")
    assert [d.decision_id for d in chain] == ["d5", "d6"]


def test_supplied_reasoning_embedding_is_used(graph: ContextGraph):
    rec = DecisionRecorder(graph)
    dim = graph.workspace.embedder.dimension
    vec = np.zeros(dim, dtype=np.float32)
    vec[0] = 3.0
    did = rec.record_decisions([Decision(decision_id="dv", category="x", scenario="anything", reasoning="at all",
                                         outcome="o", confidence=0.5, reasoning_embedding=vec.tolist())])[0]
    stored = rec.get_decision(did, with_embedding=True).reasoning_embedding
    assert stored[0] == pytest.approx(1.0) and sum(abs(v) for v in stored[1:]) == 0.0  # normalised, not re-embedded
    with pytest.raises(ValidationError):
        rec.record_decisions([dict(category="x", scenario="s", outcome="o", confidence=0.5,
                                   reasoning_embedding=[1.0, 2.0])])
