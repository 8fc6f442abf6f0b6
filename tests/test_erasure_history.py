"""Erasure sees everything the store holds, not only the live records: a memory an ``infer=True`` store deleted
(retracted, its history kept), graph nodes ``retract_node`` withdrew, records whose validity ended, the entity's
own node retracted before the erasure (purged and tombstoned, so the id cannot come back), and a name held only
in a memory's metadata. On SQLite and on PostgreSQL: no byte of the secret in the store's files afterwards."""
from __future__ import annotations

import json

import pytest

from agentcontext import AgentMemory, ContextGraph, VectorStore
from agentcontext.erasure import erase_workspace_entity
from agentcontext.llms import OpenAICompatible
from agentcontext.reasoning.facts import EXTRACT_PROMPT, infer_and_store
from agentcontext.workspace import Workspace

from .bytescan import folder_files, hits, new_secret
from .llm_server import ScriptedServer, openai_reply

ENTITY = "customer-4471"
NAME = "Jane Roe"


def _model(shown_needle: str):
    """Extract one fact; resolve it by deleting the memory that holds ``shown_needle`` (the documented path)."""
    def reply(request):
        system = request.body["messages"][0]["content"]
        if system.startswith(EXTRACT_PROMPT):
            return openai_reply(json.dumps({"facts": [{"text": "The customer closed the account.", "entities": []}],
                                            "entities": []}))
        shown = json.loads(request.body["messages"][-1]["content"])
        number = next(m["number"] for m in shown["existing_memories"] if shown_needle in m["text"])
        return openai_reply(json.dumps({"actions": [{"fact": 0, "action": "delete", "memory": number,
                                                     "reason": "account closed"}]}))
    return reply


def fill(ws, secret: str) -> dict:
    """Live, retracted and expired records that hold ``secret`` and name the entity, each by another path."""
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", content=f"{NAME}, card {secret}", properties={"name": NAME})
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default", retention_policy=None)
    linked = memory.store(f"{NAME} asked to close card {secret}", metadata={"entities": [ENTITY]})
    with ScriptedServer(_model(secret)) as server:
        out = infer_and_store(memory, OpenAICompatible(base_url=server.url + "/v1", model="m"),
                              "The customer closed the account.")
    assert ("DELETE", linked) in [(r["event"], r["id"]) for r in out["results"]]
    assert memory.get_memory(linked) is None and ws.store.node_versions(linked)  # retracted; history holds it
    spoken = memory.store(f"{NAME} phoned about {secret}")  # names her in its text only, then forgotten softly
    ws.store.retract_nodes([spoken])
    graph.add_node("note-1", "note", content=f"{NAME} called about {secret}")
    graph.retract_node("note-1")  # withdrawn: history keeps it
    graph.add_node("visit-1", "event", content=f"{NAME} visited the branch ({secret})", valid_until="2020-01-01")
    tagged = memory.store(f"Card {secret} was blocked", metadata={"customer_name": NAME})  # her name: metadata only
    return {"graph": graph, "memory": memory, "linked": linked, "spoken": spoken, "tagged": tagged}


def _gone(ws, rid: str) -> bool:
    return ws.store.get_node(rid, include_retracted=True) is None and not ws.store.node_versions(rid)


def test_retracted_expired_and_metadata_records_are_erased_on_sqlite(tmp_path):
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    made = fill(ws, secret)
    d = erase_workspace_entity(ws, ENTITY, reason="GDPR", erase_mentions=True).to_dict()
    assert d["complete"] is True and d["physical"]["status"] == "clean"
    assert d["stores"]["memory"] == {"status": "erased", "items": 1}  # the retracted memory linked by metadata
    mentioned = {m["id"]: m for m in d["mentions"]}
    assert mentioned[made["spoken"]]["retracted"] is True and "text" in mentioned[made["spoken"]]["via"]
    assert mentioned["graph:default/note-1"]["retracted"] is True
    assert "graph:default/visit-1" in mentioned
    assert "props" in mentioned[made["tagged"]]["via"]  # found by the name in its metadata values
    for rid in (made["linked"], made["spoken"], made["tagged"], "graph:default/note-1", "graph:default/visit-1"):
        assert _gone(ws, rid), rid
    assert hits(folder_files(home), secret) == {}
    ws.close()


def test_without_erase_mentions_retracted_mentions_are_listed_and_linked_ones_erased(ws):
    secret = new_secret()
    made = fill(ws, secret)
    d = erase_workspace_entity(ws, ENTITY, reason="GDPR").to_dict()
    assert d["stores"]["memory"] == {"status": "erased", "items": 1} and _gone(ws, made["linked"])
    listed = {m["id"]: m for m in d["mentions"]}
    assert {made["spoken"], made["tagged"], "graph:default/note-1", "graph:default/visit-1"} <= set(listed)
    assert not any(m["erased"] for m in d["mentions"])
    assert ws.store.node_versions(made["spoken"])  # kept: the caller decides


def test_the_entitys_own_node_retracted_first_is_purged_and_tombstoned(ws):
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", content=f"{NAME}, card {secret}", properties={"name": NAME})
    graph.add_node("note-1", "note", content=f"{NAME} called")
    graph.add_edge("note-1", ENTITY, "about")
    graph.retract_node(ENTITY)
    d = erase_workspace_entity(ws, ENTITY, reason="GDPR", erase_mentions=True).to_dict()
    assert d["complete"] is True
    assert d["stores"]["graph"]["status"] == "erased" and d["stores"]["graph"]["nodes"] == 1
    assert _gone(ws, f"graph:default/{ENTITY}")
    stone = ws.store.tombstone(f"graph:default/{ENTITY}")
    assert stone is not None and stone["erasure"] == ENTITY
    assert ws.store.erased([f"graph:default/{ENTITY}"])  # no import brings the id back
    assert "graph:default/note-1" in {m["id"] for m in d["mentions"]}  # found by the retracted node's name
    assert ws.store.get_node("graph:default/note-1") is None


def test_purge_node_of_a_retracted_node_removes_its_history(ws):
    graph = ContextGraph(workspace=ws)
    graph.add_node("n1", "note", content="first")
    graph.add_node("n1", "note", content="second")
    graph.retract_node("n1")
    totals = graph.purge_node("n1", reason="cleanup")
    assert totals["nodes"] == 1 and totals["tombstone"] is not None
    assert _gone(ws, "graph:default/n1")


@pytest.mark.postgres
def test_retracted_expired_and_metadata_records_leave_no_byte_in_postgres_heap_files(pg_url, pg_server):
    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    made = fill(ws, secret)
    base = pg_server.data / "base"
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(base), secret), "the secret is in the heap before the erasure"
    d = erase_workspace_entity(ws, ENTITY, reason="GDPR", erase_mentions=True).to_dict()
    assert d["complete"] is True and d["physical"]["status"] == "clean"
    for rid in (made["linked"], made["spoken"], made["tagged"], "graph:default/note-1", "graph:default/visit-1"):
        assert _gone(ws, rid), rid
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(base), secret) == {}
    ws.close()
