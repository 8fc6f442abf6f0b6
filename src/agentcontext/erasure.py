"""``ErasureCoordinator``: erase one entity from every bound store and say what each one did.

Erasure runs outward-in: the vector store, then memory, then the graph. The graph's tombstone is
the durable attestation, so it is written last: a crash part-way leaves the node present and the
receipt incomplete rather than a tombstone claiming more than happened. A store that raises is
recorded as ``failed`` and the others are still erased; erasing twice reports ``not_found``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .errors import ValidationError
from .model import to_utc_iso, utcnow
from .store import Store

STATUSES = ("erased", "not_found", "not_configured", "unsupported", "failed")
LEGS = ("vectors", "memory", "graph")
_UNSET = object()


@dataclass
class ErasureReceipt:
    entity_id: str
    reason: str | None
    erased_at: str
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)  # where the receipt was logged

    @property
    def complete(self) -> bool:
        return not self.incomplete_stores

    @property
    def incomplete_stores(self) -> list[str]:
        return [name for name in LEGS if self.stores.get(name, {}).get("status") in ("unsupported", "failed")]

    def to_dict(self) -> dict[str, Any]:
        return {"entity_id": self.entity_id, "reason": self.reason, "erased_at": self.erased_at,
                "complete": self.complete, "stores": {k: dict(v) for k, v in self.stores.items()}}


def _failed(exc: BaseException) -> dict[str, Any]:
    return {"status": "failed", "error": type(exc).__name__, "detail": str(exc)}


def _item_id(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in ("id", "memory_id", "node_id"):
            if item.get(key):
                return str(item[key])
    for key in ("id", "memory_id"):
        if getattr(item, key, None):
            return str(getattr(item, key))
    raise ValidationError(f"find_by_entity returned an item without an id: {item!r}")


class ErasureCoordinator:
    """Drive an entity's erasure across graph, memory and vector store; return an ``ErasureReceipt``."""

    def __init__(self, graph: Any = None, memory: Any = None, vector_store: Any = _UNSET,
                 audit_store: Any = None, actor: str = "erasure") -> None:
        if vector_store is _UNSET:
            vector_store = getattr(memory, "vector_store", None) if memory is not None else None
        if vector_store is False:
            vector_store = None
        if graph is None and memory is None and vector_store is None:
            raise ValidationError("ErasureCoordinator needs at least one store: graph=, memory= or vector_store=")
        self.graph = graph
        self.memory = memory
        self.vector_store = vector_store
        self.actor = actor  # the principal the receipt is audited under
        candidates = [audit_store] if audit_store is not None else [
            getattr(getattr(memory, "workspace", None), "store", None), getattr(graph, "store", None)]
        self.audit_stores: list[Any] = []
        for store in candidates:
            if isinstance(store, Store) and all(store is not s for s in self.audit_stores):
                self.audit_stores.append(store)

    # --- legs ----------------------------------------------------------------------------------
    def _vectors(self, ids: list[str]) -> dict[str, Any]:
        vs = self.vector_store
        if vs is None:
            return {"status": "not_configured"}
        backend = getattr(vs, "backend", type(vs).__name__)
        delete = getattr(vs, "delete", None) or getattr(vs, "delete_vectors", None)
        if not callable(delete):
            return {"status": "unsupported", "backend": backend,
                    "detail": "backend exposes no delete()/delete_vectors(); erase these ids out of band"}
        if not ids:
            return {"status": "not_found", "backend": backend, "ids": 0}
        try:
            delete(ids)
        except Exception as exc:  # the receipt records the failure; the other legs still run
            return {**_failed(exc), "backend": backend}
        return {"status": "erased", "backend": backend, "ids": len(ids)}

    def _find(self, entity_id: str) -> tuple[list[str] | None, dict[str, Any] | None]:
        """The memory ids that mention the entity, or the memory leg's outcome if it cannot say."""
        mem = self.memory
        if mem is None:
            return None, {"status": "not_configured"}
        if not callable(getattr(mem, "find_by_entity", None)) or not callable(getattr(mem, "batch_delete", None)):
            return None, {"status": "unsupported", "detail": "memory exposes no find_by_entity()/batch_delete()"}
        try:
            return [_item_id(x) for x in mem.find_by_entity(entity_id)], None
        except Exception as exc:  # recorded as the memory leg's failure
            return None, _failed(exc)

    def _memory(self, ids: list[str]) -> dict[str, Any]:
        if not ids:
            return {"status": "not_found", "items": 0}
        try:
            result = self.memory.batch_delete(ids)
        except Exception as exc:
            return _failed(exc)
        deleted = result if isinstance(result, int) and not isinstance(result, bool) else len(ids)
        return {"status": "erased", "items": deleted}

    def _graph(self, entity_id: str, reason: str | None, at: str) -> dict[str, Any]:
        g = self.graph
        if g is None:
            return {"status": "not_configured"}
        if not callable(getattr(g, "purge_node", None)):
            return {"status": "unsupported", "detail": "graph exposes no purge_node()"}
        try:
            totals = g.purge_node(entity_id, reason=reason or "", at=at)
        except Exception as exc:
            return _failed(exc)
        if not totals.get("nodes"):
            stone = totals.get("tombstone")
            out: dict[str, Any] = {"status": "not_found", "nodes": 0, "edges": 0}
            if stone:
                out["already_erased_at"] = stone.get("purged_at")
            return out
        return {"status": "erased", "nodes": totals["nodes"], "edges": totals.get("edges", 0),
                "versions": totals.get("versions", 0), "vectors": totals.get("vectors", 0)}

    def _vectors_live_with_memory(self) -> bool:
        vs_ws, mem_ws = getattr(self.vector_store, "workspace", None), getattr(self.memory, "workspace", None)
        return (self.vector_store is not None and vs_ws is not None and mem_ws is not None
                and getattr(vs_ws, "store", None) is getattr(mem_ws, "store", object()))

    # --- API -----------------------------------------------------------------------------------
    def erase_entity(self, entity_id: str, reason: str | None = None, at: Any = None,
                     vector_ids: Sequence[str] | None = None) -> ErasureReceipt:
        """Erase one entity: vectors, then memory, then the graph (tombstone last)."""
        if not isinstance(entity_id, str) or not entity_id:
            raise ValidationError("entity_id must be a non-empty string", entity_id=entity_id)
        when = to_utc_iso(at) or utcnow()
        receipt = ErasureReceipt(entity_id, reason, when)
        found, outcome = self._find(entity_id)
        if vector_ids is None and self._vectors_live_with_memory():
            # one store of record: a memory's embedding is purged with the memory node, in one transaction
            receipt.stores["vectors"] = {"status": "pending"}
            receipt.stores["memory"] = outcome if outcome is not None else self._memory(found or [])
            mem_status = receipt.stores["memory"]["status"]
            receipt.stores["vectors"] = {
                "status": mem_status if mem_status in ("erased", "not_found", "failed") else "failed",
                "backend": getattr(self.vector_store, "backend", type(self.vector_store).__name__),
                "ids": len(found or []) if mem_status == "erased" else 0,
                "detail": "embeddings live in the memory's store of record and are purged with the memories"}
        else:
            receipt.stores["vectors"] = self._vectors(list(vector_ids) if vector_ids is not None
                                                      else list(found or []))
            receipt.stores["memory"] = outcome if outcome is not None else self._memory(found or [])
        receipt.stores["graph"] = self._graph(entity_id, reason, when)
        self._audit(receipt)
        return receipt

    def _audit(self, receipt: ErasureReceipt) -> None:
        """Append the receipt to the audit log of each bound store of record; a failure is noted on the receipt."""
        outcome = "complete" if receipt.complete else "incomplete"
        body = receipt.to_dict()
        for store in self.audit_stores:
            try:
                store.append_audit(self.actor, "erase_entity", receipt.entity_id, outcome, body)
                receipt.audit.append({"store": store.url, "status": "recorded"})
            except Exception as exc:  # e.g. the graph's database is the store that failed
                receipt.audit.append({"store": store.url, "status": "failed", "error": str(exc)})

    def erase_entities(self, entity_ids: Sequence[str], reason: str | None = None,
                       at: Any = None) -> list[ErasureReceipt]:
        """One receipt per entity, in order; one failure does not stop the rest."""
        return [self.erase_entity(e, reason=reason, at=at) for e in entity_ids]


