"""The byte scan: a unique secret stored through every capability is, after one erasure, in no file under the
workspace folder (the store, its WAL and shared-memory files): not as text, not as a term of the text index. Live,
retracted and expired records and checkpoints alike (a load of a graph file saved before the erasure:
test_erasure_checkpoints_load.py).
The same on PostgreSQL: no heap file of the test server's database holds it after a strict erasure."""
from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext import AgentContext, AgentMemory, ContextGraph, VectorStore
from agentcontext.decisions.models import Policy
from agentcontext.erasure import erase_workspace_entity
from agentcontext.knowledge.export import export_pack
from agentcontext.knowledge.packs import create_pack, put_doc
from agentcontext.knowledge.search import search_knowledge

from .bytescan import folder_files, hits, new_secret

ENTITY = "customer-4471"
NAME = "Jane Roe"


def fill(ws, secret: str, outside: Path) -> dict:
    """Store ``secret`` through memory (with and without entity metadata, versions, a conversation, one retracted),
    graph nodes (one retracted, one expired), a decision with its exception, checkpoints (held and flushed), a lib:
    doc and exports; return the handles."""
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", content=f"{NAME}, card {secret}", properties={"name": NAME,
                                                                                      "aliases": ["J. Roe"]})
    graph.add_node("note-1", "note", content=f"{NAME} called about {secret}")  # a graph node naming her
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    linked = memory.store(f"{NAME} asked about card {secret}", metadata={"entities": [ENTITY]},
                          conversation_id="c1")
    memory.store("And what did the bank say?", conversation_id="c1")  # its pair vector embeds the secret
    unlinked = memory.store(f"J. Roe mentioned {secret} again")  # names her by an alias, no metadata
    memory.update(unlinked, content=f"J. Roe mentioned {secret} twice")  # a second version holds it too
    withdrawn = memory.store(f"{NAME} closed card {secret}", metadata={"entities": [ENTITY]})
    ws.store.retract_nodes([withdrawn])  # what an infer=True store's "delete" does: retracted, history kept
    graph.add_node("note-2", "note", content=f"{NAME} wrote about {secret}")
    graph.retract_node("note-2")  # withdrawn from the graph, still in its history
    graph.add_node("visit-1", "event", content=f"{NAME} visited ({secret})", valid_until="2020-01-01")  # expired
    other = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="other")
    elsewhere = other.store(f"Noted for {NAME}: {secret}")
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    decision = ctx.record_decision("refund", f"Refund {NAME} for {secret}", f"because {secret}", "approved",
                                   0.9, entities=[ENTITY])
    policy = ctx.get_policy_engine()
    policy.add_policy(Policy(policy_id="refunds", name="Refunds", description="refunds need confidence",
                             rules={"min_confidence": 0.95}, category="refund"))
    policy.check_compliance(decision, "refunds")  # audited with the decision's text
    policy.record_exception(decision, "refunds", reason=f"exception for {secret}", approver="boss",
                            justification=f"{NAME} is a loyal customer ({secret})")
    ctx.checkpoint("held")
    ctx.checkpoint("flushed")
    ctx.flush_checkpoint("flushed")
    create_pack(ws, "crm")
    put_doc(ws, "lib:crm", "accounts.roe", title="Roe account", content=f"{NAME}'s account: {secret}")
    put_doc(ws, "lib:crm", "accounts.roe", content=f"{NAME}'s account: {secret} (v2)")
    put_doc(ws, "lib:crm", "other", title="Unrelated", content="Nothing about anyone")
    memory.retrieve(f"card {secret}")  # the memory indexes are built and saved beside the store (indexes/)
    other.retrieve(f"noted {secret}")
    assert ctx.find_precedents(f"refund for {secret}")  # so are the precedent index and the pack's vectors
    assert search_knowledge(ws, "lib:crm", f"account {secret}")
    assert VectorStore(workspace=ws).search(f"card {secret}")  # and VectorStore's index of every vector
    ws.index_files.wait()  # the files are written on their threads
    memory.export(format="json", destination=outside / "memories.json")
    export_pack(ws, "lib:crm", outside / "crm-pack")
    return {"ctx": ctx, "linked": linked, "unlinked": unlinked, "elsewhere": elsewhere, "decision": decision,
            "withdrawn": withdrawn}


