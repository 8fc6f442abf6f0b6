"""ContextRetriever: memory + vector sources, graph expansion, hybrid_alpha, min score, signals."""
from __future__ import annotations

import pytest

from agentcontext import AgentMemory, ContextRetriever, ValidationError, VectorStore
from agentcontext.model import Edge, Node


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    yield mem
    mem.workspace.close()


def linked(memory):
    """A memory about a cloud decision, linked in the same store to a decision node and on to a policy."""
    mid = memory.store("We moved the analytics cluster to AWS eu-west-1 for latency")
    memory.store("The cafeteria serves pasta on Fridays")
    store = memory.db
    store.put_nodes([
        Node(id="dec:1", kind="decision", namespace="decisions", title="Choose cloud region",
             content="Decision: use eu-west-1 because customers are in Europe", props={"metadata": {"c": 1}}),
        Node(id="pol:1", kind="policy", namespace="policies", content="Data must stay in the EU"),
    ])
    store.put_edges([Edge(src=mid, type="informed_by", dst="dec:1", namespace="decisions", weight=0.8),
                     Edge(src="dec:1", type="governed_by", dst="pol:1", namespace="policies", weight=1.0)])
    return mid


def test_results_carry_source_score_and_signals(memory):
    mid = linked(memory)
    retriever = ContextRetriever(memory_store=memory, use_graph_expansion=False)
    results = retriever.retrieve(query="What decisions were made about cloud infrastructure?", max_results=10,
                                 min_relevance_score=0.3)
    assert results[0].id == mid and results[0].source == "memory"
    assert {"dense", "retrieval"} <= set(results[0].signals)
    assert all(r.score >= 0.3 for r in results)
    assert not [r for r in results if r.source == "graph"]


def test_graph_expansion_hops_and_alpha(memory):
    mid = linked(memory)
    retriever = ContextRetriever(memory_store=memory, max_expansion_hops=2, hybrid_alpha=0.5)
    results = retriever.retrieve("analytics cluster region", max_results=10, use_graph_expansion=True)
    by_id = {r.id: r for r in results}
    seed = by_id[mid]
    dec, pol = by_id["dec:1"], by_id["pol:1"]
    assert dec.source == "graph" and dec.signals["hops"] == 1.0 and pol.signals["hops"] == 2.0
    assert dec.signals["graph"] == pytest.approx(seed.score * 0.8)
    assert dec.score == pytest.approx(0.5 * dec.signals["graph"])
    assert pol.score < dec.score and dec.metadata == {"c": 1} and dec.extra["via"] == mid
    one_hop = ContextRetriever(memory_store=memory, max_expansion_hops=1).retrieve("analytics cluster region",
                                                                                   max_results=10)
    assert "dec:1" in {r.id for r in one_hop} and "pol:1" not in {r.id for r in one_hop}
    pure_vector = ContextRetriever(memory_store=memory, hybrid_alpha=0.0).retrieve("analytics cluster region",
                                                                                   max_results=10)
    assert not [r for r in pure_vector if r.source == "graph"]
    with pytest.raises(ValidationError):
        ContextRetriever(memory_store=memory, hybrid_alpha=1.5)


def test_any_vector_store_with_search_is_a_source():
    class Static:
        def search(self, *, query, limit):
            return [{"id": "v1", "score": 0.7, "content": "from a foreign backend", "metadata": {"a": 1}}][:limit]

    results = ContextRetriever(vector_store=Static(), use_graph_expansion=False).retrieve("anything")
    assert [(r.id, r.source, r.score, r.metadata) for r in results] == [("v1", "vector", 0.7, {"a": 1})]
    assert results[0].signals["dense"] == 0.7


def test_vector_store_search_over_workspace_nodes(memory):
    linked(memory)
    vs = memory.vector_store
    rows = vs.search("customers in Europe region choice", limit=3)
    assert rows and {"id", "score", "content", "metadata"} <= set(rows[0])
    retriever = ContextRetriever(memory_store=memory, vector_store=vs, use_graph_expansion=False)
    ids = [r.id for r in retriever.retrieve("cafeteria food", max_results=10)]
    assert len(ids) == len(set(ids))  # memories are not duplicated through the vector source


def test_modes_and_unsupported_entry_points(memory):
    retriever = ContextRetriever(memory_store=memory)
    with pytest.raises(ValidationError):
        retriever.retrieve("q", mode="global", truth_filter=object())
    with pytest.raises(ValidationError):
        retriever.retrieve("q", mode="nonsense")
    with pytest.raises(ValidationError):
        retriever.query_with_reasoning("q", truth_filter=object())
    with pytest.raises(ValidationError):
        retriever.memory_search("q", truth_filter=object())


def test_agent_context_links_memories_to_entities_and_expands():
    from agentcontext import AgentContext, ContextGraph

    ctx = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=ContextGraph(),
                       max_expansion_hops=2, hybrid_alpha=0.5)
    ctx.knowledge_graph.add_node("gpt-4", "model", content="GPT-4, a large language model")
    ctx.knowledge_graph.add_node("openai", "company", content="OpenAI, an AI lab")
    ctx.knowledge_graph.add_edge("gpt-4", "openai", "made_by")
    first = ctx.store("GPT-4 outperforms GPT-3.5 on reasoning benchmarks by 40%", metadata={"entities": ["gpt-4"]})
    ctx.batch_store([{"content": "Claude is reviewed next quarter", "metadata": {"entities": ["claude"]}}])
    assert ctx.knowledge_graph.resolve("claude") is not None  # missing entities are created
    results = ctx.retrieve("reasoning benchmark results", max_results=5)
    by_id = {r["id"]: r for r in results}
    assert results[0]["id"] == first
    gpt = by_id[ctx.knowledge_graph.resolve("gpt-4")]
    lab = by_id[ctx.knowledge_graph.resolve("openai")]
    assert gpt["source"] == "graph" and gpt["signals"]["hops"] == 1.0 and gpt["via"] == first
    # the graph's nodes are candidates in their own right (issue 26 s3): the lab is one hop from the model's node
    assert lab["signals"]["hops"] == 1.0 and lab["via"] == gpt["id"] and lab["score"] < gpt["score"]
    plain = ctx.retrieve("reasoning benchmark results", max_results=5, use_graph=False)
    assert all(r["source"] == "memory" for r in plain)
    assert ctx.forget(memory_id=first) == 1
    assert ctx.memory.db.edges(src=first) == []  # the memory's mention edges went with it
