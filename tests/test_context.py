"""AgentContext is composed, not mixed in: it holds its services, and a graph set later reaches all of them."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, AgentMemory, ContextGraph, ContextRetriever, ProcessingError
from agentcontext.decisions.service import DecisionService
from agentcontext.vector_store import VectorStore


def test_the_facade_holds_services_and_inherits_nothing():
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"))
    assert AgentContext.__mro__ == (AgentContext, object)
    assert isinstance(ctx.memory, AgentMemory) and isinstance(ctx.retriever, ContextRetriever)
    assert isinstance(ctx.decisions, DecisionService)
    assert ctx.knowledge_graph is None and ctx.retriever.knowledge_graph is None and ctx.decisions.graph is None


def test_a_graph_set_later_reaches_memory_retrieval_and_decisions(tmp_path):
    saved = ContextGraph()
    saved.add_node("gpt-4", "model", content="GPT-4, a large language model")
    saved.save_to_file(str(tmp_path / "kg.json"))
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), decision_tracking=True)
    with pytest.raises(ProcessingError, match="needs a knowledge graph"):
        ctx.record_decision(category="c", scenario="s", reasoning="r", outcome="o", confidence=0.5)
    assert ctx.load_graph(str(tmp_path / "kg.json"))["node_count"] == 1
    graph = ctx.knowledge_graph
    assert ctx.retriever.knowledge_graph is graph and ctx.decisions.graph is graph and ctx.memory.entity_graph is graph
    mid = ctx.store("GPT-4 leads the reasoning benchmarks", metadata={"entities": ["gpt-4"]})
    assert [e.dst for e in ctx.memory.db.edges(src=mid)] == [graph.resolve("gpt-4")]
    did = ctx.record_decision(category="c", scenario="Pick a model", reasoning="benchmarks", outcome="gpt-4",
                              confidence=0.9)
    assert graph.store.get_node(did).kind == "decision"


def test_graph_expansion_off_links_nothing_and_imports_never_link():
    graph = ContextGraph()
    off = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=graph, graph_expansion=False)
    mid = off.store("Acme signed the contract", metadata={"entities": ["acme"]})
    assert off.memory.db.edges(src=mid) == [] and graph.resolve("acme") is None
    on = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph())
    # seed 003: entities named by imported memories are provenance, not applied to the ContextGraph
    assert on.import_data({"memories": [{"id": "m1", "content": "Acme renewed", "metadata": {"entities": ["acme"]}}]},
                          format="dict") == 1
    assert on.memory.db.edges(src="m1") == [] and on.knowledge_graph.resolve("acme") is None
    assert on.get_memory("m1")["metadata"]["entities"] == ["acme"]