def test_after_one_erasure_no_file_of_the_workspace_holds_the_secret(tmp_path):
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    outside = tmp_path / "exports"
    secret = new_secret()
    made = fill(ws, secret, outside)
    assert hits(folder_files(home), secret), "the secret is in the workspace before the erasure"
    index_files = sorted((home / "indexes").glob("*.idx"))
    # two memory indexes, the precedent index, the pack's vectors, the node names of the workspace graph,
    # VectorStore's index of every vector
    assert len(index_files) == 6, index_files
    assert sum(bool(hits([f], secret)) for f in index_files) == 3  # the memories' words and props, the names
    names = next(f for f in index_files if "names_" in f.name)
    assert secret.lower().encode() in names.read_bytes()  # the decision's title, as the name it goes by
    vectors = {}  # the raw vector bytes of the erased memory, decision and doc, each in its index file
    for rid, file_name in ((made["linked"], "memory_default"), (made["decision"], "decisions_graph_default"),
                           ("lib:crm/accounts.roe", "pack_lib_crm")):
        node = ws.store.get_node(rid)
        vectors[rid] = ws.store.get_vectors([node.embed_hash], ws.model_name)[node.embed_hash].astype("<f4").tobytes()
        assert vectors[rid] in next(f for f in index_files if file_name in f.name).read_bytes(), rid
        assert vectors[rid] in next(f for f in index_files if f.name.startswith("vectors_")).read_bytes(), rid
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR Art. 17", erase_mentions=True)
    assert hits(folder_files(home), secret) == {}
    for rid, raw in vectors.items():  # nor their vectors' bytes
        assert not any(raw in f.read_bytes() for f in folder_files(home) if f.is_file()), rid
    d = receipt.to_dict()
    assert d["complete"] is True, d["incomplete_stores"]
    assert d["stores"]["memory"] == {"status": "erased", "items": 2}  # the live and the retracted one
    assert ws.store.get_node(made["withdrawn"], include_retracted=True) is None
    assert d["stores"]["decisions"]["decisions"] == 1 and d["stores"]["decisions"]["exceptions"] == 1
    assert d["stores"]["mentions"]["memories"] == 2 and d["stores"]["mentions"]["docs"] == 1
    assert d["stores"]["checkpoints"]["held"] == 2 and d["stores"]["checkpoints"]["flushed"] == 1  # both held
    assert d["stores"]["audit"]["entries"] >= 1 and d["stores"]["vectors"]["deleted"] >= 4
    assert d["physical"]["status"] == "clean" and d["physical"]["checkpoint"]["wal_bytes"] == 0
    mentioned = {m["id"]: m for m in d["mentions"]}
    assert {made["unlinked"], made["elsewhere"], "lib:crm/accounts.roe", "graph:default/note-1",
            "graph:default/note-2", "graph:default/visit-1"} <= set(mentioned)
    assert mentioned["graph:default/note-2"]["retracted"] is True
    assert "text" in mentioned[made["unlinked"]]["via"] and all(m["erased"] for m in d["mentions"])
    copies = {c["path"]: c for c in d["external_copies"]}
    assert str((outside / "memories.json").resolve()) in copies and str((outside / "crm-pack").resolve()) in copies
    assert secret not in str(d)  # the receipt (also the audit row) carries no erased content
    # what remains works and says the records are gone
    ctx = made["ctx"]
    assert ctx.list_checkpoints() == ["flushed", "held"]
    assert ctx.diff_checkpoints("held", "flushed")["summary"]["decisions_added"] == 0
    assert ws.store.get_node("lib:crm/other") is not None and ws.store.get_node("lib:crm/accounts.roe") is None
    ws.close()
    assert hits(folder_files(home), secret) == {}