def erase_workspace_entity(ws: Any, entity_id: str, reason: str | None = None, principal: str | None = None,
                           namespace: str = "default") -> ErasureReceipt:
    """Erase an entity from a workspace's memory store ``memory:<namespace>`` and its graph ``graph:default``
    as ``principal``, who needs write on both (denials are audited), and admin on the namespace of a node
    outside the graph's own that the id names (a pack's doc, another store's node); the receipt is audited
    under the principal. What the CLI, MCP and the web console call."""
    from . import access
    from .graph.guarded import open_graph
    from .memory.guarded import open_memory
    from .vector_store import VectorStore

    if not isinstance(entity_id, str) or not entity_id.strip():
        raise ValidationError("entity_id must be a non-empty string", entity_id=entity_id)
    memory = open_memory(ws, namespace, principal, "write", "erase_entity")
    graph = open_graph(ws, principal, "write", "erase_entity", entity_id)
    found = graph.resolve(entity_id)
    node = ws.store.get_node(found) if found is not None else None
    if node is not None and node.namespace != graph.namespace:  # a doc, a memory, another graph's node
        access.require(ws, principal, node.namespace, "admin", "erase_entity", found)
    coordinator = ErasureCoordinator(graph=graph, memory=memory, vector_store=VectorStore(workspace=ws),
                                     actor=access.effective_principal(ws, principal))
    return coordinator.erase_entity(entity_id, reason=reason)
