"""store(..., infer=True): facts and entities extracted by a scripted model on 127.0.0.1, each resolved against
similar memories as add / update / delete / none, every change a version carrying its provenance; raw
storage stays the default and calls no model."""
from __future__ import annotations

import hashlib
import json

import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import ProviderError, ValidationError
from agentcontext.llms import OpenAICompatible
from agentcontext.reasoning.facts import EXTRACT_PROMPT, RESOLVE_PROMPT, infer_and_store
from tests.llm_server import ScriptedServer, openai_reply

TEXT = "Hi! I moved from Lyon to Paris last month, and I've become vegetarian. Also I now work at Acme."


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"), retention_policy=None)
    yield mem
    mem.workspace.close()


def model(extract: dict, resolve):
    """A scripted model: the extraction answer, then a resolution (a dict, or a function of what it was shown)."""
    def reply(request):
        system = request.body["messages"][0]["content"]
        user = request.body["messages"][-1]["content"]
        if system.startswith(EXTRACT_PROMPT):
            return openai_reply(json.dumps(extract), usage=(50, 20))
        assert system.startswith(RESOLVE_PROMPT)
        shown = json.loads(user)
        answer = resolve(shown) if callable(resolve) else resolve
        return openai_reply(json.dumps(answer), usage=(80, 30))
    return reply


FACTS = {"facts": [{"text": "The user lives in Paris.", "entities": ["Paris"]},
                   {"text": "The user is vegetarian.", "entities": []},
                   {"text": "The user works at Acme.", "entities": ["Acme"]}],
         "entities": [{"name": "Paris", "type": "place"}, {"name": "Acme", "type": "organisation"}]}


def number_of(shown, needle):
    return next(m["number"] for m in shown["existing_memories"] if needle in m["text"])


def test_add_update_delete_none_each_leave_a_version_with_provenance(memory):
    lyon = memory.store("The user lives in Lyon.", user_id="u1")
    meat = memory.store("The user eats meat every day.", user_id="u1")
    acme = memory.store("The user works at Acme.", user_id="u1")
    other = memory.store("The user lives in Lyon.", user_id="u2")  # another user's memory: never shown

    def resolve(shown):
        assert all("u2" not in m["text"] for m in shown["existing_memories"])
        return {"actions": [
            {"fact": 0, "action": "update", "memory": number_of(shown, "Lyon"), "text": "The user lives in Paris "
             "(moved from Lyon).", "reason": "the user moved"},
            {"fact": 1, "action": "delete", "memory": number_of(shown, "meat"), "reason": "now vegetarian"},
            {"fact": 1, "action": "add", "reason": "new diet"},
            {"fact": 2, "action": "none", "reason": "already known"}]}

    with ScriptedServer(model(FACTS, resolve)) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        out = infer_and_store(memory, llm, TEXT, user_id="u1", metadata={"channel": "chat"})
    extract_req, resolve_req = server.requests
    assert extract_req.body["messages"][-1]["content"] == TEXT
    assert extract_req.body["response_format"]["type"] == "json_schema"
    shown = json.loads(resolve_req.body["messages"][-1]["content"])
    assert [f["text"] for f in shown["new_facts"]] == [f["text"] for f in FACTS["facts"]]
    assert all("id" not in m and "mem_" not in m["text"] for m in shown["existing_memories"])

    events = [(r["event"], r["id"]) for r in out["results"]]
    added = next(r["id"] for r in out["results"] if r["event"] == "ADD")
    assert events == [("UPDATE", lyon), ("DELETE", meat), ("ADD", added), ("NONE", None)]
    assert out["usage"] == {"input_tokens": 130, "output_tokens": 50, "total_tokens": 180, "calls": 2}

    # update: a new version; the old text stays in history
    versions = memory.db.node_versions(lyon)
    assert [v.content for v in versions] == ["The user lives in Lyon.", "The user lives in Paris (moved from Lyon)."]
    prov = versions[-1].props["metadata"]["provenance"]
    assert prov["action"] == "update" and prov["reason"] == "the user moved" and prov["model"] == "scripted-model"
    assert prov["fact"] == "The user lives in Paris." and prov["previous_version"] == 1
    assert prov["method"] == "llm_inference" and prov["source_sha256"] == hashlib.sha256(TEXT.encode()).hexdigest()
    assert prov["source_chars"] == len(TEXT) and "source" not in prov  # the text itself is in no other fact's memory
    assert "Paris" in versions[-1].props["metadata"]["entities"]
    # delete: retracted, not erased; the last version says why
    assert memory.get_memory(meat) is None
    gone = memory.db.node_versions(meat)
    assert [v.content for v in gone] == ["The user eats meat every day."] * 3
    assert [v.retracted_at is not None for v in gone] == [False, False, True]
    assert [v.props["metadata"].get("provenance", {}).get("reason") for v in gone] == [
        None, "now vegetarian", "now vegetarian"]
    assert memory.db.get_node(meat, as_of=gone[0].recorded_at).content == "The user eats meat every day."
    # add: a new memory of the user, with the call's metadata, the fact's provenance
    new = memory.get_memory(added)
    assert new["content"] == "The user is vegetarian." and new["user_id"] == "u1"
    assert new["metadata"]["channel"] == "chat" and new["metadata"]["provenance"]["action"] == "add"
    # none: nothing changed
    assert len(memory.db.node_versions(acme)) == 1 and memory.get_memory(other)["content"] == "The user lives in Lyon."