def test_without_erase_mentions_they_are_listed_and_kept(tmp_path):
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    made = fill(ws, secret, tmp_path / "exports")
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR")
    d = receipt.to_dict()
    assert "mentions" not in d["stores"] and d["complete"] is True
    listed = {m["id"]: m for m in d["mentions"]}
    assert made["unlinked"] in listed and not listed[made["unlinked"]]["erased"]
    assert ws.store.get_node(made["unlinked"]) is not None  # kept: the caller decides
    assert ws.store.get_node(made["linked"]) is None and ws.store.get_node(made["decision"]) is None
    assert ws.store.get_node(made["withdrawn"], include_retracted=True) is None  # linked: erased, though retracted
    remaining = hits(folder_files(home), secret)
    assert set(remaining) == {str(home / "store.db")}  # only the kept mentions, nothing in the WAL
    ws.close()


@pytest.mark.postgres
def test_postgres_heap_files_hold_no_byte_of_the_secret_after_a_strict_erasure(pg_url, pg_server, tmp_path):
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    made = fill(ws, secret, tmp_path / "exports")
    base = pg_server.data / "base"
    ws.store._db.execute("ANALYZE")  # as autovacuum does: samples of the columns' values in pg_statistic
    ws.store._db.execute("CHECKPOINT")  # the rows reach the heap files
    assert hits(folder_files(base), secret), "the secret is in the heap before the erasure"
    # the erased memory's vector, written into the delta (store/pg_delta.py: outside the HNSW index), as stored
    linked = ws.store.get_node(made["linked"]).embed_hash
    assert ws.store._read("SELECT pending FROM vectors WHERE hash = actx_hash(%s)", [linked]) == [(True,)]
    key = bytes.fromhex(linked)  # its key as stored: the hash's 32 bytes (migration 10, store/pg_hash.py)
    assert vector_hits(folder_files(base), key), "the vector's key bytes are in the heap before the erasure"
    held = ws.store.get_vectors([linked], ws.model_name)[linked]  # as stored: float16 (halfvec, schema 5)
    vector = held.astype("<f2").tobytes()[:32]
    assert vector_hits(folder_files(base), vector), "the vector is in the heap before the erasure"
    # the reply's context vector (its pair with the secret's turn), held as int8 once packed (store/pg_q8.py)
    ws.store.pack()
    (reply,) = ws.store._read("SELECT id FROM nodes WHERE content = 'And what did the bank say?'")[0]
    pair = ws.store.get_node(reply).props["pair_hash"]  # (a column from migration 16: store/pg_props.py)
    (raw,) = ws.store._read("SELECT q8 FROM vectors WHERE hash = actx_hash(%s) AND q8 IS NOT NULL", [pair])[0]
    packed = bytes(raw)[:32]
    ws.store._db.execute("CHECKPOINT")
    assert vector_hits(folder_files(base), packed), "the packed context vector is in the heap before the erasure"
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR", erase_mentions=True)
    d = receipt.to_dict()
    assert d["complete"] is True and d["physical"]["status"] == "clean" and d["physical"]["vacuum"] == "full"
    assert d["physical"]["statistics"] == "analyzed; pg_statistic rewritten"
    assert any("WAL" in line for line in d["physical"]["may_remain"])
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(base), secret) == {}
    assert vector_hits(folder_files(base), vector) == []
    assert vector_hits(folder_files(base), packed) == []
    assert vector_hits(folder_files(base), key) == []  # nor its key's bytes (vectors and their index rewritten)
    ws.close()


def vector_hits(paths: list[Path], needle: bytes) -> list[str]:
    return [str(p) for p in paths if p.is_file() and needle in p.read_bytes()]


def test_a_secret_is_one_word_the_stemmer_keeps_whole():
    """The byte scans look for the whole secret: a secret the stemmer shortened would be in no index file."""
    from agentcontext.text import stem

    assert all(stem(s) == s for s in (new_secret() for _ in range(5000)))
