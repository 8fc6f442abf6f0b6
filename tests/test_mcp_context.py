"""get_context over a real in-process mcp.Client session: the same bundle as the Python call, a strict schema,
bad calls as tool errors, and what a principal without grants gets (nothing it may not read)."""
from __future__ import annotations

from agentcontext import access
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge.packs import install_folder
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory
from agentcontext.reasoning.service import ReasoningService
from agentcontext.retrieval import ContextRetriever

from .test_mcp import call, run, walk_objects

QUERY = "Which database does billing use?"


def fill(ws, write_pack):
    memory = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited")
    graph = ContextGraph(workspace=ws)
    mid = memory.store("Billing moved to PostgreSQL in March for its transactions.")
    graph.add_node("postgresql", "technology", content="PostgreSQL database")
    DecisionRecorder(graph).record_decision("technology", "Pick the billing database", "transactions",
                                            "postgresql", 0.9, entities=["postgresql"])
    install_folder(ws, write_pack("arch", {"db": {"title": "Billing database", "summary": "Billing on PostgreSQL",
                                                  "body": "Billing keeps invoices in PostgreSQL."}}))
    return memory, graph, mid


def test_get_context_is_listed_with_a_strict_schema(ws):
    listed = run(build_server(ws, capabilities=["context"]), lambda c: c.list_tools())
    (tool,) = listed.tools
    assert tool.name == "get_context" and len(tool.description) > 60
    assert tool.input_schema["required"] == ["query"] and tool.input_schema["additionalProperties"] is False
    assert all(o.get("additionalProperties") is False for o in walk_objects(tool.input_schema))
    assert tool.annotations.read_only_hint is True and tool.output_schema["type"] == "object"
    assert tool.input_schema["properties"]["include"]["anyOf"][0]["items"]["enum"] == ["memories", "docs",
                                                                                        "decisions", "graph"]


def test_get_context_returns_the_bundle_context_for_returns(ws, write_pack):
    memory, graph, mid = fill(ws, write_pack)
    server = build_server(ws)

    async def script(client):
        return (await call(client, "get_context", {"query": QUERY, "max_results": 6, "budget_tokens": 2000}),
                await call(client, "get_context", {"query": QUERY, "colour": "red"}),
                await call(client, "get_context", {"query": QUERY, "include": ["everything"]}),
                await call(client, "get_context", {"query": QUERY, "budget_tokens": 5}))

    (ok, got), (bad1, err1), (bad2, _), (bad3, err3) = run(server, script)
    assert not ok and bad1 and bad2 and bad3
    assert err1["error"]["type"] == "ValidationError" and err3["error"]["type"] == "BudgetExceededError"
    service = ReasoningService(ContextRetriever(memory_store=memory, use_graph_expansion=False), graph=graph,
                               workspace=ws, decisions=DecisionRecorder(graph))
    expected = service.context_for(QUERY, max_results=6, budget_tokens=2000).to_dict()
    assert got["text"] == expected["text"] and got["tokens"] == expected["tokens"] <= 2000
    assert [s["id"] for s in got["sources"]] == [s["id"] for s in expected["sources"]]
    ids = {s["id"] for s in got["sources"]}
    assert mid in ids and "lib:arch#db" in ids and any(s["kind"] == "decision" for s in got["sources"])
    assert got["instructions"].startswith("Answer the question using only")


def test_a_principal_gets_only_what_it_may_read(ws, write_pack):
    fill(ws, write_pack)
    access.grant(ws, "docs-only", "lib:arch", "read")

    async def script(client):
        return await call(client, "get_context", {"query": QUERY, "max_hops": 3})

    _, reader = run(build_server(ws, principal="docs-only"), script)
    assert {s["kind"] for s in reader["sources"]} == {"doc"}
    assert set(reader["skipped"]) == {"memories", "decisions", "graph"}
    assert "PostgreSQL in March" not in reader["text"]
    _, stranger = run(build_server(ws, principal="stranger"), script)
    assert stranger["num_sources"] == 0 and "Billing" not in stranger["text"].split("Question:")[0]
