"""ErasureCoordinator: the cascade vectors -> memory -> graph, statuses, receipts, idempotence."""
from __future__ import annotations

import pytest

from agentcontext import ContextGraph, ErasureCoordinator, ErasureReceipt, ValidationError
from agentcontext.memory.service import AgentMemory
from agentcontext.vector_store import VectorStore


class NoDeleteBackend:
    """Stands in for FAISS/Milvus/Weaviate adapters, which expose no delete method."""

    backend = "faiss"


class DeletingBackend:
    """Stands in for a third-party vector backend that can delete by id."""

    backend = "external"

    def __init__(self, ids: set[str]) -> None:
        self.ids = set(ids)
        self.calls: list[list[str]] = []

    def delete(self, ids: list[str]) -> None:
        self.calls.append(list(ids))
        self.ids -= set(ids)


def customer_graph() -> ContextGraph:
    g = ContextGraph()
    g.add_node("customer-4471", "customer", content="Jane Roe, 12 Main St")
    g.add_edges([{"source": "customer-4471", "target": "acme", "type": "customer_of"},
                 {"source": "order-1", "target": "customer-4471", "type": "placed_by"},
                 {"source": "customer-4471", "target": "berlin", "type": "lives_in"}])
    return g


def test_graph_only_receipt_shape_and_tombstone_written_last() -> None:
    graph = customer_graph()
    coordinator = ErasureCoordinator(graph=graph)
    receipt = coordinator.erase_entity("customer-4471", reason="GDPR Art. 17 request #882")
    assert isinstance(receipt, ErasureReceipt)
    d = receipt.to_dict()
    assert d["entity_id"] == "customer-4471" and d["reason"] == "GDPR Art. 17 request #882"
    # the graph's own store holds its embeddings: the leg says what it deleted (here: nothing was embedded)
    assert d["stores"]["vectors"]["status"] == "not_found" and d["stores"]["vectors"]["backend"] == "sqlite"
    assert d["stores"]["vectors"]["deleted"] == 0
    assert d["stores"]["memory"] == {"status": "not_configured"}
    assert d["stores"]["graph"]["status"] == "erased"
    assert (d["stores"]["graph"]["nodes"], d["stores"]["graph"]["edges"]) == (1, 3)
    assert receipt.complete is True and d["complete"] is True and receipt.incomplete_stores == []
    stone = graph.store.tombstone(graph.store_id("customer-4471"))
    assert stone["purged_at"] == receipt.erased_at and stone["reason"] == "GDPR Art. 17 request #882"
    assert graph.find_node("customer-4471") is None and graph.node_history("customer-4471") == []
    assert graph.query("Jane Roe") == []  # the text index row is gone too
    audit = graph.store.audit(principal="erasure")
    assert audit[-1]["target"] == "customer-4471" and audit[-1]["outcome"] == "complete"


def test_second_erase_reports_nothing_left_instead_of_raising() -> None:
    graph = customer_graph()
    coordinator = ErasureCoordinator(graph=graph)
    first = coordinator.erase_entity("customer-4471", reason="r")
    second = coordinator.erase_entity("customer-4471", reason="r")
    assert second.stores["graph"]["status"] == "not_found"
    assert second.stores["graph"]["already_erased_at"] == first.erased_at
    assert second.complete is True


def test_with_real_agent_memory_vectors_memory_and_graph_are_erased() -> None:
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory"))
    a = memory.store("Customer 4471 asked for a refund", metadata={"entities": ["customer-4471"]})
    b = memory.store("Customer 4471 moved to Berlin", metadata={"entity_id": "customer-4471"})
    kept = memory.store("The office closes at six")
    hashes = [memory.db.get_node(x).embed_hash for x in (a, b)]
    model = memory.workspace.embedder.name
    assert len(memory.db.get_vectors(hashes, model)) == 2
    graph = ContextGraph(workspace=memory.workspace)  # the workspace graph: memories are nodes in it
    graph.add_node("customer-4471", "customer")
    graph.add_edges([{"source": a, "target": "customer-4471", "type": "mentions"},
                     {"source": b, "target": "customer-4471", "type": "mentions"}])
    coordinator = ErasureCoordinator(graph=graph, memory=memory)
    receipt = coordinator.erase_entity("customer-4471", reason="GDPR")
    stores = receipt.to_dict()["stores"]
    assert stores["memory"] == {"status": "erased", "items": 2}
    assert stores["vectors"]["status"] == "erased" and stores["vectors"]["ids"] == 2
    assert stores["graph"]["status"] == "erased" and stores["graph"]["nodes"] == 1
    assert receipt.complete
    assert memory.count() == 1 and memory.get_memory(kept) is not None
    assert memory.db.get_vectors(hashes, model) == {}  # the embeddings are gone, not just unlinked
    assert [r["id"] for r in memory.retrieve("refund Berlin customer", max_results=5)] == [kept]
    again = coordinator.erase_entity("customer-4471")
    assert {k: v["status"] for k, v in again.stores.items()} == {
        "vectors": "not_found", "memory": "not_found", "graph": "not_found", "decisions": "not_found",
        "checkpoints": "not_found", "audit": "not_found"}


