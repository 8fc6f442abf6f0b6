"""The writes of a sharded store (``pg_shards.ShardedStore``): each record to its tenant's shard, a write by id to
every shard that may hold the id, records and the audit log to the directory shard (see the module doc there)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ShardUnavailableError
from ..model import Edge, Node, reserved_namespace
from . import pg_hash
from .rows import check_text_fields


def _add(totals: dict[str, int], part: dict[str, int]) -> dict[str, int]:
    for key, value in part.items():
        totals[key] = totals.get(key, 0) + value
    return totals


class ShardWrites:
    """Mixin: every write of the store protocol."""

    on: Any
    by_ids: Any
    names: list[str]
    transaction: Any
    _by_tenant: Any
    _each: Any
    _tenants_of: Any
    hold: Any
    _fan: Any

    def put_nodes(self, nodes: Sequence[Node], actor: str = "", at: str | None = None) -> list[int]:
        if len({n.id for n in nodes}) != len(nodes):
            from ..errors import ValidationError

            raise ValidationError("put_nodes got the same id twice in one call; merge them first")
        for node in nodes:  # before a namespace picks a shard
            check_text_fields(node)
        versions: dict[str, int] = {}
        with self.transaction():
            groups = self._by_tenant(list(nodes), lambda n: n.namespace)
            self._refuse_elsewhere(groups)
            for name, part in groups.items():
                got = self.on(name, lambda s, p=part: s.put_nodes(p, actor, at), write=True)
                versions.update({n.id: v for n, v in zip(part, got)})
        return [versions[n.id] for n in nodes]

    def _refuse_elsewhere(self, groups: dict[str, list[Node]]) -> None:
        """A node never changes namespace (``rows.plan_versions``): an id already held by a record on another shard
        (so of another namespace) is a ConflictError, as on one server. Ids reserved for their namespace
        (``lib:x/...``) can only be on its shard and are not looked for. One round trip to the other shards, at
        once; not caught: two writers racing to make the same new id on two shards, and an id held on a shard that
        is down."""
        if len(self.names) < 2:
            return
        wanted = {name: [n.id for n in part if reserved_namespace(n.id) is None] for name, part in groups.items()}
        ids = sorted({i for part in wanted.values() for i in part})
        if not ids:
            return
        sql = "SELECT id, namespace FROM nodes WHERE id = ANY(%s)"
        others = [name for name in self.names if any(home != name for home in wanted)]
        found = self._fan([(name, lambda s: s._read_primary(sql, (ids,))) for name in others], up_only=True)
        for name, rows in zip(others, found):
            for id, namespace in rows or ():  # a shard that is down cannot be asked: its tenants' writes fail anyway
                for home, part in wanted.items():
                    if home != name and id in part:
                        from ..errors import ConflictError

                        raise ConflictError(f"id {id!r} already names a record of another namespace ({namespace}, "
                                            f"on shard {name}); a record of another namespace cannot take it: "
                                            "choose another id", id=id, namespace=namespace, shard=name)

    def retract_nodes(self, ids: Sequence[str], actor: str = "", at: str | None = None, edges: str = "both") -> int:
        with self.transaction():
            self.hold(self._tenants_of(ids))
            return sum(self.by_ids(list(ids), lambda s, chunk: s.retract_nodes(chunk, actor, at, edges), write=True))

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "", at: str | None = None,
                    erasure: str | None = None) -> dict[str, int]:
        """Purged on the shards holding them; the copies of their vectors that no node uses any more go from every
        shard (a vector is kept on each: an erased text leaves none behind)."""
        totals = {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0}
        with self.transaction():
            self.hold(self._tenants_of(ids))
            hashes = self._hashes_of(ids, live=True)
            for part in self.by_ids(list(ids), lambda s, chunk: s.purge_nodes(chunk, reason, actor, at, erasure),
                                    write=True):
                _add(totals, part)
            self._drop_unused(hashes)
        return totals

    def _hashes_of(self, ids: Sequence[str], live: bool) -> list[str]:
        """The text hashes every version of these nodes uses (``live``: the current version's too)."""
        sql = "SELECT embed_hash FROM node_versions WHERE id = ANY(%s) AND embed_hash IS NOT NULL"
        if live:
            sql += " UNION SELECT embed_hash FROM nodes WHERE id = ANY(%s) AND embed_hash IS NOT NULL"
        found = self.by_ids(list(ids), lambda s, chunk: s._read_primary(sql, (chunk, chunk) if live else (chunk,)))
        return sorted({pg_hash.text(r[0]) for rows in found for r in rows})  # bytes on schema 13

    def _drop_unused(self, hashes: Sequence[str]) -> None:
        if hashes:
            self._each(lambda s: s._exec(f"DELETE FROM vectors WHERE hash = ANY(%s) AND {s._vectors_unused()}",
                                         (pg_hash.params(hashes, s._hb),)), write=True)

    def put_tombstones(self, rows: Sequence[dict[str, Any]]) -> int:
        with self.transaction():
            return sum(self.on(name, lambda s, p=part: s.put_tombstones(p), write=True)
                       for name, part in self._by_tenant(list(rows), lambda r: r.get("namespace") or "").items())

    def purge_history(self, ids: Sequence[str], actor: str = "") -> dict[str, int]:
        totals: dict[str, int] = {}
        with self.transaction():
            self.hold(self._tenants_of(ids))
            hashes = self._hashes_of(ids, live=False)
            for part in self.by_ids(list(ids), lambda s, chunk: s.purge_history(chunk, actor), write=True):
                _add(totals, part)
            self._drop_unused(hashes)
        return totals

    def scrub(self, tables: Sequence[str] | None = None, strict: bool = True) -> dict[str, Any]:
        """Every shard scrubbed; the status is the worst of theirs, and what may remain is said shard by shard."""
        parts = {name: self.on(name, lambda s: s.scrub(tables, strict), write=True) for name in self.names}
        first = parts[self.names[0]]
        rank = ["clean", "deferred", "incomplete"]
        status = max((p.get("status", "clean") for p in parts.values()), key=lambda v: rank.index(v) if v in rank
                     else len(rank))
        remain = [f"on shard {name}: {item}" for name, p in parts.items() for item in p.get("may_remain", [])]
        return {**first, "status": status, "may_remain": remain, "shards": parts}

    def forget_statistics(self, tables: Sequence[str] | None = None) -> dict[str, Any]:
        """Every shard's planner statistics (PostgresStore.forget_statistics); what may remain, shard by shard."""
        parts = {name: self.on(name, lambda s: s.forget_statistics(tables), write=True) for name in self.names}
        return {"statistics": "; ".join(f"{name}: {p['statistics']}" for name, p in parts.items()),
                "may_remain": [f"on shard {name}: {item}" for name, p in parts.items() for item in p["may_remain"]],
                "held": any(p.get("held") for p in parts.values())}

    # --- edges ---------------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        with self.transaction():
            return sum(self.on(name, lambda s, p=part: s.put_edges(p, actor, at), write=True)
                       for name, part in self._by_tenant(list(edges), lambda e: e.namespace).items())

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int:
        with self.transaction():
            self.hold(self._tenants_of(ids, "edges", "eid"))
            return sum(self._each(lambda s: s.retract_edges(ids, actor, at), write=True))

    # --- vectors: keyed by text hash, a copy on every shard (Citus: a reference table) ----------------------
    def fold(self, chunk: int = 500, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Every shard's delta folded into its HNSW indexes (store/pg_delta.py), one shard after another."""
        parts = {name: self.on(name, lambda s: s.fold(chunk, progress), write=True) for name in self.names}
        return {"folded": sum(p["folded"] for p in parts.values()), "chunks": sum(p["chunks"] for p in parts.values()),
                "pending": sum(p["pending"] for p in parts.values()),
                "seconds": round(sum(p["seconds"] for p in parts.values()), 3), "shards": parts}

    def pending_vectors(self) -> int:
        return sum(self.on(name, lambda s: s.pending_vectors()) for name in self.names)

    def pack(self) -> dict[str, Any]:
        """Every shard's context vectors written since held as int8 (store/pg_q8.py), one shard after another."""
        parts = {name: self.on(name, lambda s: s.pack(), write=True) for name in self.names}
        return {"packed": sum(p["packed"] for p in parts.values()),
                "seconds": round(sum(p["seconds"] for p in parts.values()), 3), "shards": parts}

    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int:
        """On the directory shard (checked and logged there), then a copy on every other shard that answers (one
        that does not lists its nodes' vectors as missing when it is back)."""
        with self.transaction():
            count = self.on(self.names[0], lambda s: s.put_vectors(vectors, model), write=True)
            for name in self.names[1:]:
                try:
                    self.on(name, lambda s: s._upsert_vectors([
                        (h, model, int(np.asarray(v).shape[0]), s._vector_value(np.asarray(v, dtype=np.float32)))
                        for h, v in vectors.items()]), write=True)
                except ShardUnavailableError:
                    continue
        return count

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        """From every shard (a shard that is down is an error: its copy would outlive the delete)."""
        with self.transaction():
            count = self.on(self.names[0], lambda s: s.delete_vectors(hashes), write=True)
            for name in self.names[1:]:
                self.on(name, lambda s: s._exec("DELETE FROM vectors WHERE hash = ANY(%s)",
                                                (pg_hash.params(list(dict.fromkeys(hashes)), s._hb),)), write=True)
        return count

    # --- records and audit: the directory shard's ------------------------------------------------------
    def put_record(self, kind: str, key: str, value: dict[str, Any], actor: str = "") -> None:
        self.on(self.names[0], lambda s: s.put_record(kind, key, value, actor), write=True)

    def put_records(self, kind: str, values: dict[str, dict[str, Any]], actor: str = "") -> None:
        self.on(self.names[0], lambda s: s.put_records(kind, values, actor), write=True)

    def delete_record(self, kind: str, key: str, actor: str = "") -> bool:
        return self.on(self.names[0], lambda s: s.delete_record(kind, key, actor), write=True)

    def append_audit(self, principal: str, action: str, target: str, outcome: str,
                     detail: dict | None = None) -> None:
        self.on(self.names[0], lambda s: s.append_audit(principal, action, target, outcome, detail), write=True)

    def redact_audit(self, targets: Sequence[str], note: dict[str, Any]) -> int:
        return self.on(self.names[0], lambda s: s.redact_audit(targets, note), write=True)

    def erase_records(self, kind: str, keys: Sequence[str], actor: str = "") -> int:
        return self.on(self.names[0], lambda s: s.erase_records(kind, keys, actor), write=True)
