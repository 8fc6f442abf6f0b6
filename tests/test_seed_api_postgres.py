"""GraphRAG over the graph's own nodes on PostgreSQL: the server ranks the node vectors (issue 26 s3)."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, ContextGraph, VectorStore
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

pytestmark = pytest.mark.postgres


def test_graph_nodes_are_found_by_meaning_and_name_on_postgres(pg_server):
    ws = Workspace(open_store(pg_server.url("seed_api_nodes")))
    try:
        graph = ContextGraph(workspace=ws, name="kg")
        graph.add_nodes([
            {"id": "apple", "type": "company", "name": "Apple Inc.", "content": "Apple Inc., maker of the iPhone"},
            {"id": "thermostat", "type": "concept", "content": "A thermostat that learns a household's schedule"},
            {"id": "bakery", "type": "company", "content": "A bakery selling sourdough"},
        ])
        graph.add_edge("apple", "thermostat", "inspired")
        ctx = AgentContext(vector_store=VectorStore(workspace=ws), knowledge_graph=graph)
        heat = ctx.retrieve("device that saves heating energy at home", use_graph=True, max_results=2)
        assert heat[0]["node_id"] == "thermostat" and heat[0]["signals"]["dense"] > 0.3
        named = {r["node_id"]: r for r in ctx.retrieve("what does Apple make", use_graph=True, max_results=5)
                 if r.get("node_id")}
        assert named["apple"]["signals"]["name"] == 1.0 and named["apple"]["score"] > named["bakery"]["score"]
    finally:
        ws.close()
