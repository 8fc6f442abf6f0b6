"""Seed 003's decision, policy, checkpoint, healthcare, finance and persist-and-restore examples.

Each example runs as the seed writes it, with only the imports changed (``semantica.context`` ->
``agentcontext``) and the vector store built as ``VectorStore(backend="inmemory", dimension=384)``, the
default embedder, so they stay fast; test_seed_examples_768.py runs the seed's ``dimension=768`` faiss
stores as written (issue 26 s3). Assertions follow each example.
"""
from __future__ import annotations

from datetime import datetime

import pytest

from agentcontext import AgentContext, ContextGraph, PolicyEngine
from agentcontext.decision_models import Decision, Policy
from agentcontext.vector_store import VectorStore


def _vs() -> VectorStore:
    return VectorStore(backend="inmemory", dimension=384)


def test_quick_start_decisions():
    context = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(advanced_analytics=True),
        decision_tracking=True,
        retention_days=90,
        max_memories=50000,
    )
    memory_id = context.store(
        "GPT-4 outperforms GPT-3.5 on reasoning benchmarks by 40%",
        metadata={"source": "openai_blog", "date": "2024-01"}
    )
    assert isinstance(memory_id, str)
    decision_id = context.record_decision(
        category="model_selection",
        scenario="Choose LLM for production reasoning pipeline",
        reasoning="GPT-4 benchmark advantage justifies 3x cost increase",
        outcome="selected_gpt4",
        confidence=0.91,
        entities=["gpt-4", "gpt-3.5"],
        decision_maker="pipeline_agent",
    )
    precedents = context.find_precedents("model selection reasoning", limit=5)
    lines = []
    for p in precedents:
        lines.append("[{}] {}  (confidence: {:.2f})".format(p.category, p.outcome, p.confidence))
        lines.append("  Reasoning: {}".format(p.reasoning))
    assert lines[0] == "[model_selection] selected_gpt4  (confidence: 0.91)"
    assert precedents[0].decision_id == decision_id
    chain = context.get_causal_chain(decision_id, direction="downstream", max_depth=5)
    assert len(chain) == 0  # nothing was recorded as caused by it yet
    follow = context.record_decision(category="budget", scenario="Raise the inference budget",
                                     reasoning="GPT-4 costs 3x", outcome="budget_raised", confidence=0.8,
                                     caused_by=[decision_id])
    assert [d.decision_id for d in context.get_causal_chain(decision_id, direction="downstream", max_depth=5)] == [
        follow]
    explanation = context.trace_decision_explainability(decision_id)
    assert explanation["total_connections"] == 3  # two entities and one downstream decision
    assert {e["entity_id"] for e in explanation["entities"]} == {"gpt-4", "gpt-3.5"}


def test_full_agent_context_pattern():
    context = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(
            advanced_analytics=True,  # PageRank, centrality, community detection
            kg_algorithms=True,       # path-finding, link prediction
        ),
        decision_tracking=True,       # requires knowledge_graph
        retention_days=90,
        max_memories=50000,
    )
    decision_id = context.record_decision(
        category="model_selection",
        scenario="Choose LLM for production reasoning pipeline",
        reasoning="GPT-4 benchmark advantage justifies 3x cost",
        outcome="selected_gpt4",
        confidence=0.91,
        entities=["gpt-4", "gpt-3.5"],
    )
    precedents = context.find_precedents("model selection", limit=5)
    assert [p.decision_id for p in precedents] == [decision_id]


def test_policy_enforcement_pattern():
    context = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(),
        decision_tracking=True,
    )
    engine = PolicyEngine(graph_store=context.knowledge_graph)
    engine.add_policy(Policy(
        policy_id="data_privacy",
        name="Data Privacy",
        description="No PII stored without user consent flag",
        rules={"required_user_consent": True, "max_retention_days": 90},
        category="privacy",
        version="1.2",
        created_at=datetime(2024, 1, 1),
        updated_at=datetime(2024, 1, 1),
    ))
    decision = Decision(
        decision_id="dec_store_email",
        category="data_storage",
        scenario="Store user profile",
        reasoning="User opted in to profile storage",
        outcome="stored",
        confidence=1.0,
        timestamp=datetime.now(),
        decision_maker="profile_agent",
        metadata={"user_consent": True, "retention_days": 30},
    )
    blocked = []
    if engine.check_compliance(decision, "data_privacy"):
        context.record_decision(
            category=decision.category,
            scenario=decision.scenario,
            reasoning=decision.reasoning,
            outcome=decision.outcome,
            confidence=decision.confidence,
        )
    else:
        blocked.append("Blocked by policy: data_privacy")
    assert blocked == []
    assert [d.outcome for d in context.find_precedents("store a user profile")] == ["stored"]
    # the same gate blocks a decision without consent, and says why
    no_consent = Decision(**{**decision.__dict__, "decision_id": "dec_2", "metadata": {"retention_days": 30}})
    result = engine.check_compliance(no_consent, "data_privacy")
    assert not result and [v.rule for v in result.violations] == ["required_user_consent"]


