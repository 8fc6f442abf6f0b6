"""The memory tools over a real in-process mcp.Client session: schemas, every tool against the Python calls,
bad calls as tool errors, and the ``memory:<name>`` access rule (a reader may retrieve but not store)."""
from __future__ import annotations

from agentcontext import access
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory

from .test_mcp import call, run, walk_objects

MEMORY_TOOLS = {"store_memory", "retrieve_memories", "forget_memories", "get_memory", "conversation_history",
                "edit_memory", "memory_versions"}
WRITERS = {"store_memory", "forget_memories", "edit_memory"}
FREE_FORM = {"metadata", "filters"}  # JSON metadata is free-form by design; every other object forbids unknown keys


def python_memory(ws) -> AgentMemory:
    """The store `agentcontext memory ...` uses (cli/memory.py, _memory)."""
    return AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited")


def test_memory_tools_are_listed_with_strict_schemas(ws):
    listed = run(build_server(ws, capabilities=["memory"]), lambda c: c.list_tools())
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == MEMORY_TOOLS
    for name, tool in by_name.items():
        assert len(tool.description) > 60, name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        for prop, sub in schema["properties"].items():
            if prop not in FREE_FORM:
                assert all(o.get("additionalProperties") is False for o in walk_objects(sub)), (name, prop)
        assert tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is (name not in WRITERS)
    assert by_name["forget_memories"].annotations.destructive_hint is True
    assert by_name["store_memory"].input_schema["required"] == ["content"]
    assert by_name["retrieve_memories"].input_schema["required"] == ["query"]
    assert set(by_name["retrieve_memories"].input_schema["properties"]) == {
        "query", "max_results", "conversation_id", "user_id", "min_score", "filters"}  # filters: the CLI's --meta


def test_every_memory_tool_returns_what_the_python_call_returns(ws):
    async def script(client):
        out = {"ids": []}
        for args in [{"content": "We agreed the launch moves to March.", "conversation_id": "c1", "user_id": "ann"},
                     {"content": "Ann is vegetarian and avoids mushrooms.", "conversation_id": "c1", "user_id": "ann",
                      "metadata": {"type": "preference", "tags": ["food"]}},
                     {"content": "Bob's laptop is a 2019 ThinkPad.", "user_id": "bob"}]:
            is_error, data = await call(client, "store_memory", args)
            assert not is_error, data
            assert data["namespace"] == "memory:default"
            out["ids"].append(data["id"])
        out["retrieve"] = await call(client, "retrieve_memories", {"query": "what food does Ann eat",
                                                                   "max_results": 2})
        out["retrieve_user"] = await call(client, "retrieve_memories", {"query": "computer", "user_id": "bob"})
        out["get"] = await call(client, "get_memory", {"memory_id": out["ids"][1]})
        out["history"] = await call(client, "conversation_history", {"conversation_id": "c1"})
        out["history1"] = await call(client, "conversation_history", {"conversation_id": "c1", "max_items": 1})
        out["forget_one"] = await call(client, "forget_memories", {"memory_id": out["ids"][2]})
        out["get_gone"] = await call(client, "get_memory", {"memory_id": out["ids"][2]})
        out["forget_conv"] = await call(client, "forget_memories", {"conversation_id": "c1"})
        return out

    out = run(build_server(ws), script)
    mem = python_memory(ws)
    ids = out["ids"]
    assert not out["retrieve"][0]
    hits = out["retrieve"][1]["results"]
    assert [h["id"] for h in hits][0] == ids[1]  # the vegetarian memory answers the food question
    assert all(set(h["signals"]) >= {"dense", "bm25"} and 0 <= h["score"] <= 1.3 for h in hits)
    assert [h["id"] for h in out["retrieve_user"][1]["results"]] == [ids[2]]
    assert out["get"] == (False, {**out["get"][1], "id": ids[1], "content": "Ann is vegetarian and avoids mushrooms.",
                                  "metadata": {"type": "preference", "tags": ["food"]}, "user_id": "ann",
                                  "conversation_id": "c1"})
    assert [m["id"] for m in out["history"][1]["memories"]] == ids[:2]
    assert [m["id"] for m in out["history1"][1]["memories"]] == ids[1:2]
    assert out["forget_one"] == (False, {"namespace": "memory:default", "forgotten": 1})
    assert out["get_gone"][0] and out["get_gone"][1]["error"]["type"] == "NotFoundError"
    assert out["forget_conv"] == (False, {"namespace": "memory:default", "forgotten": 2})
    assert mem.count() == 0
    audited = [(r["action"], r["outcome"]) for r in ws.store.audit(principal="owner")
               if r["action"].startswith("memory.")]
    assert audited == [("memory.store", "ok")] * 3 + [("memory.forget", "ok")] * 2


