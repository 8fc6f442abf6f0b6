"""Checkpoints: named snapshots of the graph's decisions, nodes and relationships, and their diffs.

A snapshot keeps, for every node, its kind, version and content hash, and for every edge its
ends, type, weight and a hash of its properties: enough to say what was added, removed or
modified between two snapshots without copying content. ``flush_checkpoint`` writes a snapshot
into the store as a record (kind ``checkpoint``) and as a graph node of kind ``checkpoint`` (the
snapshot in its props), so it survives a restart and travels with the graph through
``save``/``load``. Checkpoint nodes are left out of snapshots, so they never show up in diffs.

Erasure rewrites what checkpoints hold about erased records (``scrub``): the entries of erased nodes, their
decisions' text and the relationships touching them go from every snapshot held in this process's memory
(each ``Checkpoints`` registers itself), from the flushed records and from the checkpoint nodes, whose
older versions are purged. A snapshot taken before an erasure and flushed after it is scrubbed on the way
in, against the store's tombstones.

Access: checkpoints act as the graph's principal under its namespace: taking, reading, listing and diffing
need ``read`` (a snapshot holds only what the principal sees), flushing needs ``write``; stored checkpoints of
a namespace the principal may not read are not listed and answer like missing ones.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Iterable

from .. import access
from ..errors import NotFoundError, ValidationError
from ..model import Node, content_hash, utcnow
from .common import DECISION, graph_of, namespace_of, principal_of, workspace_of

RECORD_KIND = "checkpoint"
NODE_KIND = "checkpoint"


def node_id(label: str) -> str:
    return f"checkpoint:{label}"


def _scope(graph: Any) -> str | list[str] | None:
    """What the graph reads (None: the whole workspace, as for a bare Workspace or Store)."""
    handle = graph_of(graph)
    return handle.scope if handle is not None else None


def _check(graph: Any, level: str, action: str, target: str = "") -> access.Sight | None:
    """Check the graph's principal on its namespace; returns what it sees (None: everything)."""
    ws, principal = workspace_of(graph), principal_of(graph)
    access.require(ws, principal, namespace_of(graph), level, action, target)
    return access.sight(ws, principal)


def _namespace_of(snap: dict[str, Any]) -> str:
    """The namespace a snapshot was taken in (older ones only say their scope; None was the workspace graph)."""
    return snap.get("namespace") or snap.get("scope") or "graph:default"


def take_snapshot(graph: Any, label: str) -> dict[str, Any]:
    """The current state of ``graph`` (a ContextGraph, Workspace or Store) under ``label``, as far as the graph's
    principal sees it."""
    if not isinstance(label, str) or not label.strip():
        raise ValidationError("a checkpoint needs a non-empty label")
    sight = _check(graph, "read", "checkpoint.read", label)
    store = workspace_of(graph).store
    scope = _scope(graph)
    with store.transaction():  # one consistent read
        counter = store.change_counter()
        nodes = store.find_nodes(namespace=scope, order="none", with_content=False)
        edges = store.edges(namespace=scope)
    if sight is not None:
        nodes = [n for n in nodes if sight.node(n)]
        kept = {n.id for n in nodes}
        edges = [e for e in edges if e.src in kept and e.dst in kept]
    node_map: dict[str, list[Any]] = {}
    decisions: dict[str, dict[str, Any]] = {}
    for n in nodes:
        if n.kind == NODE_KIND:
            continue
        node_map[n.id] = [n.kind, n.version, n.content_hash]
        if n.kind == DECISION:
            decisions[n.id] = {"version": n.version, "hash": n.content_hash,
                               "category": n.props.get("category", ""), "outcome": n.props.get("outcome", ""),
                               "scenario": n.props.get("scenario", n.title)}
    relationships = {e.id: {"source": e.src, "target": e.dst, "type": e.type, "weight": e.weight,
                            "hash": content_hash(e.weight, e.props, e.valid_from, e.valid_until)} for e in edges}
    return {"label": label, "at": utcnow(), "change_counter": counter,
            "scope": scope if isinstance(scope, str) else None, "namespace": namespace_of(graph),
            "decisions": decisions, "nodes": node_map, "relationships": relationships}


def summary(snap: dict[str, Any]) -> dict[str, Any]:
    return {"label": snap["label"], "at": snap["at"], "change_counter": snap["change_counter"],
            "decision_count": len(snap["decisions"]), "node_count": len(snap["nodes"]),
            "relationship_count": len(snap["relationships"])}


def _split(old: dict[str, Any], new: dict[str, Any], same: Any) -> tuple[list[str], list[str], list[str]]:
    added = sorted(k for k in new if k not in old)
    removed = sorted(k for k in old if k not in new)
    modified = sorted(k for k in new if k in old and not same(old[k], new[k]))
    return added, removed, modified