def test_a_resolution_naming_an_unseen_memory_writes_nothing(memory):
    memory.store("The user lives in Lyon.")
    before = memory.db.change_counter()
    bad = {"actions": [{"fact": 0, "action": "add"}, {"fact": 1, "action": "delete", "memory": 99}]}
    with ScriptedServer(model(FACTS, bad)) as server:
        with pytest.raises(ProviderError) as err:
            infer_and_store(memory, OpenAICompatible(base_url=server.url + "/v1", model="m"), TEXT)
    assert err.value.reason == "malformed_output" and "not shown" in str(err.value)
    assert memory.db.change_counter() == before and memory.count() == 1


def test_skipped_facts_are_added_and_no_facts_means_no_second_call(memory):
    with ScriptedServer(model(FACTS, {"actions": []})) as server:
        out = infer_and_store(memory, OpenAICompatible(base_url=server.url + "/v1", model="m"), TEXT)
    assert [r["event"] for r in out["results"]] == ["ADD", "ADD", "ADD"]
    assert {r["reason"] for r in out["results"]} == {"no action was given for this fact"}
    with ScriptedServer(model({"facts": []}, {"actions": []})) as server:
        out = infer_and_store(memory, OpenAICompatible(base_url=server.url + "/v1", model="m"), "Hello there!")
    assert out["results"] == [] and len(server.requests) == 1 and memory.count() == 3


def test_extraction_that_is_not_the_schema_is_an_error(memory):
    with ScriptedServer([openai_reply('{"facts": "lots"}')]) as server:
        with pytest.raises(ProviderError) as err:
            infer_and_store(memory, OpenAICompatible(base_url=server.url + "/v1", model="m"), TEXT)
    assert err.value.reason == "malformed_output" and memory.count() == 0
    with pytest.raises(ValidationError):
        infer_and_store(memory, None, TEXT)
    with pytest.raises(ValidationError):
        infer_and_store(memory, OpenAICompatible(base_url="http://127.0.0.1:9/v1", model="m"), "  ")


