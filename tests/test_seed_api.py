"""Seed 003 as documented (issue 26 s3): the memory cap through the facade, precedents with proximity and
embeddings, decision context capture, GraphRAG over a loaded graph and the retrieval modes."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, VectorStore


def test_facade_retrieval_counts_as_use_for_the_memory_cap():
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), max_memories=3)
    a = ctx.store("The billing service runs on PostgreSQL 16")
    b = ctx.store("The cafeteria serves pasta on Fridays")
    c = ctx.store("Office plants are watered on Mondays")
    top = ctx.retrieve("which database does billing use", max_results=1)
    assert top[0]["id"] == a
    ctx.store("Parking permits renew every January")
    assert ctx.get_memory(a) is not None  # just retrieved: the most recently used, so it stays
    assert ctx.get_memory(b) is None and ctx.get_memory(c) is not None  # b was the least recently used


def company_kg(path):
    """A small company graph in the plain {"nodes", "edges"} shape load_graph reads."""
    import json

    nodes = [
        {"id": "apple", "type": "company", "name": "Apple Inc.", "content": "Apple Inc., maker of the iPhone"},
        {"id": "tony_fadell", "type": "person", "name": "Tony Fadell",
         "content": "Tony Fadell, engineer who led the iPod team at Apple"},
        {"id": "nest", "type": "company", "name": "Nest Labs", "content": "Nest Labs, smart thermostat maker"},
        {"id": "thermostat", "type": "concept", "name": "Learning thermostat",
         "content": "A thermostat that learns a household's schedule"},
        {"id": "bakery", "type": "company", "name": "Corner Bakery", "content": "A bakery selling sourdough"},
    ]
    edges = [
        {"source": "tony_fadell", "target": "apple", "type": "alumnus_of"},
        {"source": "tony_fadell", "target": "nest", "type": "founded"},
        {"source": "nest", "target": "thermostat", "type": "makes"},
    ]
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))
    return path


def test_graphrag_over_a_loaded_graph_finds_its_nodes_and_expands_from_them(tmp_path):
    from agentcontext import ContextGraph

    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph(),
                       hybrid_alpha=0.4, max_expansion_hops=3)
    ctx.load_graph(str(company_kg(tmp_path / "company_kg.json")))
    results = ctx.retrieve("companies founded by Apple alumni", use_graph=True, max_results=10)
    by_node = {r.get("node_id"): r for r in results}
    assert "apple" in by_node and by_node["apple"]["source"] == "graph"
    assert by_node["apple"]["signals"]["name"] == 1.0  # the query names it
    # multi-hop: the alumnus and the company he founded are reached from the node the query found
    assert {"tony_fadell", "nest"} <= set(by_node)
    assert "bakery" not in by_node or by_node["bakery"]["score"] < by_node["nest"]["score"]
    assert all(0.0 <= r["score"] <= 1.0 and r["signals"] for r in results)
    # found by meaning alone, no word shared with the node's text
    heat = ctx.retrieve("device that saves heating energy at home", use_graph=True, max_results=3)
    assert heat[0].get("node_id") == "thermostat" and heat[0]["signals"]["dense"] > 0.3
    # kept current: a node added (or changed) after the load is found; a retracted one is not
    ctx.knowledge_graph.add_node("fusion_drive", "product", content="Fusion Drive, a hybrid disk from Apple")
    assert "fusion_drive" in {r.get("node_id") for r in ctx.retrieve("hybrid disk storage", max_results=3)}
    ctx.knowledge_graph.retract_node("fusion_drive")
    assert "fusion_drive" not in {r.get("node_id") for r in ctx.retrieve("hybrid disk storage", max_results=3)}


def test_use_graph_without_a_knowledge_graph_is_an_error():
    from agentcontext import ValidationError

    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"))
    ctx.store("User prefers concise responses with code examples")
    with pytest.raises(ValidationError, match="knowledge_graph=ContextGraph"):
        ctx.retrieve("user coding preferences", use_graph=True)
    assert ctx.retrieve("user coding preferences")  # vector-only, as documented, when use_graph is not asked for
    with pytest.raises(ValidationError, match="retriever.retrieve"):  # the modes live on the ContextRetriever
        ctx.retrieve("user coding preferences", mode="global")


def test_graph_nodes_reach_retrieval_only_for_a_principal_who_reads_them(tmp_path):
    from agentcontext import ContextGraph, Workspace, access

    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    try:
        ContextGraph(workspace=ws, name="people").add_node("dana", "person", content="Dana runs the nightly backups")
        ContextGraph(workspace=ws, name="secret").add_node("vault", "system",
                                                           content="The backup vault's nightly restore codes")
        access.grant(ws, "reader", "graph:people", "read")
        access.grant(ws, "reader", "memory:default", "read")
        mine = AgentContext(vector_store=VectorStore(workspace=ws), knowledge_graph=ContextGraph(workspace=ws),
                            principal="reader")
        ids = {r["id"] for r in mine.retrieve("who runs the nightly backups", use_graph=True, max_results=10)}
        assert "graph:people/dana" in ids and "graph:secret/vault" not in ids
        owner = AgentContext(vector_store=VectorStore(workspace=ws), knowledge_graph=ContextGraph(workspace=ws))
        ids = {r["id"] for r in owner.retrieve("who runs the nightly backups", use_graph=True, max_results=10)}
        assert {"graph:people/dana", "graph:secret/vault"} <= ids
    finally:
        ws.close()


def scaling_decisions():
    from agentcontext import ContextGraph

    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph(),
                       decision_tracking=True)
    g = ctx.knowledge_graph
    g.add_node("kubernetes", "technology", content="Kubernetes container orchestration")
    g.add_node("cluster_autoscaler", "technology", content="Cluster autoscaler")
    g.add_edge("cluster_autoscaler", "kubernetes", "runs_on")
    g.add_node("postgres", "technology", content="PostgreSQL database")
    near = ctx.record_decision(category="infra", scenario="Add capacity to the web tier", reasoning="Traffic doubled",
                               outcome="more_nodes", confidence=0.9, entities=["cluster_autoscaler"])
    far = ctx.record_decision(category="infra", scenario="Scaling decision for the database tier",
                              reasoning="Queries slowed down under load", outcome="bigger_db", confidence=0.9,
                              entities=["postgres"])
    return ctx, near, far


def test_find_precedents_proximity_decides_the_order_and_decisions_carry_their_embeddings():
    ctx, near, far = scaling_decisions()
    plain = ctx.find_precedents("kubernetes scaling decisions", limit=5, proximity_weight=0.0)
    assert [p.decision_id for p in plain] == [far, near]  # by meaning, the database decision is closer
    close = ctx.find_precedents("kubernetes scaling decisions", limit=5, proximity_weight=0.5)
    assert [p.decision_id for p in close] == [near, far]  # two hops from Kubernetes beats unreachable
    by_id = {p.decision_id: p.metadata for p in close}
    assert by_id[near]["proximity_score"] == pytest.approx(1 / 3) and by_id[far]["proximity_score"] == 0.0
    assert by_id[near]["combined_score"] == pytest.approx(0.5 * by_id[near]["hybrid_score"] + 0.5 / 3, abs=1e-5)
    for p in close:
        assert p.reasoning_embedding is not None and len(p.reasoning_embedding) == ctx.vector_store.dimension
        assert p.node2vec_embedding is None  # Node2Vec is costly: computed when asked for (or used to rank)
    for p in ctx.find_precedents("kubernetes scaling decisions", limit=5, proximity_weight=0.5, node2vec=True):
        assert len(p.reasoning_embedding) == ctx.vector_store.dimension and len(p.node2vec_embedding) > 0
    # a query near nothing in the graph: proximity cannot rank, and does not scale the scores down
    alone = ctx.find_precedents("quarterly budget review", limit=5, proximity_weight=0.5)
    assert all(p.metadata["proximity_weight"] == 0.0 and p.metadata["combined_score"] == p.metadata["hybrid_score"]
               for p in alone)


def test_every_decision_captures_the_calling_system_and_the_context_in_effect():
    ctx, near, _ = scaling_decisions()
    captured = ctx.get_decision(near).metadata["captured"]
    assert captured["system"].startswith("agentcontext ") and captured["program"] and captured["host"]
    assert captured["principal"] == "owner" and "entities" not in captured  # those are edges, access-checked
    assert captured["graph"] == ctx.knowledge_graph.namespace
    mine = ctx.record_decision(category="ops", scenario="Scale up", reasoning="Load > 80%", outcome="scaled",
                               confidence=0.97, metadata={"captured": {"system": "slack"}, "ticket": "OPS-1"})
    assert ctx.get_decision(mine).metadata == {"captured": {"system": "slack"}, "ticket": "OPS-1"}  # given: kept


def two_teams():
    """Two communities: the money side (payments, invoices, refunds, the ledger) and the hiring side."""
    from agentcontext import ContextGraph, ContextRetriever

    g = ContextGraph()
    g.add_nodes([
        {"id": "stripe", "type": "system", "content": "Stripe processes card payments"},
        {"id": "invoices", "type": "process", "content": "Invoices are issued monthly to customers"},
        {"id": "refunds", "type": "process", "content": "Refunds return money to a customer's card"},
        {"id": "ledger", "type": "system", "content": "The general ledger records every transaction"},
        {"id": "recruiting", "type": "team", "content": "Recruiting sources candidates"},
        {"id": "interviews", "type": "process", "content": "Interviews assess candidates in four rounds"},
        {"id": "offers", "type": "process", "content": "Offers are approved by the hiring manager"},
    ])
    g.add_edges([{"source": a, "target": b, "type": t} for a, b, t in [
        ("stripe", "invoices", "collects"), ("refunds", "stripe", "runs_through"), ("stripe", "ledger", "posts_to"),
        ("invoices", "ledger", "posts_to"), ("recruiting", "interviews", "schedules"),
        ("interviews", "offers", "leads_to"), ("recruiting", "offers", "drafts")]])
    return g, ContextRetriever(knowledge_graph=g)


def test_global_mode_answers_from_community_summaries():
    g, retriever = two_teams()
    top = retriever.retrieve("How does the company handle money?", mode="global", max_results=2)
    assert [r.source for r in top] == ["community", "community"]
    money = top[0]
    assert set(money.metadata["members"]) == {"stripe", "invoices", "refunds", "ledger"}
    assert money.metadata["summarised_by"] == "extractive" and "general ledger" in money.content
    assert "Stripe collects Invoices" in money.content or "stripe collects invoices" in money.content.lower()
    assert 0.0 <= top[1].score < money.score <= 1.0 and {"dense", "keyword"} <= set(money.signals)
    assert retriever.retrieve_global("hiring pipeline", max_results=1)[0].metadata["members"][0] in {
        "recruiting", "interviews", "offers"}

    class Writer:  # stands in for a hosted model (llms provider protocol: complete(messages) -> .text)
        provider, model = "fake", "writer-1"
        prompts: list = []

        def complete(self, messages, **kw):
            from types import SimpleNamespace

            self.prompts.append(messages[-1]["content"])
            return SimpleNamespace(text="A payments and accounting group." if "ledger" in messages[-1]["content"]
                                   else "A hiring group.")

    written = retriever.retrieve_global("payments and accounting", max_results=1, llm_provider=Writer())
    assert written[0].content == "A payments and accounting group." and len(Writer.prompts) == 2
    assert written[0].metadata["summarised_by"] == "fake:writer-1"


def test_drift_starts_from_communities_and_follows_up_locally_and_hybrid_fuses():
    from agentcontext import ValidationError

    g, retriever = two_teams()
    drift = retriever.retrieve_drift("How does the company handle money?", max_results=6)
    assert drift[0].source == "community" and set(drift[0].metadata["members"]) >= {"stripe", "ledger"}
    follow = [r for r in drift if r.source != "community"]
    assert follow and all(r.extra["community"] == drift[0].id for r in follow[:2])
    assert all("community" in r.signals for r in follow)
    assert {g.user_id(r.id) for r in follow} <= {"stripe", "invoices", "refunds", "ledger", "recruiting",
                                                 "interviews", "offers"}
    hybrid = retriever.retrieve("Which system records transactions?", mode="hybrid", max_results=5)
    assert {"community", "graph"} <= {r.source for r in hybrid}
    assert hybrid[0].id == g.store_id("ledger")  # the one node that answers beats its community's summary
    assert [r.score for r in hybrid] == sorted((r.score for r in hybrid), reverse=True)
    with pytest.raises(ValidationError, match="truth_filter"):
        retriever.retrieve("q", mode="drift", truth_filter=object())
    from agentcontext import ContextRetriever

    with pytest.raises(ValidationError, match="knowledge_graph"):
        ContextRetriever().retrieve_global("anything")
