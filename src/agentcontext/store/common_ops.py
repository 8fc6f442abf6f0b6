"""What both SQL backends run with the same SQL (a mixin of each store): tombstone and id reads, records,
the audit log and the change log.

Queries are written with ``?`` placeholders; a backend whose driver wants another style sets
``PLACEHOLDER`` (Postgres: ``%s``).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from ..errors import ValidationError
from ..model import Change, Node
from .base import Adjacency
from .rows import NODE_COLS, NODE_ORDERS, Where, as_list, row_to_node


class CommonOps:
    """Provided by the store: ``_db`` (with ``execute(sql, params).rowcount``), ``transaction``, ``_now``,
    ``_read``, ``_log``, ``_where()`` (its WHERE builder), ``_node_where`` and ``_select_nodes``."""

    PLACEHOLDER = "?"
    _db: Any
    transaction: Callable[[], Any]
    _now: Callable[[], str]
    _read: Callable[..., list[tuple]]
    _log: Callable[..., None]
    _where: Callable[[], Where]
    _node_where: Callable[..., Where]
    _select_nodes: Callable[..., list[Node]]

    def _q(self, sql: str) -> str:
        return sql if self.PLACEHOLDER == "?" else sql.replace("?", self.PLACEHOLDER)

    # --- nodes and edges: the queries both backends phrase alike -------------------------
    def find_nodes(self, namespace=None, kind=None, key_prefix=None, keys=None, tags=None, valid_at=None,
                   as_of=None, order="key", offset=0, limit=None, with_content=True) -> list[Node]:
        where = self._node_where(namespace, kind, key_prefix, keys, tags, valid_at, as_of)
        if as_of is None:
            where.add("n.retracted_at IS NULL")
        order_sql = NODE_ORDERS.get(order)
        if order_sql is None:
            raise ValidationError(f"unknown order {order!r}; use key, recorded, recorded_desc, id or none")
        return self._select_nodes(where, as_of, with_content, order_sql, limit, offset)

    def count_nodes(self, namespace=None, kind=None) -> int:
        where = self._node_where(namespace, kind, None, None, None, None)
        where.add("n.retracted_at IS NULL")
        return self._read(f"SELECT count(*) FROM nodes n{where.sql()}", where.params)[0][0]

    def count_by_kind(self, namespace=None) -> dict[str, int]:
        where = self._node_where(namespace, None, None, None, None, None)
        where.add("n.retracted_at IS NULL")
        return dict(self._read(f"SELECT kind, count(*) FROM nodes n{where.sql()} GROUP BY kind", where.params))

    def node_versions(self, id: str) -> list[Node]:
        rows = self._read(self._q(f"SELECT {NODE_COLS} FROM node_versions WHERE id = ? ORDER BY version"), (id,))
        return [row_to_node(r) for r in rows]

    def node_version(self, id: str, version: int) -> Node | None:
        rows = self._read(self._q(f"SELECT {NODE_COLS} FROM node_versions WHERE id = ? AND version = ?"),
                          (id, version))
        return row_to_node(rows[0]) if rows else None

    def _edge_where(self, src, dst, type, namespace, as_of, valid_at, min_weight) -> Where:
        where = self._where()
        where.eq_any("src", as_list(src))
        where.eq_any("dst", as_list(dst))
        where.eq_any("type", as_list(type))
        where.eq_any("namespace", as_list(namespace))
        if as_of is None:
            where.add("retracted_at IS NULL")
        else:
            where.add(self._q("recorded_at <= ? AND (retracted_at IS NULL OR retracted_at > ?)"), as_of, as_of)
        if valid_at:
            where.add(self._q("(valid_from IS NULL OR valid_from <= ?) AND (valid_until IS NULL OR valid_until > ?)"),
                      valid_at, valid_at)
        if min_weight is not None:
            where.add(self._q("weight >= ?"), min_weight)
        return where

    def count_edges(self, namespace=None, type=None) -> int:
        where = self._edge_where(None, None, type, namespace, None, None, None)
        return self._read(f"SELECT count(*) FROM edges{where.sql()}", where.params)[0][0]

    def count_edges_by_type(self, namespace=None) -> dict[str, int]:
        where = self._edge_where(None, None, None, namespace, None, None, None)
        return dict(self._read(f"SELECT type, count(*) FROM edges{where.sql()} GROUP BY type", where.params))

    def adjacency(self, namespace=None, types=None, as_of=None, valid_at=None) -> Adjacency:
        where = self._edge_where(None, None, types, namespace, as_of, valid_at, None)
        return self._read(f"SELECT src, dst, type, weight, position FROM edges{where.sql()} "
                          "ORDER BY src, position, dst", where.params)

    # --- tombstones, namespaces, ids -------------------------------------------------------
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
