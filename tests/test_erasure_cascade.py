"""What one erasure reaches beyond the entity's node and memories: context vectors of forked chains, decisions
with their precedent rows and causal edges, checkpoints, history, audit details, name vectors, mentions in
read-only packs, copies outside the store; and a receipt that says what each leg did."""
from __future__ import annotations

import numpy as np

from agentcontext import AgentContext, AgentMemory, ContextGraph, ErasureCoordinator, VectorStore
from agentcontext.decisions.index import index_for
from agentcontext.erasure import erase_workspace_entity
from agentcontext.knowledge.export import export_pack
from agentcontext.knowledge.packs import create_pack, install_folder, put_doc
from agentcontext.model import Node, content_hash

ENTITY = "customer-4471"


def test_context_vectors_of_every_follower_go_forked_chains_included(ws):
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    first = memory.store("Jane asked about her refund", metadata={"entities": [ENTITY]}, conversation_id="c")
    second = memory.store("We said it takes a week", conversation_id="c")
    # a fork left by racing writers of an older version: a second turn that also follows the first
    pair = "Jane asked about her refund\nA second reply to the same turn"
    fork = Node(id="mem_fork", kind="memory", namespace="memory:default", key="t~fork", content="A second reply",
                tags=["conversation:c"], props={"conversation_id": "c", "prev": first, "pair_hash": content_hash(pair),
                                               "metadata": {}}, embed_text="A second reply to the same turn")
    ws.store.put_nodes([fork])
    ws.store.put_vectors({content_hash(pair): np.ones(384, dtype=np.float32)}, ws.model_name)
    pairs = [ws.store.get_node(i).props["pair_hash"] for i in (second, "mem_fork")]
    assert len(ws.store.get_vectors(pairs, ws.model_name)) == 2
    receipt = erase_workspace_entity(ws, ENTITY)
    assert ws.store.get_vectors(pairs, ws.model_name) == {}  # both followers' pairs embedded the erased text
    assert receipt.stores["vectors"]["deleted"] >= 3 and memory.get_memory(second) is not None


def test_decisions_about_the_entity_are_their_own_leg(ws):
    graph = ContextGraph(workspace=ws)
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    cause = ctx.record_decision("refund", "Refund policy review", "quarterly", "kept", 0.8)
    about = ctx.record_decision("refund", "Refund Jane Roe", "she asked twice", "approved", 0.9, entities=[ENTITY],
                                caused_by=[cause])
    effect = ctx.record_decision("refund", "Follow-up call", "after the refund", "done", 0.7, caused_by=[about])
    assert [d.decision_id for d in ctx.find_precedents("Refund Jane Roe", limit=1)] == [about]
    index = index_for(ws, graph.namespace)
    row = index.pos[about]
    ws.store.append_audit("bob", "policy.check", about, "violation", {"scenario": "Refund Jane Roe"})
    # the recorder audits each decision it records (issue 13 s2: audit lives in the services), so two rows name it
    naming = [a["action"] for a in ws.store.audit() if about in a["target"]]
    assert naming == ["decision.record", "policy.check"]
    receipt = erase_workspace_entity(ws, ENTITY, reason="GDPR")
    leg = receipt.stores["decisions"]
    assert leg["status"] == "erased" and leg["decisions"] == 1 and leg["edges"] >= 3
    assert about not in index_for(ws, graph.namespace).pos  # the process's indexes were dropped, rebuilt clean
    index.rows.drop([about]) if index.rows.alive[row] else None
    assert not np.any(index.matrix[row])  # even a stale reference holds nothing of it once caught up
    assert about not in [d.decision_id for d in ctx.find_precedents("Refund Jane Roe", limit=5)]
    assert ctx.get_causal_chain(effect) == [] and ws.store.edges(src=cause) == []
    assert ws.store.tombstone(about)["erasure"] == ENTITY
    checks = [a for a in ws.store.audit() if a["action"] == "policy.check"]
    assert checks[0]["detail"] == {"redacted": "erasure"} and receipt.stores["audit"]["entries"] == len(naming)
    assert [a["action"] for a in ws.store.audit()].count("erase_entity") == 1  # one audit row per erasure


