"""A conversation id that names the subject ("joe-card-4242") goes with a strict erasure that takes every turn of the
conversation: the memories carried it (their props, their tags) and the store kept it beside them, as the key of
the conversation's head record (memory/chain.py) and in the change log's rows about that record. The erasure drops
the record and rewrites those rows without the key (store/scrub.py ``erase_records``), so no file of the store
holds a byte of the id after it: SQLite's store, WAL and shared-memory files, PostgreSQL's heap files. A
conversation with turns left keeps its id: the turns that stay hold it anyway."""
from __future__ import annotations

import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.erasure import erase_workspace_entity
from agentcontext.memory.chain import HEAD

from .bytescan import folder_files, hits, new_secret

ENTITY = "joe"


def fill(ws, secret: str) -> tuple[str, str]:
    """Two turns about Joe in a conversation named after his card, and a conversation with a turn about someone
    else too; returns the two conversation ids."""
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    gone, kept = f"joe-card-{secret}", f"joe-and-ann-{secret[::-1]}"
    memory.store("Joe asked about his card", metadata={"entities": [ENTITY]}, conversation_id=gone)
    memory.store("The bank said no to Joe", metadata={"entities": [ENTITY]}, conversation_id=gone)
    memory.store("Joe said hello", metadata={"entities": [ENTITY]}, conversation_id=kept)
    memory.store("Ann said hello back", conversation_id=kept)
    memory.store("Something else", conversation_id="other")
    memory.retrieve("what did Joe ask about his card")  # the memory index is built and saved beside the store
    ws.index_files.wait()
    return gone, kept


def heads(ws) -> set[str]:
    return {key.split("\x1f", 1)[1] for key, _ in ws.store.list_records(HEAD)}


def check_after(ws, gone: str, kept: str) -> None:
    assert heads(ws) == {kept, "other"}
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    assert memory.list_memories(conversation_id=gone) == []
    assert [m["content"] for m in memory.list_memories(conversation_id=kept)] == ["Ann said hello back"]
    memory.store("Ann again", conversation_id=kept)  # the chain goes on from the turn that stays
    turns = memory.list_memories(conversation_id=kept)
    assert len(turns) == 2
    new_id = next(m["id"] for m in turns if m["content"] == "Ann again")
    old_id = next(m["id"] for m in turns if m["content"] == "Ann said hello back")
    assert ws.store.get_node(new_id).props["prev"] == old_id


def test_sqlite_no_file_holds_the_conversation_id_after_the_erasure(tmp_path):
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    gone, kept = fill(ws, secret)
    ws.store.scrub()  # the WAL folded into the store: the id is in the store file itself
    assert hits(folder_files(home), gone), "the conversation id is in the store before the erasure"
    assert hits(folder_files(home / "indexes"), gone), "and in the memory index's file"
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR")
    assert receipt.complete and receipt.stores["memory"]["items"] == 3
    assert hits(folder_files(home), gone) == {}
    assert hits(folder_files(home), kept)  # the conversation with a turn left keeps its id
    check_after(ws, gone, kept)
    ws.close()


@pytest.mark.postgres
def test_postgres_no_heap_file_holds_the_conversation_id_after_a_strict_erasure(pg_url, pg_server):
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    gone, kept = fill(ws, secret)
    base = pg_server.data / "base"
    ws.store._db.execute("ANALYZE")  # what autovacuum does as the tables grow: column samples in pg_statistic
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(base), gone), "the conversation id is in the heap before the erasure"
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR")
    assert receipt.complete and receipt.physical["status"] == "clean"
    assert receipt.physical["statistics"] == "analyzed; pg_statistic rewritten"  # ANALYZE's samples of the id too
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(base), gone) == {}
    check_after(ws, gone, kept)
    ws.close()


def test_forget_of_a_conversation_drops_its_head_record_and_its_key_in_the_change_log(tmp_path):
    """forget(conversation_id=...) takes the head record too (not an erasure: its audit row names what it was
    given, and the files are not scrubbed; concepts.memory)."""
    from agentcontext.workspace import Workspace

    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    secret = new_secret()
    gone, kept = fill(ws, secret)
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    assert memory.forget(conversation_id=gone) == 2
    assert heads(ws) == {kept, "other"}
    assert not any(gone in c.target for c in ws.store.changes_since(0))
    assert [a["detail"]["conversation_id"] for a in ws.store.audit() if a["action"] == "memory.forget"] == [gone]
    ws.close()
