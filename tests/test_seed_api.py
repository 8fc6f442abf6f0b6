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