def test_agent_context_store_infers_only_when_asked(tmp_path):
    from agentcontext import AgentContext, ContextGraph

    extract = {"facts": [{"text": "Dana works at Acme.", "entities": ["acme"]}], "entities": []}
    with ScriptedServer(model(extract, {"actions": [{"fact": 0, "action": "add", "reason": "new"}]})) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        ctx = AgentContext(vector_store=VectorStore(backend="inmemory", dimension=384), knowledge_graph=ContextGraph(),
                           llm_provider=llm, retention_days=None)
        raw = ctx.store("Dana said hello to everyone at Acme today")  # the offline default: raw, no model
        assert isinstance(raw, str) and server.requests == []
        out = ctx.store("Dana told us she has joined Acme.", infer=True, user_id="dana")
        assert [r["event"] for r in out["results"]] == ["ADD"] and len(server.requests) == 2
        always = AgentContext(vector_store=ctx.vector_store, llm_provider=llm, infer=True)
        assert always.store("Dana told us she has joined Acme.")["results"][0]["event"] == "ADD"
        with pytest.raises(ValidationError):
            ctx.store("x", infer=True, colour="red")
    new = ctx.get_memory(out["results"][0]["id"])
    assert new["content"] == "Dana works at Acme." and new["metadata"]["entities"] == ["acme"]
    # the fact's entity links the memory into the graph, like any memory whose metadata names entities
    hits = ctx.retrieve("Where does Dana work?", max_results=5, use_graph=True)
    assert any(r["id"] == new["id"] for r in hits)
    assert ctx.knowledge_graph.resolve("acme") is not None


def test_erasing_one_facts_subject_leaves_no_byte_of_it_in_another_facts_provenance(tmp_path):
    """One text, two facts: Jane's card and Bob's tea. Erasing Jane leaves Bob's memory, and no copy of her card
    anywhere in the workspace's files (the source text is not copied into each fact's provenance)."""
    from agentcontext import ContextGraph, Workspace
    from agentcontext.erasure import erase_workspace_entity

    from .bytescan import folder_files, hits, new_secret

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    graph = ContextGraph(workspace=ws)
    graph.add_node("jane", "customer", properties={"name": "Jane Roe"})
    mem = AgentMemory(vector_store=VectorStore(workspace=ws), retention_policy=None, entity_graph=graph)
    secret = new_secret()
    text = f"Jane Roe's card is {secret}. Also, Bob likes tea."
    facts = {"facts": [{"text": f"Jane Roe's card is {secret}.", "entities": ["jane"]},
                       {"text": "Bob likes tea.", "entities": []}]}
    with ScriptedServer(model(facts, {"actions": [{"fact": 0, "action": "add"}, {"fact": 1, "action": "add"}]})) as s:
        out = infer_and_store(mem, OpenAICompatible(base_url=s.url + "/v1", model="m"), text)
    jane, bob = (r["id"] for r in out["results"])
    assert mem.get_memory(bob)["metadata"]["provenance"]["source_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    receipt = erase_workspace_entity(ws, "jane", reason="GDPR", erase_mentions=True).to_dict()
    assert receipt["complete"] is True and receipt["stores"]["memory"] == {"status": "erased", "items": 1}
    assert mem.get_memory(jane) is None and mem.get_memory(bob)["content"] == "Bob likes tea."
    assert hits(folder_files(home), secret) == {}
    ws.close()


def test_a_principal_who_may_not_write_is_refused_before_any_model_call(tmp_path):
    """store(..., infer=True) checks access first: the text never reaches the provider."""
    from agentcontext import AgentContext, Workspace, access
    from agentcontext.errors import AccessDeniedError

    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    access.grant(ws, "reader", "memory:*", "read")
    with ScriptedServer(model(FACTS, {"actions": []})) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        ctx = AgentContext(vector_store=VectorStore(workspace=ws), llm_provider=llm, principal="reader")
        with pytest.raises(AccessDeniedError):
            ctx.store(TEXT, infer=True)
        mem = AgentMemory(vector_store=VectorStore(workspace=ws), principal="reader")
        with pytest.raises(AccessDeniedError):
            infer_and_store(mem, llm, TEXT)
    assert server.requests == []  # no model call, so no copy of the text at the provider
    ws.close()
