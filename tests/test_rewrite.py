"""Query rewriting / decomposition with a provider (issue 29, opt-in): sub-queries from the local scripted server,
merged with the original question's results; every provider failure falls back to the question alone."""
from __future__ import annotations

import json
import time

import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError, ValidationError
from agentcontext.llms import OpenAICompatible
from agentcontext.memory import AgentMemory
from agentcontext.memory.rewrite import retrieve_rewritten, sub_queries

from .llm_server import Reply, ScriptedServer, openai_reply

TURNS = ["I adopted a grey kitten called Miso last week.", "Lovely! I started learning the cello.",
         "My sister is moving to Lisbon in June.", "I played my first cello recital yesterday.",
         "Miso knocked a plant off the shelf again.", "We went hiking near the lake on Sunday.",
         "The bakery on the corner sells great sourdough.", "My manager approved the conference trip."]
QUESTION = "What instrument does Bob play?"


def memory(ws, principal=None):
    m = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                    principal=principal)
    return m


@pytest.fixture
def mem(ws):
    m = memory(ws)
    m.batch_store([{"content": t} for t in TURNS])
    return m


def llm(server, **options):
    return OpenAICompatible(base_url=server.url + "/v1", model="m", **options)


def test_sub_queries_find_what_the_question_alone_misses(mem):
    plain = {r["content"] for r in mem.retrieve(QUESTION, max_results=3)}
    target = "My sister is moving to Lisbon in June."
    assert target not in plain
    reply = json.dumps({"queries": ["sister moving to Lisbon", QUESTION, "cello"]})
    with ScriptedServer([openai_reply(reply)]) as server:
        found = retrieve_rewritten(mem, llm(server), QUESTION, max_results=3)
        assert len(server.requests) == 1
        sent = server.requests[0].body["messages"]
    assert sent[-1]["content"] == QUESTION and '"queries"' in sent[0]["content"]
    contents = [r["content"] for r in found]
    assert target in contents and len(found) == 3
    assert [r["score"] for r in found] == sorted((r["score"] for r in found), reverse=True)
    sig = found[contents.index(target)]["signals"]["rewrite"]
    # the question itself is kept once, first; the duplicate from the model is dropped
    assert sig.pop("provider_ms") > 0
    assert sig == {"query": "sister moving to Lisbon", "queries": [QUESTION, "sister moving to Lisbon", "cello"],
                   "fallback": None}


@pytest.mark.parametrize("text", ["not json at all", json.dumps({"queries": "one string"}),
                                  json.dumps({"subqueries": ["x"]})])
def test_malformed_output_falls_back_to_the_question(mem, text):
    plain = mem.retrieve(QUESTION, max_results=3, count_use=False)
    with ScriptedServer([openai_reply(text)]) as server:
        found = retrieve_rewritten(mem, llm(server), QUESTION, max_results=3)
    assert [r["id"] for r in found] == [r["id"] for r in plain]
    assert all(r["signals"]["rewrite"]["fallback"] == "malformed_output" for r in found)
    assert all(r["signals"]["rewrite"]["queries"] == [QUESTION] for r in found)


def test_a_provider_timeout_falls_back_within_the_deadline(mem):
    with ScriptedServer([Reply(200, {}, delay=5.0)] * 3) as server:
        started = time.monotonic()
        found = retrieve_rewritten(mem, llm(server, timeout=0.3, max_retries=0, deadline=0.5), QUESTION)
        took = time.monotonic() - started
    assert took < 2.0
    assert found and all(r["signals"]["rewrite"]["fallback"] == "timeout" for r in found)
    queries, info = sub_queries(OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0,
                                                 deadline=1.0), QUESTION)
    assert queries == [] and info["fallback"] == "unreachable"


def test_no_read_no_provider_call(ws, mem):
    access.grant(ws, "reader", "memory:other", "read")  # multi-user from the first grant
    stranger = memory(ws, principal="stranger")
    with ScriptedServer([openai_reply(json.dumps({"queries": ["x"]}))]) as server:
        with pytest.raises(AccessDeniedError):
            retrieve_rewritten(stranger, llm(server), "What is Ann's secret?")
        assert server.requests == []  # the question never left
    with pytest.raises(ValidationError):
        retrieve_rewritten(mem, None, "  ")