def test_checkpoints_are_rewritten_and_say_so(ws):
    graph = ContextGraph(workspace=ws)
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    graph.add_node(ENTITY, "customer", content="Jane Roe")
    did = ctx.record_decision("refund", "Refund Jane Roe", "asked", "approved", 0.9, entities=[ENTITY])
    ctx.checkpoint("before")
    ctx.flush_checkpoint("before")
    ctx.flush_checkpoint("before")  # unchanged: no new version
    ctx.checkpoint("late")  # held only, flushed after the erasure
    receipt = erase_workspace_entity(ws, ENTITY)
    assert receipt.stores["checkpoints"] == {"status": "erased", "held": 2, "flushed": 1, "nodes": 1}
    for label in ("before", "late"):
        snap = ctx.decisions.checkpoints.get(graph, label)
        assert did not in snap["decisions"] and graph.store_id(ENTITY) not in snap["nodes"]
    ctx.flush_checkpoint("late")
    node = ws.store.get_node("checkpoint:before")
    assert [v.version for v in ws.store.node_versions(node.id)] == [node.version]  # older snapshots purged
    assert did not in ws.store.get_record("checkpoint", "late")["decisions"]
    later = ErasureCoordinator(graph=graph).erase_entity(ENTITY)
    assert later.stores["checkpoints"]["status"] == "not_found"


def test_vectors_leg_reports_what_the_store_deleted_and_name_vectors_go(ws):
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", content="Jane Roe, 12 Main St", embed=True, properties={"name": "Jane Roe"})
    ws.store.put_vectors({content_hash("Jane Roe"): np.ones(384, dtype=np.float32)}, ws.model_name)  # EntityTable's
    from agentcontext.embed.cache import embed_texts

    embed_texts(ws.store, ws.embedder, ["Jane Roe, 12 Main St"])
    receipt = ErasureCoordinator(graph=graph).erase_entity(ENTITY)
    leg = receipt.stores["vectors"]
    assert leg["status"] == "erased" and leg["backend"] == "sqlite" and leg["deleted"] == 2
    assert ws.store.get_vectors([content_hash("Jane Roe")], ws.model_name) == {}


def test_pkg_docs_are_listed_never_changed_and_copies_are_listed(ws, write_pack, tmp_path):
    folder = write_pack("crm", {"people.roe": {"body": "Jane Roe is a reference customer"}},
                        selector="pkg:acme.crm.people.crm")
    install_folder(ws, folder)
    create_pack(ws, "notes")
    put_doc(ws, "lib:notes", "roe", content="Met Jane Roe")
    create_pack(ws, "other")
    put_doc(ws, "lib:other", "x", content="unrelated")
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": "Jane Roe"})
    export_pack(ws, "lib:notes", tmp_path / "notes-copy")
    export_pack(ws, "lib:other", tmp_path / "other-copy")
    graph.save_to_file(str(tmp_path / "graph.json"))
    before = ws.store.get_node("pkg:acme.crm.people.crm/people.roe")
    receipt = erase_workspace_entity(ws, ENTITY, erase_mentions=True)
    listed = {m["id"]: m for m in receipt.mentions}
    pkg = listed["pkg:acme.crm.people.crm/people.roe"]
    assert pkg["action"] == "read_only" and pkg["erased"] is False and receipt.stores["mentions"]["read_only"] == 1
    assert ws.store.get_node(before.id).content_hash == before.content_hash
    assert listed["lib:notes/roe"]["erased"] and ws.store.get_node("lib:notes/roe") is None
    paths = {c["path"] for c in receipt.external_copies}
    assert paths == {str((tmp_path / "notes-copy").resolve()), str((tmp_path / "graph.json").resolve())}