def diff_snapshots(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What changed from snapshot ``a`` to snapshot ``b``."""
    d_add, d_rem, d_mod = _split(a["decisions"], b["decisions"], lambda x, y: x["hash"] == y["hash"])
    r_add, r_rem, r_mod = _split(a["relationships"], b["relationships"], lambda x, y: x["hash"] == y["hash"])
    n_add, n_rem, n_mod = _split(a["nodes"], b["nodes"], lambda x, y: x[2] == y[2] and x[0] == y[0])

    def dec(snap: dict[str, Any], did: str) -> dict[str, Any]:
        row = snap["decisions"][did]
        return {"decision_id": did, "category": row["category"], "outcome": row["outcome"],
                "scenario": row["scenario"], "version": row["version"]}

    def rel(snap: dict[str, Any], rid: str) -> dict[str, Any]:
        row = snap["relationships"][rid]
        return {"id": rid, "source": row["source"], "target": row["target"], "type": row["type"],
                "weight": row["weight"]}

    out = {
        "from": a["label"], "to": b["label"], "from_at": a["at"], "to_at": b["at"],
        "decisions_added": [dec(b, i) for i in d_add],
        "decisions_removed": [dec(a, i) for i in d_rem],
        "decisions_modified": [{**dec(b, i), "previous": dec(a, i)} for i in d_mod],
        "relationships_added": [rel(b, i) for i in r_add],
        "relationships_removed": [rel(a, i) for i in r_rem],
        "relationships_modified": [{**rel(b, i), "previous": rel(a, i)} for i in r_mod],
        "nodes_added": n_add, "nodes_removed": n_rem, "nodes_modified": n_mod,
    }
    out["summary"] = {k: len(v) for k, v in out.items() if isinstance(v, list)}
    return out


def scrub_snapshot(snap: dict[str, Any], ids: set[str]) -> bool:
    """Drop what ``snap`` holds about ``ids`` (nodes, decisions, relationships touching them); True if it changed."""
    before = (len(snap["nodes"]), len(snap["decisions"]), len(snap["relationships"]))
    snap["nodes"] = {k: v for k, v in snap["nodes"].items() if k not in ids}
    snap["decisions"] = {k: v for k, v in snap["decisions"].items() if k not in ids}
    snap["relationships"] = {k: v for k, v in snap["relationships"].items()
                             if v["source"] not in ids and v["target"] not in ids}
    return before != (len(snap["nodes"]), len(snap["decisions"]), len(snap["relationships"]))


def held_ids(snap: dict[str, Any]) -> list[str]:
    """Every record id a snapshot names: its nodes, decisions and the ends of its relationships."""
    rels = snap.get("relationships") or {}
    return list(dict.fromkeys([*(snap.get("nodes") or {}), *(snap.get("decisions") or {}),
                               *(x for r in rels.values() if isinstance(r, dict)
                                 for x in (r.get("source"), r.get("target")) if isinstance(x, str))]))


def without_erased(store: Any, snap: Any, also: Any = None) -> bool:
    """Drop from ``snap`` what it holds about records an erasure removed from ``store`` (``also``: a function giving
    the id a held id has in this store, when a load moves records to another namespace); True if it changed. What
    brings a snapshot into a store (a flush, a graph load, a read of a stored checkpoint) passes it through here."""
    if not isinstance(snap, dict) or not all(isinstance(snap.get(k, {}), dict)
                                             for k in ("nodes", "decisions", "relationships")):
        return False
    for key in ("nodes", "decisions", "relationships"):
        snap.setdefault(key, {})
    held = held_ids(snap)
    moved = {i: also(i) for i in held} if also is not None else {}
    gone = store.erased([*held, *moved.values()]) if held else set()
    gone |= {i for i, m in moved.items() if m in gone}
    return scrub_snapshot(snap, gone) if gone else False


_live: "weakref.WeakSet[Checkpoints]" = weakref.WeakSet()
_live_lock = threading.Lock()


def scrub(store: Any, ids: Iterable[str], actor: str = "") -> dict[str, int]:
    """Rewrite every checkpoint of ``store`` (held in this process, flushed records, checkpoint nodes) without
    what it holds about ``ids``; returns how many of each changed."""
    gone = set(ids)
    out = {"held": 0, "flushed": 0, "nodes": 0}
    if not gone:
        return out
    with _live_lock:
        holders = list(_live)
    for holder in holders:
        out["held"] += holder.scrub_held(store, gone)
    with store.transaction():
        for label, snap in store.list_records(RECORD_KIND):
            if scrub_snapshot(snap, gone):
                store.put_record(RECORD_KIND, label, snap, actor=actor)
                out["flushed"] += 1
        changed, history = [], []
        for node in store.find_nodes(kind=NODE_KIND):
            snap = (node.props or {}).get("snapshot")
            if isinstance(snap, dict) and scrub_snapshot(snap, gone):
                changed.append(node)
            elif any(_names(v, gone) for v in store.node_versions(node.id)):  # only an older version held them
                history.append(node.id)
        if changed:
            store.put_nodes(changed, actor=actor)
        if changed or history:
            store.purge_history([*(n.id for n in changed), *history], actor=actor)
        # a checkpoint node retracted before the erasure keeps its snapshots in its history: it goes whole
        withdrawn = [i for i in store.node_ids(include_retracted=True) if i.startswith(node_id(""))]
        held = [n.id for n in store.get_nodes(withdrawn, include_retracted=True).values()
                if n.kind == NODE_KIND and n.retracted_at is not None
                and any(_names(v, gone) for v in [n, *store.node_versions(n.id)])]
        if held:
            store.purge_nodes(held, reason="erasure: a retracted checkpoint held erased records", actor=actor)
        out["nodes"] = len(changed) + len(history) + len(held)
    return out


def _names(node: Any, gone: set[str]) -> bool:
    """Whether a version of a checkpoint node holds a snapshot naming one of ``gone``."""
    snap = (node.props or {}).get("snapshot")
    return isinstance(snap, dict) and bool(gone.intersection(held_ids(snap)))


class Checkpoints:
    """Snapshots held in memory until flushed; flushed ones are read back from the store."""

    def __init__(self) -> None:
        self._held: dict[str, dict[str, Any]] = {}
        self._stores: dict[str, Any] = {}  # label -> the store its snapshot was taken from (weakly)
        with _live_lock:
            _live.add(self)

    def take(self, graph: Any, label: str) -> dict[str, Any]:
        snap = take_snapshot(graph, label)
        self._held[label] = snap
        self._stores[label] = weakref.ref(workspace_of(graph).store)
        return summary(snap)

    def scrub_held(self, store: Any, ids: set[str]) -> int:
        """Drop what the snapshots taken from ``store`` hold about ``ids``; returns how many changed."""
        changed = 0
        for label, snap in list(self._held.items()):
            ref = self._stores.get(label)
            if ref is not None and ref() is store and scrub_snapshot(snap, ids):
                changed += 1
        return changed

    def get(self, graph: Any, label: str) -> dict[str, Any]:
        sight = _check(graph, "read", "checkpoint.read", label)
        snap = self._get(graph, label)
        if sight is not None and not sight.namespace(_namespace_of(snap)):
            raise NotFoundError(f"no checkpoint {label!r}; take it with checkpoint({label!r}) first", label=label,
                                known=self.labels(graph))
        return snap

    def _get(self, graph: Any, label: str) -> dict[str, Any]:
        snap = self._held.get(label)
        store = workspace_of(graph).store
        if snap is None:
            snap = store.get_record(RECORD_KIND, label)
        if snap is None:  # e.g. the graph came back from save/load, which carries nodes, not records
            node = store.get_node(node_id(label))
            snap = node.props.get("snapshot") if node is not None and node.kind == NODE_KIND else None
        if snap is None:
            raise NotFoundError(f"no checkpoint {label!r}; take it with checkpoint({label!r}) first", label=label,
                                known=self.labels(graph))
        without_erased(store, snap)  # one older than an erasure (a load, a restore, another process's erasure of a
        # snapshot held here) answers without what it removed
        return snap

    def diff(self, graph: Any, a: str, b: str) -> dict[str, Any]:
        return diff_snapshots(self.get(graph, a), self.get(graph, b))

    def flush(self, graph: Any, label: str) -> dict[str, Any]:
        _check(graph, "write", "checkpoint.flush", label)
        access.require_whole_view(workspace_of(graph), principal_of(graph), "checkpoint.flush",
                                  label, "a checkpoint label", "take it (held in this process) and "
                                  "ask a principal who reads everything to store it")
        snap = self.get(graph, label)
        store = workspace_of(graph).store
        without_erased(store, snap)  # taken before an erasure, flushed after it: not brought back
        ws, principal = workspace_of(graph), principal_of(graph)
        who = access.effective_principal(ws, principal)
        with store.transaction():
            store.put_record(RECORD_KIND, label, snap, actor=who)
            store.put_nodes([Node(id=node_id(label), kind=NODE_KIND, namespace=namespace_of(graph), key=label,
                                  title=f"checkpoint {label}", summary=f"taken {snap['at']}",
                                  props={"label": label, "at": snap["at"], "snapshot": snap})], actor=who)
            access.record(ws, principal, "checkpoint.flush", f"{namespace_of(graph)}/{label}",
                          {"nodes": len(snap["nodes"])})
        return summary(snap)

    def keep(self, graph: Any, label: str) -> dict[str, Any]:
        """Take a snapshot and store it at once (what ``agentcontext checkpoint take`` does): needs write."""
        _check(graph, "write", "checkpoint.flush", label)
        self.take(graph, label)
        return self.flush(graph, label)  # refuses a principal who may not choose a label (before storing)

    def labels(self, graph: Any) -> list[str]:
        sight = _check(graph, "read", "checkpoint.read")
        store = workspace_of(graph).store
        stored = {k for k, snap in store.list_records(RECORD_KIND)
                  if sight is None or sight.namespace(_namespace_of(snap))}
        stored |= {n.key for n in store.find_nodes(namespace=_scope(graph), kind=NODE_KIND, with_content=False)
                   if sight is None or sight.node(n)}
        return sorted(stored | set(self._held))