def test_context_graph_decisions():
    graph = ContextGraph(advanced_analytics=True)
    graph.add_node("Python", "language", properties={"paradigm": "multi-paradigm"})
    graph.add_node("FastAPI", "framework", properties={"language": "Python"})
    graph.add_edge("Python", "FastAPI", "enables")
    decision_id = graph.record_decision(
        category="technology_choice",
        scenario="Web API framework selection",
        reasoning="FastAPI's async support and auto-docs match our requirements",
        outcome="selected_fastapi",
        confidence=0.92,
        entities=["Python", "FastAPI"],
    )
    similar = graph.find_precedents_by_scenario("web framework", limit=3)
    stats = graph.stats()
    assert similar[0]["decision_id"] == decision_id and similar[0]["outcome"] == "selected_fastapi"
    assert stats["node_count"] == 3 and stats["edge_count"] == 3  # enables + two decision->entity links


def test_policy_engine_example():
    graph = ContextGraph()
    policy = PolicyEngine(graph_store=graph)
    p = Policy(
        policy_id="policy_001",
        name="Confidence Threshold Policy",
        description="All decisions must have confidence >= 0.7",
        rules={"min_confidence": 0.7, "requires_reasoning": True},
        category="decision_quality",
        version="1.0",
        created_at=datetime.now(),
        updated_at=datetime.now(),
    )
    policy.add_policy(p)
    decision = Decision(
        decision_id="dec_001",
        category="loan_approval",
        scenario="First-time homebuyer",
        reasoning="Good credit score and stable employment",
        outcome="approved",
        confidence=0.94,
        timestamp=datetime.now(),
        decision_maker="loan_agent",
    )
    compliant = policy.check_compliance(decision, "policy_001")
    assert compliant and str(bool(compliant)) == "True"
    policies = policy.get_applicable_policies(category="decision_quality")
    assert ["{} v{}".format(p.name, p.version) for p in policies] == ["Confidence Threshold Policy v1.0"]


def test_healthcare_treatment_decisions():
    health_agent = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(),
        decision_tracking=True,
    )
    health_agent.store("Patient has hypertension, type 2 diabetes")
    health_agent.store("Patient allergic to penicillin: verified 2024-01")
    decision_id = health_agent.record_decision(
        category="treatment_plan",
        scenario="Hypertension with comorbid diabetes",
        reasoning="ACE inhibitors are renoprotective in diabetic patients",
        outcome="prescribed_lisinopril",
        confidence=0.91,
    )
    precedents = health_agent.find_precedents("hypertension diabetes", limit=5)
    assert ["Past: {}  (confidence: {:.2f})".format(p.outcome, p.confidence) for p in precedents] == [
        "Past: prescribed_lisinopril  (confidence: 0.91)"]
    chain = health_agent.get_causal_chain(decision_id, direction="downstream")
    assert "Follow-up decisions triggered: {}".format(len(chain)) == "Follow-up decisions triggered: 0"


def test_finance_loan_decisions():
    graph = ContextGraph()
    policy = PolicyEngine(graph_store=graph)
    p = Policy(
        policy_id="lending_policy",
        name="Lending Policy",
        description="Min confidence 0.8 for loan decisions",
        rules={"min_confidence": 0.8},
        category="loan_approval",
        version="1.0",
        created_at=datetime.now(),
        updated_at=datetime.now(),
    )
    policy.add_policy(p)
    loan_agent = AgentContext(
        vector_store=_vs(),
        knowledge_graph=graph,
        decision_tracking=True,
    )
    loan_agent.store("Applicant: credit score 750, DTI 28%, stable employment 4yr")
    d = Decision(
        decision_id="dec_loan_001",
        category="loan_approval",
        scenario="First-time homebuyer: 30yr fixed, 20% down",
        reasoning="Credit score above threshold, DTI within limits",
        outcome="approved_300k",
        confidence=0.94,
        timestamp=datetime.now(),
        decision_maker="loan_agent",
    )
    compliant = policy.check_compliance(d, "lending_policy")
    recorded = None
    if compliant:
        recorded = loan_agent.record_decision(
            category=d.category,
            scenario=d.scenario,
            reasoning=d.reasoning,
            outcome=d.outcome,
            confidence=d.confidence,
        )
    assert recorded is not None
    found = loan_agent.find_precedents("first time home buyer mortgage application", limit=1)
    assert [x.decision_id for x in found] == [recorded]
    weak = Decision(**{**d.__dict__, "decision_id": "dec_loan_002", "confidence": 0.6})
    assert not policy.check_compliance(weak, "lending_policy")


