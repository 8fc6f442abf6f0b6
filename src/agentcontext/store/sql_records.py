"""The records part of ``SQLStore`` (``sql_part.Part``): small keyed records, the audit log and the change log."""
from __future__ import annotations

import json
from typing import Any

from ..model import Change
from .sql_part import Part


class Records(Part):
    """Keyed records, the audit log (who did what) and the change log (what changed, in order)."""

    __slots__ = ()

    def put_records(self, kind: str, values: dict[str, dict[str, Any]], actor: str = "") -> None:
        at = self._now()
        with self.transaction():
            self._execmany(self._q(
                "INSERT INTO records(kind, key, value, updated_at) VALUES (?,?,?,?) ON CONFLICT (kind, key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"),
                [(kind, key, json.dumps(value, sort_keys=True, default=str), at) for key, value in values.items()])
            self._insert_changes([(at, actor, "record.put", f"{kind}/{key}", "", "{}") for key in values])

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
            n = self._exec(self._q("DELETE FROM records WHERE kind = ? AND key = ?"), (kind, key))
            if n:
                self._log(at, actor, "record.delete", f"{kind}/{key}")
        return bool(n)

    def append_audit(self, principal: str, action: str, target: str, outcome: str,
                     detail: dict | None = None) -> None:
        with self.transaction():
            self._exec(
                self._q("INSERT INTO audit(at, principal, action, target, outcome, detail) VALUES (?,?,?,?,?,?)"),
                (self._now(), principal, action, target, outcome, json.dumps(detail or {}, default=str)))

    def audit(self, principal: str | None = None, since: str | None = None, limit: int | None = None) -> list[dict]:
        where = self._where()
        if principal:
            where.add("principal = ?", principal)
        if since:
            where.add("at >= ?", since)
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
        rows = self._read(self._q(f"SELECT seq, {self.CHANGE_AT}, actor, {self.CHANGE_OP}, target, namespace, "
                                  f"detail FROM changes WHERE seq > ? ORDER BY seq{page}"), (seq,))
        return [Change(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]
