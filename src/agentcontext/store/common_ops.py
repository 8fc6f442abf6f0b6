"""What both SQL backends run with the same SQL (a mixin of each store): tombstone and id reads, records,
the audit log and the change log.

Queries are written with ``?`` placeholders; a backend whose driver wants another style sets
``PLACEHOLDER`` (Postgres: ``%s``).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from ..model import Change
from .rows import Where, as_list


class CommonOps:
    """Provided by the store: ``_db`` (with ``execute(sql, params).rowcount``), ``transaction``, ``_now``,
    ``_read``, ``_log``, ``_where()`` (its WHERE builder) and ``_edge_where``."""

    PLACEHOLDER = "?"
    _db: Any
    transaction: Callable[[], Any]
    _now: Callable[[], str]
    _read: Callable[..., list[tuple]]
    _log: Callable[..., None]
    _where: Callable[[], Where]
    _edge_where: Callable[..., Where]

    def _q(self, sql: str) -> str:
        return sql if self.PLACEHOLDER == "?" else sql.replace("?", self.PLACEHOLDER)

    def tombstone(self, id: str) -> dict[str, Any] | None:
        found = self.tombstones(ids=[id])
        return found[0] if found else None

    def tombstones(self, namespace: str | None = None, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        where = self._where()
        where.eq_any("namespace", as_list(namespace))
        where.eq_any("id", as_list(ids))
        rows = self._read(f"SELECT id, namespace, kind, purged_at, reason, actor FROM tombstones{where.sql()} "
                          "ORDER BY purged_at, id", where.params)
        return [{"id": r[0], "namespace": r[1], "kind": r[2], "purged_at": r[3], "reason": r[4], "actor": r[5]}
                for r in rows]

    def namespaces(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT DISTINCT namespace FROM nodes WHERE retracted_at IS NULL ORDER BY namespace")]

    def node_ids(self, namespace=None, include_retracted: bool = False) -> list[str]:
        """Ids of the nodes in ``namespace`` (active only unless ``include_retracted``), in insertion order."""
        where = self._where()
        where.eq_any("namespace", as_list(namespace))
        if not include_retracted:
            where.add("retracted_at IS NULL")
        return [r[0] for r in self._read(f"SELECT id FROM nodes{where.sql()} ORDER BY rid", where.params)]

    def timed_edges(self, namespace=None) -> list[tuple[str, str, str, str | None, str | None]]:
        """(src, dst, type, valid_from, valid_until) of active edges that carry a validity bound."""
        where = self._edge_where(None, None, None, namespace, None, None, None)
        where.add("(valid_from IS NOT NULL OR valid_until IS NOT NULL)")
        return self._read(f"SELECT src, dst, type, valid_from, valid_until FROM edges{where.sql()}", where.params)

    def put_record(self, kind: str, key: str, value: dict[str, Any], actor: str = "") -> None:
        at = self._now()
        with self.transaction():
            self._db.execute(self._q(
                "INSERT INTO records(kind, key, value, updated_at) VALUES (?,?,?,?) ON CONFLICT (kind, key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"),
                (kind, key, json.dumps(value, sort_keys=True, default=str), at))
            self._log(at, actor, "record.put", f"{kind}/{key}")

    def get_record(self, kind: str, key: str) -> dict[str, Any] | None:
        rows = self._read(self._q("SELECT value FROM records WHERE kind = ? AND key = ?"), (kind, key))
        return json.loads(rows[0][0]) if rows else None

    def list_records(self, kind: str, prefix: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        if prefix:
            rows = self._read(self._q("SELECT key, value FROM records WHERE kind = ? AND key >= ? AND key < ? "
                                      "ORDER BY key"), (kind, prefix, prefix + "\U0010ffff"))
        else:
            rows = self._read(self._q("SELECT key, value FROM records WHERE kind = ? ORDER BY key"), (kind,))
        return [(k, json.loads(v)) for k, v in rows]

    def delete_record(self, kind: str, key: str, actor: str = "") -> bool:
        at = self._now()
        with self.transaction():
            n = self._db.execute(self._q("DELETE FROM records WHERE kind = ? AND key = ?"), (kind, key)).rowcount
            if n:
                self._log(at, actor, "record.delete", f"{kind}/{key}")
        return bool(n)

    def append_audit(self, principal: str, action: str, target: str, outcome: str,
                     detail: dict | None = None) -> None:
        with self.transaction():
            self._db.execute(
                self._q("INSERT INTO audit(at, principal, action, target, outcome, detail) VALUES (?,?,?,?,?,?)"),
                (self._now(), principal, action, target, outcome, json.dumps(detail or {}, default=str)))

    def audit(self, principal: str | None = None, since: str | None = None, limit: int | None = None) -> list[dict]:
        where = self._where()
        if principal:
            where.add(self._q("principal = ?"), principal)
        if since:
            where.add(self._q("at >= ?"), since)
        inner = f"SELECT seq, at, principal, action, target, outcome, detail FROM audit{where.sql()}"
        if limit:  # the latest ``limit`` entries, oldest first
            inner = f"SELECT * FROM ({inner} ORDER BY seq DESC LIMIT {int(limit)}) latest"
        rows = self._read(f"{inner} ORDER BY seq", where.params)
        return [{"seq": r[0], "at": r[1], "principal": r[2], "action": r[3], "target": r[4], "outcome": r[5],
                 "detail": json.loads(r[6])} for r in rows]

    def change_counter(self) -> int:
        return self._read("SELECT coalesce(max(seq), 0) FROM changes")[0][0]

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        page = f" LIMIT {int(limit)}" if limit else ""
        rows = self._read(self._q(f"SELECT seq, at, actor, op, target, namespace, detail FROM changes WHERE seq > ? "
                                  f"ORDER BY seq{page}"), (seq,))
        return [Change(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]