def test_persist_and_restore(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    context = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(),
        decision_tracking=True,
    )
    context.store("Important fact learned during session")
    did = context.record_decision(
        category="ops", scenario="Scale up", reasoning="Load > 80%",
        outcome="scaled_to_10_replicas", confidence=0.97,
    )
    context.checkpoint("after_scaling")
    context.flush_checkpoint("after_scaling")
    context.save("agent_state/")
    restored = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(),
        decision_tracking=True,
    )
    restored.load("agent_state/")
    results = restored.retrieve("load scaling decisions", max_results=3)
    assert results and any("Important fact" in r["content"] for r in results)
    found = restored.find_precedents("scaling up replicas under load", limit=1)
    assert [d.decision_id for d in found] == [did] and found[0].outcome == "scaled_to_10_replicas"
    restored.checkpoint("restored")
    assert restored.diff_checkpoints("after_scaling", "restored")["decisions_added"] == []


def test_checkpoint_methods():
    context = AgentContext(vector_store=_vs(), knowledge_graph=ContextGraph(), decision_tracking=True)
    context.checkpoint("before_inference")
    context.record_decision(category="ops", scenario="Scale up", reasoning="Load > 80%",
                            outcome="scaled_to_10_replicas", confidence=0.97, entities=["web"])
    context.checkpoint("after_inference")
    diff = context.diff_checkpoints("before_inference", "after_inference")
    assert "Decisions added: {}".format(len(diff["decisions_added"])) == "Decisions added: 1"
    assert "Relationships added: {}".format(len(diff["relationships_added"])) == "Relationships added: 1"
    context.flush_checkpoint("after_inference")
    assert context.list_checkpoints() == ["after_inference", "before_inference"]


def test_proximity_weighted_precedents():
    context = AgentContext(
        vector_store=_vs(),
        knowledge_graph=ContextGraph(advanced_analytics=True),
        decision_tracking=True,
        proximity_weight=0.3,   # 0.7×semantic + 0.3×proximity
    )
    context.record_decisions([
        dict(category="infra", scenario="Add nodes to the Kubernetes cluster", reasoning="CPU saturation",
             outcome="scaled_cluster", confidence=0.9, entities=["k8s"]),
        dict(category="infra", scenario="Move batch jobs to spot instances", reasoning="cut cost",
             outcome="spot_batch", confidence=0.8, entities=["k8s", "batch"]),
        dict(category="hr", scenario="Hire two SREs", reasoning="on-call load", outcome="hired", confidence=0.7),
    ])
    precedents = context.find_precedents(
        "infrastructure scaling decisions",
        proximity_weight=0.5,
        limit=5,
    )
    assert precedents[0].outcome == "scaled_cluster"
    for p in precedents:
        m = p.metadata
        w = m["proximity_weight"]
        assert m["combined_score"] == pytest.approx((1 - w) * m["semantic_score"] + w * m["proximity_score"],
                                                    abs=1e-5)
        # nothing in this graph is near "infrastructure scaling decisions" (k8s and batch are bare names): with no
        # anchor proximity cannot rank, so the weight is not applied rather than scaling every score down
        assert m["proximity_anchors"] == [] and w == 0.0 and m["combined_score"] == m["semantic_score"]
    pure = context.find_precedents("infrastructure scaling decisions", proximity_weight=0.0, limit=5)
    assert all(p.metadata["combined_score"] == p.metadata["semantic_score"] for p in pure)
    named = context.find_precedents("scaling decisions on k8s", limit=5)  # the context's 0.3; the query names k8s
    m = named[0].metadata
    assert m["proximity_weight"] == 0.3 and m["proximity_anchors"] and m["proximity_score"] > 0
    assert m["combined_score"] == pytest.approx(0.7 * m["hybrid_score"] + 0.3 * m["proximity_score"], abs=1e-5)
