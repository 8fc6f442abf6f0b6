"""``ErasureCoordinator``: erase one entity from every bound store, and from every byte the library controls.

Erasure runs outward-in: vectors, memory, the decisions about the entity, its mentions (when asked), what
checkpoints and the audit log hold about them, then the graph. The graph's tombstone is the durable
attestation, so it is written last: a crash part-way leaves the node present and the receipt incomplete
rather than a tombstone claiming more than happened. A store that raises is recorded as ``failed`` and the
others are still erased; erasing twice reports ``not_found``.

After the legs, each store of record is scrubbed (``Store.scrub``: SQLite's TRUNCATE checkpoint, PostgreSQL's
VACUUM FULL of the touched tables in the default strict mode), so a process killed right after the call leaves
no copy in the store's files; the receipt's ``physical`` says what was done and what may still hold the bytes.
Every tombstone an erasure writes names the entity, so no import brings the records back (``Store.erased``).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from .. import copies
from ..decisions import checkpoints
from ..errors import ValidationError
from ..graph import ContextGraph
from ..memory.purge import purge_memories
from ..memory.service import AgentMemory
from ..vector_store import VectorStore
from ..model import Node, content_hash, to_utc_iso, utcnow
from ..graph.writes import retracted_node
from ..store import Store
from ..seams import (Checked, ErasableMemory, ErasableVectors, DeletesVectors, NamedBackend, PurgeableGraph,
                     store_of, workspace_of)
from ..store.scrub import CONTENT_TABLES, LOG_TABLES
from . import subject as found
from .receipt import ErasureReceipt

_UNSET = object()
Authorize = Callable[[str, str], None]
"""Called with (namespace, id) for every namespace an erasure will change, before it changes anything."""


def _failed(exc: BaseException) -> dict[str, Any]:
    return {"status": "failed", "error": type(exc).__name__, "detail": str(exc)}


def _item_id(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in ("id", "memory_id", "node_id"):
            if item.get(key):
                return str(item[key])
    if isinstance(item, _Identified) and item.id:  # a caller's record object (a dataclass, a model)
        return str(item.id)
    if isinstance(item, _MemoryIdentified) and item.memory_id:
        return str(item.memory_id)
    raise ValidationError(f"find_by_entity returned an item without an id: {item!r}")


@runtime_checkable
class _Identified(Protocol):
    id: Any


@runtime_checkable
class _MemoryIdentified(Protocol):
    memory_id: Any


def _backend(vs: Any) -> str:
    """The name a vector backend gives itself (``backend``), else its class name."""
    return str(vs.backend) if isinstance(vs, NamedBackend) else type(vs).__name__


def _status(count: int) -> str:
    return "erased" if count else "not_found"


class ErasureCoordinator:
    """Drive an entity's erasure across graph, memory and vector store; return an ``ErasureReceipt``.

    ``physical="strict"`` (default) makes the store's files come out clean (on PostgreSQL: VACUUM FULL of the
    touched tables, which locks each while it runs); ``"deferred"`` leaves that to the operator and the receipt
    is incomplete until then. ``principal`` is who erases (audited as the actor); ``authorize`` is asked for
    every namespace the erasure would change before anything changes (the workspace erasure checks grants)."""

    def __init__(self, graph: ContextGraph | PurgeableGraph | None = None,
                 memory: AgentMemory | ErasableMemory | None = None,
                 vector_store: VectorStore | ErasableVectors | DeletesVectors | NamedBackend | bool | None = _UNSET,
                 audit_store: Store | None = None, actor: str = "erasure", principal: str | None = None,
                 physical: str = "strict", authorize: Authorize | None = None) -> None:
        self._vectors_disabled = vector_store is False
        if vector_store is _UNSET:
            vector_store = memory.vector_store if isinstance(memory, AgentMemory) else None
        if vector_store is False:
            vector_store = None
        if graph is None and memory is None and vector_store is None:
            raise ValidationError("ErasureCoordinator needs at least one store: graph=, memory= or vector_store=")
        if physical not in ("strict", "deferred"):
            raise ValidationError(f"physical={physical!r}: use strict or deferred", physical=physical)
        self.graph = graph
        self.memory = memory
        # Ours (in a store of record, purged there) or a caller's own object (driven through its methods):
        self._our_graph: ContextGraph | None = graph if isinstance(graph, ContextGraph) else None
        self._our_memory: AgentMemory | None = memory if isinstance(memory, AgentMemory) else None
        self.vector_store = vector_store
        self.actor = principal or actor  # the principal the receipt is audited under
        self.principal = principal
        self.physical = physical
        self.authorize = authorize
        self._unreadable: list[dict[str, Any]] = []
        self.stores: list[Store] = []  # the stores of record the bound objects live in
        for store in (store_of(self._our_memory), store_of(self._our_graph)):
            if store is not None and all(store is not s for s in self.stores):
                self.stores.append(store)
        candidates = [audit_store] if audit_store is not None else self.stores
        self.audit_stores: list[Any] = []
        for store in candidates:
            if isinstance(store, Store) and all(store is not s for s in self.audit_stores):
                self.audit_stores.append(store)

    # --- what the bound objects are --------------------------------------------------------------
    def _memory_store(self) -> Store | None:
        """The store of record of an AgentMemory (None for a foreign memory object)."""
        return store_of(self._our_memory)

    def _namespaces(self) -> tuple[str | None, str | None]:
        """The namespaces of the bound graph and memory (None for a caller's own object)."""
        return (self._our_graph.namespace if self._our_graph is not None else None,
                self._our_memory.namespace if self._our_memory is not None else None)

    def _vectors_in_store(self) -> bool:
        """Whether the embeddings live in a store of record (purged with the records), not in a foreign backend."""
        if self.vector_store is None:
            return not self._vectors_disabled and bool(self.stores)
        store = store_of(self.vector_store)
        return store is not None and any(store is s for s in self.stores)

    def _entity_node(self, entity_id: str) -> tuple[Store | None, str | None]:
        graph = self._our_graph
        if graph is not None:
            store = graph.store
            try:
                found = graph.resolve(entity_id)
                if found is None:  # retracted before the erasure: its history still holds it
                    found = retracted_node(graph, entity_id)
                return store, found
            except Exception:  # an unreadable graph store: its legs report the failure
                return store, None
        return None, None

    # --- the legs --------------------------------------------------------------------------------
    def _foreign_vectors(self, ids: list[str]) -> dict[str, Any]:
        vs = self.vector_store
        if vs is None:
            return {"status": "not_configured"}
        backend = _backend(vs)
        delete = vs.delete if isinstance(vs, ErasableVectors) else \
            vs.delete_vectors if isinstance(vs, DeletesVectors) else None
        if delete is None:
            return {"status": "unsupported", "backend": backend,
                    "detail": "backend exposes no delete()/delete_vectors(); erase these ids out of band"}
        if not ids:
            return {"status": "not_found", "backend": backend, "ids": 0}
        try:
            delete(ids)
        except Exception as exc:  # the receipt records the failure; the other legs still run
            return {**_failed(exc), "backend": backend}
        return {"status": "erased", "backend": backend, "ids": len(ids)}

    def _find_memories(self, entity_id: str) -> tuple[list[str] | None, dict[str, Any] | None]:
        """The memory ids about the entity, or the memory leg's outcome if it cannot say."""
        mem = self.memory
        if mem is None:
            return None, {"status": "not_configured"}
        if not isinstance(mem, ErasableMemory):
            return None, {"status": "unsupported", "detail": "memory exposes no find_by_entity()/batch_delete()"}
        try:
            return [_item_id(x) for x in mem.find_by_entity(entity_id)], None
        except Exception as exc:  # recorded as the memory leg's failure
            return None, _failed(exc)

    def _memory(self, ids: list[str], entity_id: str, tally: dict[str, int]) -> dict[str, Any]:
        if not ids:
            return {"status": "not_found", "items": 0}
        try:
            store = self._memory_store()
            if store is not None:
                totals = purge_memories(store, ids, "erasure", self.actor, erasure=entity_id)
                tally["vectors"] += totals["vectors"]
                tally["records"] += totals["records"]
                deleted = totals["nodes"]
                if self._our_memory is not None:
                    self._our_memory.retention.forgotten(ids)
            else:
                result = self.memory.batch_delete(ids)
                deleted = result if isinstance(result, int) and not isinstance(result, bool) else len(ids)
        except Exception as exc:
            return _failed(exc)
        return {"status": "erased", "items": deleted}

    def _decisions(self, plans: list[tuple[Store, found.Subject]], entity_id: str, reason: str, at: str,
                   tally: dict[str, int]) -> dict[str, Any]:
        if not plans:
            return {"status": "not_configured"}
        out = {"decisions": 0, "exceptions": 0, "approvals": 0, "edges": 0}
        try:
            for store, subj in plans:
                if not subj.decisions:
                    continue
                kinds = store.get_nodes(subj.attached, include_retracted=True)
                totals = store.purge_nodes([*subj.decisions, *subj.attached], reason=reason, actor=self.actor,
                                           at=at, erasure=entity_id)
                out["decisions"] += len(subj.decisions)
                out["exceptions"] += sum(1 for n in kinds.values() if n.kind == "policy_exception")
                out["approvals"] += sum(1 for n in kinds.values() if n.kind == "approval")
                out["edges"] += totals["edges"]
                tally["vectors"] += totals["vectors"]
                tally["touched"].update([*subj.decisions, *subj.attached])
        except Exception as exc:
            return _failed(exc)
        return {"status": _status(out["decisions"]), **out}

    def _mentions(self, plans: list[tuple[Store, found.Subject]], entity_id: str, reason: str, at: str,
                  tally: dict[str, int]) -> dict[str, Any]:
        """Erase what mentions the entity: memories and graph nodes purged, lib: docs rewritten as a deleted,
        empty version whose older versions are purged; pkg: docs only listed."""
        out = {"memories": 0, "docs": 0, "graph_nodes": 0, "read_only": 0}
        try:
            for store, subj in plans:
                groups: dict[str, list[str]] = {}
                for entry in subj.mentions.values():
                    groups.setdefault(entry["action"], []).append(entry["id"])
                if groups.get("memory"):
                    totals = purge_memories(store, groups["memory"], reason, self.actor, erasure=entity_id)
                    tally["records"] += totals["records"]
                    out["memories"] += totals["nodes"]
                    tally["vectors"] += totals["vectors"]
                if groups.get("graph"):
                    totals = store.purge_nodes(groups["graph"], reason=reason, actor=self.actor, at=at,
                                               erasure=entity_id)
                    out["graph_nodes"] += totals["nodes"]
                    tally["vectors"] += totals["vectors"]
                if groups.get("doc"):
                    out["docs"] += self._blank_docs(store, groups["doc"], entity_id, reason, at, tally)
                out["read_only"] += len(groups.get("read_only", []))
                tally["touched"].update(i for ids in groups.values() for i in ids)
        except Exception as exc:
            return _failed(exc)
        changed = out["memories"] + out["docs"] + out["graph_nodes"]
        return {"status": _status(changed), **out}

    def _blank_docs(self, store: Store, ids: list[str], entity_id: str, reason: str, at: str,
                    tally: dict[str, int]) -> int:
        """Each doc becomes a deleted version with nothing in it; every older version goes."""
        nodes = store.get_nodes(ids)
        with store.transaction():
            blank = [Node(id=n.id, kind=n.kind, namespace=n.namespace, key=n.key, title=n.key,
                          props={"erased": True}, created_by=self.actor) for n in nodes.values()]
            store.put_nodes(blank, actor=self.actor, at=at)
            store.retract_nodes(list(nodes), actor=self.actor, at=at, edges="outbound")
            tally["vectors"] += store.purge_history(list(nodes), actor=self.actor)["vectors"]
            store.put_tombstones([{"id": n.id, "namespace": n.namespace, "kind": n.kind, "purged_at": at,
                                   "reason": reason, "actor": self.actor, "erasure": entity_id}
                                  for n in nodes.values()])
        return len(nodes)

    def _graph(self, entity_id: str, reason: str | None, at: str, tally: dict[str, int]) -> dict[str, Any]:
        g = self.graph
        if g is None:
            return {"status": "not_configured"}
        if not isinstance(g, PurgeableGraph):
            return {"status": "unsupported", "detail": "graph exposes no purge_node()"}
        try:
            if self._our_graph is not None:
                totals = g.purge_node(entity_id, reason=reason or "", at=at, erasure=entity_id)
            else:
                totals = g.purge_node(entity_id, reason=reason or "", at=at)
        except Exception as exc:
            return _failed(exc)
        if not totals.get("nodes"):
            stone = totals.get("tombstone")
            out: dict[str, Any] = {"status": "not_found", "nodes": 0, "edges": 0}
            if stone:
                out["already_erased_at"] = stone.get("purged_at")
            return out
        tally["vectors"] += totals.get("vectors", 0)
        return {"status": "erased", "nodes": totals["nodes"], "edges": totals.get("edges", 0),
                "versions": totals.get("versions", 0), "vectors": totals.get("vectors", 0)}

    def _derived(self, plans: list[tuple[Store, found.Subject]], targets: set[str],
                 tally: dict[str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The checkpoints and audit legs: what snapshots and audit entries held about the erased records."""
        held = {"held": 0, "flushed": 0, "nodes": 0}
        entries = 0
        try:
            for store, _ in plans:
                for key, value in checkpoints.scrub(store, tally["touched"], self.actor).items():
                    held[key] += value
            cp = {"status": _status(sum(held.values())), **held}
        except Exception as exc:
            cp = _failed(exc)
        try:
            for store, _ in plans:
                entries += store.redact_audit(sorted(targets), {"redacted": "erasure"})
            audit = {"status": _status(entries), "entries": entries}
        except Exception as exc:
            audit = _failed(exc)
        return cp, audit

    # --- API -------------------------------------------------------------------------------------
    def erase_entity(self, entity_id: str, reason: str | None = None, at: Any = None,
                     vector_ids: Sequence[str] | None = None, erase_mentions: bool = False) -> ErasureReceipt:
        """Erase one entity; with ``erase_mentions`` also the memories, docs, decisions and graph nodes naming it
        (``pkg:`` docs are read-only: listed in the receipt's ``mentions``, never changed). A memory store or graph
        acting for a principal is checked first (write on each; AccessDeniedError, audited, before anything
        changes)."""
        if not isinstance(entity_id, str) or not entity_id:
            raise ValidationError("entity_id must be a non-empty string", entity_id=entity_id)
        for bound in (self.memory, self.graph):
            if isinstance(bound, Checked):
                bound.check("write", "erase_entity", entity_id)
        when = to_utc_iso(at) or utcnow()
        why = reason or ""
        receipt = ErasureReceipt(entity_id, reason, when)
        memory_ids, outcome = self._find_memories(entity_id)
        plans = self._plan(entity_id, memory_ids or [], erase_mentions, receipt)
        if memory_ids is not None:  # with the retracted ones the store's history still holds
            memory_store = self._memory_store()
            memory_ids = list(dict.fromkeys([*memory_ids, *(i for st, subj in plans if st is memory_store
                                                            for i in subj.memories)]))
        tally: dict[str, Any] = {"vectors": 0, "records": 0, "touched": set(memory_ids or [])}
        in_store = self._vectors_in_store()
        if not in_store:
            receipt.stores["vectors"] = self._foreign_vectors(list(vector_ids) if vector_ids is not None
                                                              else list(memory_ids or []))
        receipt.stores["memory"] = outcome if outcome is not None else self._memory(memory_ids or [], entity_id,
                                                                                     tally)
        receipt.stores["decisions"] = self._decisions(plans, entity_id, why, when, tally)
        if erase_mentions:
            receipt.stores["mentions"] = self._mentions(plans, entity_id, why, when, tally)
        entity_ids = [s.node_id for _, s in plans if s.node_id]
        tally["touched"].update(entity_ids)
        targets = self._audit_targets(entity_id, plans, tally["touched"])
        receipt.stores["checkpoints"], receipt.stores["audit"] = self._derived(plans, targets, tally)
        receipt.stores["graph"] = self._graph(entity_id, reason, when, tally)
        for store, subj in plans:  # names embedded while resolving mentions (EntityTable) are derived too
            tally["vectors"] += store.delete_vectors([content_hash(n) for n in subj.names])
        if in_store:
            receipt.stores["vectors"] = self._store_vectors(receipt, tally["vectors"], len(memory_ids or []))
        self._drop_derived()
        receipt.external_copies = self._copies(plans, tally["touched"])
        receipt.physical = self._physical(plans, CONTENT_TABLES + (LOG_TABLES if tally["records"] else ()))
        self._audit(receipt)
        return receipt

    def _plan(self, entity_id: str, memory_ids: list[str], erase_mentions: bool,
              receipt: ErasureReceipt) -> list[tuple[Store, found.Subject]]:
        """Read what each store of record holds about the entity, list the mentions, ask ``authorize``."""
        graph_store, node_id = self._entity_node(entity_id)
        memory_store = self._memory_store()
        plans = []
        self._unreadable: list[dict[str, Any]] = []
        for store in self.stores:
            try:
                subj = found.find(store, entity_id, node_id if store is graph_store else None,
                                  self._namespaces()[1] if store is memory_store else None)
            except Exception as exc:  # the legs on this store fail and say so; the others still run
                self._unreadable.append({"url": store.url, **_failed(exc), "status": "incomplete"})
                continue
            subj.memories = sorted(set(subj.memories) | (set(memory_ids) if store is memory_store else set()))
            for entry in list(subj.mentions.values()):
                if entry["id"] in subj.memories:
                    del subj.mentions[entry["id"]]
                    continue
                entry["action"] = found.action_for(entry)
            if erase_mentions:
                extra = [m["id"] for m in subj.mentions.values() if m["action"] == "decision"]
                subj.decisions = list(dict.fromkeys([*subj.decisions, *extra]))
                subj.attached = list(dict.fromkeys([*subj.attached, *found.attached_to(store, extra)]))
            plans.append((store, subj))
            for entry in subj.mentions.values():
                receipt.mentions.append({**entry, "erased": erase_mentions and entry["action"] != "read_only"})
        if self.authorize is not None:
            for store, subj in plans:
                changes = [*subj.decisions, *subj.attached]
                if erase_mentions:
                    changes += [m["id"] for m in subj.mentions.values() if m["action"] != "read_only"]
                for node in store.get_nodes(changes, include_retracted=True).values():
                    self.authorize(node.namespace, node.id)
        return plans

    def _audit_targets(self, entity_id: str, plans: list[tuple[Store, found.Subject]], ids: set[str]) -> set[str]:
        """How audit entries name the erased records: the id, ``namespace/id``, and the graph's own form."""
        targets = {entity_id, *ids}
        namespaces = {m["namespace"] for _, s in plans for m in s.mentions.values()}
        namespaces |= set(self._namespaces())
        for ns in filter(None, namespaces):
            targets |= {f"{ns}/{i}" for i in ids}
            targets.add(f"{ns}/{entity_id}")
        if self._our_graph is not None:
            targets |= {self._our_graph.user_id(i) for i in ids}
        return targets

    def _store_vectors(self, receipt: ErasureReceipt, deleted: int, memories: int) -> dict[str, Any]:
        failed = [k for k in ("memory", "decisions", "mentions", "graph") if receipt.stores.get(k, {}).get(
            "status") == "failed"]
        backend = ", ".join(s.backend for s in self.stores)
        out = {"status": "failed" if failed and not deleted else _status(deleted), "backend": backend,
               "ids": memories if receipt.stores.get("memory", {}).get("status") == "erased" else 0,
               "deleted": deleted, "detail": "embeddings live in the store of record and were purged with the "
                                             "records: own, context (pair) and name vectors"}
        if failed:
            out["detail"] += f"; the {', '.join(failed)} leg failed, so some may remain"
        return out

    def _drop_derived(self) -> None:
        """Forget what this process derived from the stores (vector and precedent indexes, adjacency, briefs,
        query embeddings): the next use rebuilds them from the store, as a new process would."""
        for obj in (self.graph, self.memory, self.vector_store):
            ws = workspace_of(obj)
            if ws is not None:
                ws.drop_caches()

    def _copies(self, plans: list[tuple[Store, found.Subject]], ids: set[str]) -> list[dict[str, Any]]:
        out = []
        for store, subj in plans:
            namespaces = {m["namespace"] for m in subj.mentions.values()}
            namespaces |= set(self._namespaces())
            if subj.node is not None:
                namespaces.add(subj.node.namespace)
            out += copies.holding(store, ids | set(subj.mentions), {n for n in namespaces if n})
        return out

    def _physical(self, plans: list[tuple[Store, found.Subject]], tables: tuple[str, ...]) -> dict[str, Any]:
        """Scrub each store of record's ``tables`` (the change log's too when a record keyed by the subject went)."""
        if not plans and not self._unreadable:
            return {"status": "not_configured",
                    "detail": "no store of record is bound: what the bound objects do with their bytes is theirs"}
        results = list(self._unreadable)
        strict = self.physical == "strict"
        for store, _ in plans:
            try:
                result = {"url": store.url, **store.scrub(tables, strict=strict)}
                if strict:  # PostgreSQL: the values ANALYZE sampled before, in pg_statistic
                    stats = store.forget_statistics(tables)
                    result["statistics"] = stats["statistics"]
                    result["may_remain"] = [*result.get("may_remain", []), *stats["may_remain"]]
                    if stats.get("held"):  # a reader older than its ANALYZE kept the old samples
                        result["status"] = "held"
                results.append(result)
            except Exception as exc:
                results.append({"url": store.url, **_failed(exc), "status": "incomplete"})
        if len(results) == 1:  # the store's URL is in receipt.audit
            return {k: v for k, v in results[0].items() if k != "url"}
        worst = next((r["status"] for r in results if r["status"] != "clean"), "clean")
        return {"status": worst, "stores": results}

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
                       at: Any = None, erase_mentions: bool = False) -> list[ErasureReceipt]:
        """One receipt per entity, in order; one failure does not stop the rest."""
        return [self.erase_entity(e, reason=reason, at=at, erase_mentions=erase_mentions) for e in entity_ids]
