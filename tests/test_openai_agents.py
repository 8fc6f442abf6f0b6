"""The OpenAI Agents SDK adapter (integrations.openai_agents): the same answers as the SDK's own SQLiteSession for the
same calls, a Runner.run with a scripted model calling our tools, the principal's grants, erasure to the byte, a
missing SDK, and the session on PostgreSQL. (The SDK's own session tests: tests/framework/openai_agents/.)"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession  # noqa: E402
from agents.exceptions import UserError  # noqa: E402
from agents.memory import Session  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentcontext import access  # noqa: E402
from agentcontext.erasure import erase_workspace_entity  # noqa: E402
from agentcontext.errors import AccessDeniedError, DependencyMissingError, ValidationError  # noqa: E402
from agentcontext.integrations.openai_agents import AgentContextSession, agentcontext_tools  # noqa: E402
from agentcontext.memory.service import workspace_memory  # noqa: E402

from .bytescan import folder_files, hits, new_secret  # noqa: E402
from .test_access import build_workspace  # noqa: E402

ITEMS = [
    {"role": "user", "content": "Hello, where is the Golden Gate Bridge?"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "In San Francisco.", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{\"city\": \"SF\"}"},
    {"type": "function_call_output", "call_id": "c1", "output": "fog, 14°C"},
    {"role": "user", "content": "こんにちは 😊 O'Reilly; DROP TABLE x;--"},
]


def run(coro):
    return asyncio.run(coro)


async def script(session) -> list:
    """The same calls on any session; every answer, in order."""
    out = [await session.get_items(), await session.pop_item()]
    await session.add_items(ITEMS[:3])
    await session.add_items([])
    await session.add_items(ITEMS[3:])
    for limit in (None, 0, 1, 2, 5, 10, -1):
        out.append(await session.get_items(limit=limit))
    out += [await session.pop_item(), await session.pop_item(), await session.get_items()]
    await session.clear_session()
    out.append(await session.get_items())
    await session.add_items(ITEMS[1:2])
    out += [await session.get_items(), await session.pop_item(), await session.pop_item()]
    return out


def test_the_same_answers_as_the_sdks_sqlite_session(tmp_path):
    theirs = SQLiteSession("s", tmp_path / "sdk.db")
    ours = AgentContextSession.from_url("s", url=f"sqlite:///{tmp_path / 'ours.db'}")
    try:
        expected = run(script(theirs))
        assert run(script(ours)) == expected
        assert expected[2] == ITEMS  # (the script does say something)
    finally:
        theirs.close()
        ours.close()


def test_items_are_memories_of_one_conversation_that_recall_finds(ws):
    session = AgentContextSession("chat-1", ws, user_id="u-7")
    assert isinstance(session, Session)  # the SDK's runtime-checkable protocol
    run(session.add_items(ITEMS))
    memory = workspace_memory(ws)
    history = memory.get_conversation_history("chat-1")
    assert [m["conversation_id"] for m in history] == ["chat-1"] * len(ITEMS)
    assert history[1]["content"] == "In San Francisco." and history[2]["content"] == 'lookup({"city": "SF"})'
    assert {m["user_id"] for m in history} == {"u-7"}
    found = memory.retrieve("What is the weather like, fog?", max_results=1)
    assert found[0]["content"] == "fog, 14°C"
    other = AgentContextSession("chat-2", ws)
    assert run(other.get_items()) == []  # one conversation per session id


def test_a_failed_write_stores_nothing_and_the_session_goes_on(ws):
    session = AgentContextSession("chat", ws)
    with pytest.raises(TypeError):
        run(session.add_items([ITEMS[0], {"role": "user", "content": object()}]))
    assert run(session.get_items()) == []
    with pytest.raises(ValidationError):
        run(session.add_items(["not a dict"]))
    run(session.add_items(ITEMS[:1]))
    assert run(session.get_items()) == ITEMS[:1]
    session.close()
    with pytest.raises(ValidationError, match="closed"):
        run(session.get_items())
    with pytest.raises(ValidationError):
        AgentContextSession("")


def test_a_cancelled_write_still_lands_once_and_the_cancellation_propagates(ws):
    session = AgentContextSession("chat", ws)

    async def cancel_midway():
        task = asyncio.create_task(session.add_items(ITEMS[:2]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await session.get_items()

    assert run(cancel_midway()) == ITEMS[:2]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_concurrent_pops_return_each_item_once(backend, tmp_path, request):
    url = f"sqlite:///{tmp_path / 'store.db'}" if backend == "sqlite" else \
        request.getfixturevalue("pg_server").url("openai_pops")
    a, b = AgentContextSession.from_url("c", url=url), AgentContextSession.from_url("c", url=url)

    async def both():
        await a.add_items(ITEMS[:4])
        return await asyncio.gather(*(s.pop_item() for s in (a, b, a, b, a)))

    popped = run(both())
    assert sorted(json.dumps(p, sort_keys=True) for p in popped if p is not None) == \
        sorted(json.dumps(i, sort_keys=True) for i in ITEMS[:4])
    assert popped.count(None) == 1
    a.close()
    b.close()


def test_a_runner_with_a_scripted_model_calls_our_tools_and_keeps_the_session(ws):
    build_workspace(ws)
    session = AgentContextSession("run-1", ws)
    run(session.add_items([{"role": "user", "content": "My badge number is 4471."}]))
    model = ScriptedModel()
    agent = Agent(name="helper", model=model, tools=agentcontext_tools(ws))
    model.extend([
        [function_call("search_knowledge", {"pack": "lib:open", "query": "onboarding guide", "limit": 3},
                       call_id="c1")],
        [function_call("flash", {"pack": "lib:open", "selector": "guide", "budget_tokens": 0}, call_id="c2"),
         function_call("recall_memory", {"query": "badge number", "max_results": 1}, call_id="c3")],
        [assistant_message("Read the basics, then the guide.")],
    ])
    result = run(Runner.run(agent, "How do I start onboarding?", session=session))
    assert result.final_output == "Read the basics, then the guide."
    outputs = {i["call_id"]: i["output"] for i in model.calls[-1].input if i.get("type") == "function_call_output"}
    assert json.loads(outputs["c1"])[0]["selector"] in {"guide", "basics"}
    assert json.loads(outputs["c2"])["order"] == ["basics", "guide"]
    assert "4471" in json.loads(outputs["c3"])[0]["content"]
    kinds = [i.get("type", "message") for i in run(session.get_items())]
    assert kinds.count("function_call_output") == 3 and len(kinds) == 9  # history, question, 3 calls, 3 outputs, answer


def denied(ws, who):
    return [r for r in ws.store.audit(principal=who) if r["outcome"] == "denied"]


def test_a_stranger_is_refused_and_audited_as_by_the_cli_and_mcp(ws):
    build_workspace(ws)  # grants exist: the workspace is multi-user
    access.grant(ws, "alice", "memory:default", "write")
    alice = AgentContextSession("chat", ws, principal="alice")
    run(alice.add_items(ITEMS[:2]))
    stranger = AgentContextSession("chat", ws, principal="mallory")
    for call in (stranger.get_items(), stranger.add_items(ITEMS[:1]), stranger.add_items([]), stranger.pop_item(),
                 stranger.clear_session()):
        with pytest.raises(AccessDeniedError):
            run(call)
    assert len(denied(ws, "mallory")) == 5
    assert run(alice.get_items()) == ITEMS[:2]
    reader = AgentContextSession("chat", ws, principal="reader")  # reads lib:open only
    with pytest.raises(AccessDeniedError):
        run(reader.get_items())
    tools = {t.name: t for t in agentcontext_tools(ws, principal="reader", raise_errors=True)}
    model = ScriptedModel()
    model.extend([[function_call("read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"},
                                 call_id="c1")]])
    with pytest.raises(UserError) as raised:  # the SDK wraps a tool's error, ours is its cause
        run(Runner.run(Agent(name="a", model=model, tools=list(tools.values())), "salaries?"))
    assert isinstance(raised.value.__cause__, AccessDeniedError)
    assert [r["action"] for r in denied(ws, "reader")][-1] == "read"
    # by default the SDK hands the refusal to the model, the row is audited all the same
    model.extend([[function_call("read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"},
                                 call_id="c2")], [assistant_message("I may not read that.")]])
    quiet = agentcontext_tools(ws, principal="reader")
    result = run(Runner.run(Agent(name="a", model=model, tools=quiet), "salaries?"))
    output = next(i["output"] for i in model.calls[-1].input if i.get("type") == "function_call_output")
    assert "reader may not read" in output and "Secret salary" not in output
    assert result.final_output == "I may not read that." and len(denied(ws, "reader")) == 3


def test_after_an_erasure_of_the_user_no_file_holds_what_the_session_stored(tmp_path):
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    session = AgentContextSession("support-7", ws, user_id="customer-4471")
    run(session.add_items([{"role": "user", "content": f"My card is {secret}"},
                           {"role": "assistant", "content": f"Noted: {secret}"}]))
    assert workspace_memory(ws).retrieve(f"card {secret}")  # the memory index is built and saved too
    ws.index_files.wait()
    assert hits(folder_files(home), secret)
    receipt = erase_workspace_entity(ws, "customer-4471")
    assert receipt.complete
    assert run(session.get_items()) == []
    ws.index_files.wait()
    assert hits(folder_files(home), secret) == {}
    ws.close()


def test_without_the_sdk_the_import_names_the_extra():
    code = ("import sys; sys.modules['agents'] = None\n"
            "try:\n    import agentcontext.integrations.openai_agents\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith(DependencyMissingError.__name__), proc.stderr
    assert "pip install 'agentcontext[openai-agents]'" in proc.stdout


@pytest.mark.postgres
def test_the_session_on_postgresql_gives_the_same_answers(pg_server, tmp_path):
    theirs = SQLiteSession("s", tmp_path / "sdk.db")
    ours = AgentContextSession.from_url("s", url=pg_server.url("openai_session"))
    try:
        assert run(script(ours)) == run(script(theirs))
    finally:
        theirs.close()
        ours.close()
