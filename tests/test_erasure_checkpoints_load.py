"""A graph file saved before an erasure brings no erased record back inside a checkpoint: loading it (JSON or
Markdown) filters each checkpoint node's snapshot against the store's tombstones, as it filters the nodes and
edges, and a stored checkpoint older than an erasure is read back without what the erasure removed. The byte scan
covers it: after the load, no file of the workspace (SQLite) or heap file (PostgreSQL) holds the decision's text."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, ContextGraph, VectorStore
from agentcontext.decisions import checkpoints
from agentcontext.erasure import erase_workspace_entity
from agentcontext.workspace import Workspace

from .bytescan import folder_files, hits, new_secret

ENTITY = "customer-4471"
NAME = "Jane Roe"


def _fill(ws, secret: str, folder) -> tuple[AgentContext, str]:
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": NAME})
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    decision = ctx.record_decision("refund", f"Refund {NAME} for {secret}", "loyal customer", "approved", 0.9,
                                   entities=[ENTITY])
    ctx.record_decision("refund", "Refund the shop for a broken till", "policy", "approved", 0.9)
    ctx.checkpoint("before")
    ctx.flush_checkpoint("before")
    graph.save_to_file(str(folder / "g.json"))
    graph.save_to_file(str(folder / "g-md"), format="markdown")
    return ctx, decision


def _snapshot(ws) -> dict:
    node = ws.store.get_node(checkpoints.node_id("before"))
    return node.props["snapshot"]


def test_a_load_filters_checkpoint_snapshots_against_the_tombstones(tmp_path):
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    ctx, decision = _fill(ws, secret, tmp_path)
    erase_workspace_entity(ws, ENTITY, reason="GDPR")
    assert hits(folder_files(home), secret) == {}
    graph = ctx.knowledge_graph
    for path, fmt in ((tmp_path / "g.json", "json"), (tmp_path / "g-md", "markdown")):
        counts = graph.load_from_file(str(path), format=fmt)
        snap = _snapshot(ws)
        assert decision not in snap["decisions"] and decision not in snap["nodes"]
        assert decision in counts["skipped_erased"] and counts["checkpoint_versions_scrubbed"] >= 1
        assert len(snap["decisions"]) == 1  # the other decision stays
        assert not any(decision in (r["source"], r["target"]) for r in snap["relationships"].values())
        assert NAME not in str(snap) and secret not in str(snap)
        assert all(decision not in str(v.props) for v in ws.store.node_versions(checkpoints.node_id("before")))
        ws.store.scrub()
        assert hits(folder_files(home), secret) == {}, fmt
    assert ctx.diff_checkpoints("before", "before")["summary"]["decisions_added"] == 0
    ws.close()


def test_a_stored_snapshot_older_than_an_erasure_is_read_without_it(ws):
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": NAME})
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    decision = ctx.record_decision("refund", f"Refund {NAME} for {secret}", "why", "approved", 0.9,
                                   entities=[ENTITY])
    ctx.checkpoint("before")
    ctx.flush_checkpoint("before")
    snap = ws.store.get_record(checkpoints.RECORD_KIND, "before")
    erase_workspace_entity(ws, ENTITY, reason="GDPR")
    ws.store.put_record(checkpoints.RECORD_KIND, "before", snap)  # a restore of the record from a backup
    fresh = AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True,
                         vector_store=VectorStore(workspace=ws))
    fresh.checkpoint("after")
    diff = fresh.diff_checkpoints("before", "after")  # the erased decision would show as removed, with its text
    assert diff["decisions_removed"] == [] and secret not in str(diff) and decision not in str(diff)


@pytest.mark.postgres
def test_postgres_heap_files_hold_no_checkpointed_text_after_a_load(pg_url, pg_server, tmp_path):
    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    ctx, decision = _fill(ws, secret, tmp_path)
    erase_workspace_entity(ws, ENTITY, reason="GDPR")
    counts = ctx.knowledge_graph.load_from_file(str(tmp_path / "g.json"))
    assert decision in counts["skipped_erased"]
    assert decision not in _snapshot(ws)["decisions"]
    out = ws.store.scrub(strict=True)
    assert out["status"] == "clean"
    ws.store._db.execute("CHECKPOINT")
    assert hits(folder_files(pg_server.data / "base"), secret) == {}
    ws.close()


def test_a_snapshot_held_in_one_process_answers_without_what_another_process_erased(tmp_path):
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": NAME})
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    decision = ctx.record_decision("refund", f"Refund {NAME} for {secret}", "why", "approved", 0.9,
                                   entities=[ENTITY])
    ctx.checkpoint("held")  # in this process's memory only
    other = Workspace.open(home=home)  # another process's view of the same store
    erase_workspace_entity(other, ENTITY, reason="GDPR")
    other.close()
    ctx.checkpoint("now")
    diff = ctx.diff_checkpoints("held", "now")
    assert diff["decisions_removed"] == [] and secret not in str(diff) and decision not in str(diff)
    ws.close()


def test_retracted_checkpoints_and_older_checkpoint_versions_are_scrubbed_too(tmp_path):
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": NAME})
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, vector_store=VectorStore(workspace=ws))
    decision = ctx.record_decision("refund", f"Refund {NAME} for {secret}", "why", "approved", 0.9,
                                   entities=[ENTITY])
    ctx.checkpoint("old")
    ctx.flush_checkpoint("old")
    graph.retract_node(checkpoints.node_id("old"))  # withdrawn: its history keeps the snapshot
    ctx.checkpoint("cp")
    ctx.flush_checkpoint("cp")  # version 1 holds the decision
    ws.store.retract_nodes([decision])  # withdrawn before the erasure
    ctx.checkpoint("cp")
    ctx.flush_checkpoint("cp")  # version 2 does not: only the older version holds it
    assert decision in str(ws.store.node_versions(checkpoints.node_id("cp"))[0].props)
    d = erase_workspace_entity(ws, ENTITY, reason="GDPR").to_dict()
    assert d["complete"] is True and d["stores"]["decisions"]["decisions"] == 1  # the retracted decision
    assert ws.store.get_node(checkpoints.node_id("old"), include_retracted=True) is None
    assert all(decision not in str(v.props) for v in ws.store.node_versions(checkpoints.node_id("cp")))
    assert hits(folder_files(home), secret) == {}
    ws.close()
