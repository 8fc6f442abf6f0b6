"""No resurrection: Markdown and JSON memory imports, JSON and Markdown graph loads and pack reinstalls check the
tombstones an erasure left; an erased id or entity is skipped and reported, never recreated."""
from __future__ import annotations

from agentcontext import AgentContext, AgentMemory, ContextGraph, VectorStore
from agentcontext.erasure import erase_workspace_entity
from agentcontext.knowledge.packs import install_folder

ENTITY = "customer-4471"


def _memory(ws) -> AgentMemory:
    return AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")


def test_memory_imports_skip_what_an_erasure_removed(ws, tmp_path):
    memory = _memory(ws)
    erased = memory.store("Refund for the customer", metadata={"entities": [ENTITY]})
    forgotten = memory.store("The office moved")
    kept = memory.store("Lunch is at noon")
    backup = memory.export(format="dict")
    memory.export(format="markdown", destination=tmp_path / "md")
    memory.forget(forgotten)  # forgetting is not erasing: a backup may bring it back
    erase_workspace_entity(ws, ENTITY, reason="GDPR")
    backup["memories"].append({"content": "A new note about them", "metadata": {"entities": [ENTITY]}})
    count = memory.import_data(backup, format="dict")
    assert count == 1 and memory.get_memory(forgotten) is not None and memory.get_memory(erased) is None
    assert {(s["id"], s["reason"]) for s in count.skipped} == {
        (erased, "erased"), (None, f"names the erased entity {ENTITY}")}
    md = memory.import_data(tmp_path / "md", format="markdown")
    assert md == 0 and [s["id"] for s in md.skipped] == [erased] and memory.get_memory(erased) is None
    assert memory.get_memory(kept) is not None and memory.count() == 2


def test_agent_context_load_skips_them_too(ws, tmp_path):
    ctx = AgentContext(vector_store=VectorStore(workspace=ws), knowledge_graph=ContextGraph(workspace=ws))
    mid = ctx.store("Refund for the customer", metadata={"entities": [ENTITY]})
    ctx.save(tmp_path / "saved")
    erase_workspace_entity(ws, ENTITY)
    ctx.load(tmp_path / "saved")
    assert ctx.get_memory(mid) is None and ctx.knowledge_graph.find_node(ENTITY) is None


def test_graph_loads_skip_erased_nodes_and_their_edges(ws, tmp_path):
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", content="Jane Roe")
    graph.add_edges([{"source": ENTITY, "target": "acme", "type": "customer_of"},
                     {"source": "order-1", "target": ENTITY, "type": "placed_by"},
                     {"source": "order-1", "target": "acme", "type": "sold_by"}])
    graph.save_to_file(str(tmp_path / "g.json"))
    graph.save_to_file(str(tmp_path / "g-md"), format="markdown")
    erase_workspace_entity(ws, ENTITY, reason="GDPR")
    for path, fmt in ((tmp_path / "g.json", "json"), (tmp_path / "g-md", "markdown")):
        counts = graph.load_from_file(str(path), format=fmt)
        assert counts["skipped_erased"] == [graph.store_id(ENTITY)]
        assert graph.find_node(ENTITY) is None and graph.node_history(ENTITY) == []
        assert {(e["source"], e["target"]) for e in graph.find_edges()} == {("order-1", "acme")}
        assert graph.store.tombstone(graph.store_id(ENTITY))["erasure"] == ENTITY


def test_a_pack_reinstall_does_not_bring_an_erased_doc_back(ws, write_pack):
    folder = write_pack("crm", {"accounts.roe": {"body": "Jane Roe's account, customer-4471", "title": "Roe"},
                                "other": {"body": "Nothing personal"}}, selector="lib:crm")
    install_folder(ws, folder)
    graph = ContextGraph(workspace=ws)
    graph.add_node(ENTITY, "customer", properties={"name": "Jane Roe"})
    receipt = erase_workspace_entity(ws, ENTITY, erase_mentions=True)
    assert receipt.stores["mentions"]["docs"] == 1
    result = install_folder(ws, folder)[0]
    assert result["skipped_erased"] == ["accounts.roe"] and result["docs"] == 1
    assert ws.store.get_node("lib:crm/accounts.roe") is None and ws.store.get_node("lib:crm/other") is not None
    assert [v.content for v in ws.store.node_versions("lib:crm/accounts.roe")] == [""]  # one empty, deleted version