def test_backend_without_delete_is_unsupported_and_receipt_incomplete() -> None:
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory"))
    memory.store("Customer 4471 asked for a refund", metadata={"entities": ["customer-4471"]})
    coordinator = ErasureCoordinator(graph=customer_graph(), memory=memory, vector_store=NoDeleteBackend())
    receipt = coordinator.erase_entity("customer-4471", reason="GDPR Art. 17 request #882")
    d = receipt.to_dict()
    assert d["stores"]["vectors"]["status"] == "unsupported" and d["stores"]["vectors"]["backend"] == "faiss"
    assert "delete" in d["stores"]["vectors"]["detail"]
    assert d["stores"]["memory"] == {"status": "erased", "items": 1}
    assert d["stores"]["graph"]["status"] == "erased"  # the other legs still ran
    assert receipt.complete is False and d["complete"] is False and receipt.incomplete_stores == ["vectors"]


def test_deleting_backend_gets_the_memory_ids_or_the_given_vector_ids() -> None:
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory"))
    mid = memory.store("Customer 4471 asked for a refund", metadata={"entities": ["customer-4471"]})
    backend = DeletingBackend({mid, "v-other"})
    receipt = ErasureCoordinator(memory=memory, vector_store=backend).erase_entity("customer-4471")
    assert backend.calls == [[mid]] and backend.ids == {"v-other"}
    assert receipt.stores["vectors"] == {"status": "erased", "backend": "external", "ids": 1}
    assert receipt.stores["graph"] == {"status": "not_configured"} and receipt.complete
    explicit = ErasureCoordinator(graph=customer_graph(), vector_store=backend).erase_entity(
        "customer-4471", vector_ids=["v-other"])
    assert backend.calls[-1] == ["v-other"] and explicit.stores["vectors"]["status"] == "erased"
    nothing = ErasureCoordinator(graph=customer_graph(), vector_store=backend).erase_entity("customer-4471")
    assert nothing.stores["vectors"]["status"] == "not_found"
    off = ErasureCoordinator(memory=memory, vector_store=False).erase_entity("customer-4471")
    assert off.stores["vectors"] == {"status": "not_configured"}


def test_a_store_that_fails_is_recorded_and_the_rest_still_erased() -> None:
    memory = AgentMemory(vector_store=VectorStore(backend="inmemory"))
    memory.store("Customer 4471 asked for a refund", metadata={"entities": ["customer-4471"]})
    broken = customer_graph()
    broken.store.close()  # the graph's database is gone: purge_node raises
    receipt = ErasureCoordinator(graph=broken, memory=memory).erase_entity("customer-4471")
    assert receipt.stores["graph"]["status"] == "failed" and receipt.stores["graph"]["error"]
    assert receipt.stores["memory"] == {"status": "erased", "items": 1}
    assert receipt.complete is False and receipt.incomplete_stores == ["graph", "physical"]  # its file: unknown
    assert [a["status"] for a in receipt.audit] == ["recorded", "failed"]  # memory's log has it; graph's is gone
    assert memory.db.audit(principal="erasure")[-1]["outcome"] == "incomplete"


def test_erase_entities_one_receipt_each_in_order_and_failures_do_not_stop() -> None:
    graph = customer_graph()
    graph.add_node("customer-9", "customer")
    receipts = ErasureCoordinator(graph=graph).erase_entities(["customer-9", "nobody", "customer-4471"],
                                                              reason="batch", at="2026-08-16T09:03:36Z")
    assert [r.entity_id for r in receipts] == ["customer-9", "nobody", "customer-4471"]
    assert [r.stores["graph"]["status"] for r in receipts] == ["erased", "not_found", "erased"]
    assert receipts[0].erased_at == "2026-08-16T09:03:36.000000+00:00"
    assert graph.store.tombstone(graph.store_id("customer-9"))["purged_at"] == receipts[0].erased_at


def test_at_least_one_store_is_required() -> None:
    with pytest.raises(ValidationError):
        ErasureCoordinator()
    with pytest.raises(ValidationError):
        ErasureCoordinator(graph=customer_graph()).erase_entity("")