def test_mcp_and_python_give_the_same_memories(ws):
    mem = python_memory(ws)
    mid = mem.store("The staging database lives on host db-stage-2.", conversation_id="ops", user_id="kim",
                    metadata={"type": "fact"})
    mem.store("Kim rotates the staging credentials every Friday.", conversation_id="ops", user_id="kim")
    mem.store("Lunch is at noon.", user_id="lee")

    async def script(client):
        return (await call(client, "retrieve_memories", {"query": "where is the staging database", "max_results": 3,
                                                         "min_score": 0.1}),
                await call(client, "get_memory", {"memory_id": mid}),
                await call(client, "conversation_history", {"conversation_id": "ops", "max_items": 10}))

    retrieved, got, history = run(build_server(ws), script)
    expected = mem.retrieve("where is the staging database", max_results=3, min_score=0.1)
    assert retrieved == (False, {"namespace": "memory:default", "results": expected})
    assert expected and expected[0]["id"] == mid
    assert got == (False, mem.get_memory(mid))
    assert history == (False, {"conversation_id": "ops", "memories": mem.get_conversation_history("ops", 10)})


def test_bad_memory_calls_are_tool_errors(ws):
    async def script(client):
        return [
            await call(client, "store_memory", {"content": "x", "colour": "red"}),
            await call(client, "store_memory", {}),
            await call(client, "store_memory", {"content": ""}),
            await call(client, "retrieve_memories", {"query": "x", "max_results": "5"}),
            await call(client, "retrieve_memories", {"query": "x", "max_results": 0}),
            await call(client, "retrieve_memories", {"query": "   "}),
            await call(client, "forget_memories", {}),
            await call(client, "forget_memories", {"days_old": -1}),
            await call(client, "get_memory", {"memory_id": "mem_nope"}),
            await call(client, "conversation_history", {}),
        ], await call(client, "store_memory", {"content": "still answering"})

    errors, after = run(build_server(ws), script)
    assert all(is_error for is_error, _ in errors)
    types = [data["error"]["type"] for _, data in errors]
    assert types == ["ValidationError"] * 8 + ["NotFoundError", "ValidationError"]
    assert "unknown argument 'colour'" in errors[0][1]["error"]["message"]
    assert "missing required argument 'content'" in errors[1][1]["error"]["message"]
    assert "at least one of memory_id" in errors[6][1]["error"]["message"]
    assert not after[0]
    assert python_memory(ws).count() == 1


def test_memory_access_follows_memory_grants(ws):
    mem = python_memory(ws)
    mid = mem.store("The office wifi password changes monthly.")
    access.grant(ws, "reader", "memory:*", "read")
    access.grant(ws, "writer", "memory:*", "write")
    access.grant(ws, "packonly", "lib:*", "write")

    async def as_reader(client):
        return (await call(client, "retrieve_memories", {"query": "wifi password"}),
                await call(client, "get_memory", {"memory_id": mid}),
                await call(client, "store_memory", {"content": "sneaky"}),
                await call(client, "forget_memories", {"memory_id": mid}))

    retrieved, got, stored, forgot = run(build_server(ws, principal="reader"), as_reader)
    assert not retrieved[0] and [r["id"] for r in retrieved[1]["results"]] == [mid]
    assert not got[0] and got[1]["id"] == mid
    for is_error, data in (stored, forgot):
        assert is_error and data["error"]["type"] == "AccessDeniedError"
        assert data["error"]["pack"] == "memory:default" and data["error"]["needed"] == "write"
    assert "agentcontext grant reader memory:default write" in stored[1]["error"]["message"]
    assert mem.count() == 1
    denied = [r["action"] for r in ws.store.audit(principal="reader") if r["outcome"] == "denied"]
    assert denied == ["memory.store", "memory.forget"]

    async def as_packonly(client):
        return await call(client, "retrieve_memories", {"query": "wifi"})

    no_read = run(build_server(ws, principal="packonly"), as_packonly)
    assert no_read[0] and no_read[1]["error"]["type"] == "AccessDeniedError"

    async def as_writer(client):
        return await call(client, "store_memory", {"content": "The wifi password is on the fridge."})

    ok = run(build_server(ws, principal="writer"), as_writer)
    assert not ok[0] and mem.get_memory(ok[1]["id"])["content"] == "The wifi password is on the fridge."
    assert [r["action"] for r in ws.store.audit(principal="writer")] == ["memory.store"]
