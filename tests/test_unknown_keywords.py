"""Unknown keyword arguments are our ValidationError naming the accepted ones, never dropped or turned into metadata
filters (issue 26 section 2). Metadata filters go through ``filters=`` only; the documented keywords keep working."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, AgentMemory, ContextGraph, ContextRetriever, VectorStore
from agentcontext.errors import ValidationError


@pytest.fixture
def ctx():
    context = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384),
                           knowledge_graph=ContextGraph(), decision_tracking=True)
    context.store("The API scales with two replicas", metadata={"source": "ops"}, conversation_id="c1")
    return context


def test_agent_context_store_refuses_an_unknown_keyword(ctx):
    before = ctx.memory.count()
    with pytest.raises(ValidationError, match=r"unknown_kw.*accepts.*conversation_id.*metadata"):
        ctx.store("hello there", unknown_kw=1)
    assert ctx.memory.count() == before


def test_agent_memory_store_refuses_memory_id_and_names_id(ctx):
    with pytest.raises(ValidationError, match=r"memory_id.*did you mean") as caught:
        ctx.memory.store("hello two", memory_id="m1")
    assert "id" in caught.value.data["accepted"]
    assert ctx.memory.get_memory("m1") is None


def test_batch_store_refuses_unknown_item_keys(ctx):
    before = ctx.memory.count()
    with pytest.raises(ValidationError, match=r"item 1.*colour.*metadata"):
        ctx.memory.batch_store([{"content": "fine"}, {"content": "x y", "colour": "red"}])
    with pytest.raises(ValidationError, match="colour"):
        ctx.batch_store([{"content": "x y", "colour": "red"}])
    assert ctx.memory.count() == before  # nothing of the batch was written


@pytest.mark.parametrize("door", ["context", "memory", "retriever"])
def test_a_retrieve_typo_is_an_error_not_a_metadata_filter(ctx, door):
    call = {"context": ctx.retrieve, "memory": ctx.memory.retrieve,
            "retriever": ContextRetriever(memory_store=ctx.memory).retrieve}[door]
    with pytest.raises(ValidationError, match=r"max_result.*did you mean max_results") as caught:
        call("replicas", max_result=3)
    assert "filters" in str(caught.value)
    with pytest.raises(ValidationError, match="source"):
        call("replicas", source="ops")  # a metadata key as a keyword: spelled filters= instead
    assert [r["content"] if isinstance(r, dict) else r.content
            for r in call("replicas", filters={"source": "ops"})] == ["The API scales with two replicas"]


def test_documented_retrieve_keywords_still_work(ctx):
    assert ctx.retrieve("replicas", max_results=5, min_score=0.0, use_graph=False, conversation_id="c1")
    assert ctx.memory.retrieve(query="replicas", max_results=5, min_score=0.0, conversation_id="c1")


def test_find_precedents_refuses_an_unknown_keyword_and_a_weight_out_of_range(ctx):
    ctx.record_decision(category="ops", scenario="scaling the api", reasoning="load grew", outcome="approved",
                        confidence=0.9)
    with pytest.raises(ValidationError, match=r"limt.*did you mean limit"):
        ctx.find_precedents("scaling", limt=3)
    with pytest.raises(ValidationError, match=r"proximity_weight must be in \[0, 1\]"):
        ctx.find_precedents("scaling", proximity_weight=1.5)
    assert ctx.find_precedents("scaling", proximity_weight=0.5, limit=5)


@pytest.mark.parametrize("weight", [1.5, -0.1, float("nan")])
def test_a_proximity_weight_out_of_range_is_refused_at_construction(weight):
    with pytest.raises(ValidationError, match="proximity_weight"):
        AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=ContextGraph(),
                     proximity_weight=weight)
    with pytest.raises(ValidationError, match="proximity_weight"):
        ContextRetriever(memory_store=AgentMemory(), proximity_weight=weight)
