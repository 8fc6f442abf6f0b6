"""``Part``: one role of a ``SQLStore`` (its nodes, edges, vectors, records, erasure), over the store's one
connection and dialect.

``SQLStore`` is composed of parts (``sql_nodes.Nodes``, ``sql_edges.Edges``, ``sql_vectors.Vectors``,
``sql_records.Records``, ``sql_erasure.Erasure``; the copies are ``transfer.py``, the shared reads
``sql_reads.py``): each holds the store and reaches its connection, transaction and dialect hooks under the
names the store's own methods use (``self._db``, ``self._q``, ``self.transaction()``, ``self._unindex`` ...),
so a method moves between the store and a part unchanged. Each name is looked up on the store when it is used:
a backend's override, a reconnection or a test's spy is seen at once. The store keeps its public methods (the
protocol, ``base.Store``), each one line handing the call to its part.

The SQL every part shares is here too: the change-log and tombstone statements.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..model import Node
from .rows import Where

CHANGE_COLS = "at, actor, op, target, namespace, detail"
CHANGE_INSERT = f"INSERT INTO changes({CHANGE_COLS}) VALUES (?,?,?,?,?,?)"
TOMBSTONE_UPSERT = (  # an erasure's mark survives a later purge of the same id (e.g. graph.clear)
    "INSERT INTO tombstones(id, namespace, kind, purged_at, reason, actor, erasure) VALUES (?,?,?,?,?,?,?) "
    "ON CONFLICT ({key}) DO UPDATE SET {namespace}kind = excluded.kind, "
    "purged_at = excluded.purged_at, reason = excluded.reason, actor = excluded.actor, "
    "erasure = coalesce(excluded.erasure, tombstones.erasure)")


def tombstone_upsert(key: str) -> str:
    """TOMBSTONE_UPSERT for a table keyed by ``key`` (a key holding the namespace never updates it: Citus refuses
    an update of the distribution column)."""
    return TOMBSTONE_UPSERT.format(key=key, namespace="" if "namespace" in key else "namespace = excluded.namespace, ")


class Part:
    """A role of ``store``: its connection, transactions and dialect, reached under the store's own names."""

    __slots__ = ("store",)

    def __init__(self, store: Any) -> None:
        self.store = store  # the SQLStore holding this part (Any, as sql_reads.py takes it: naming the class here,
        # even for typing alone, would make sql_base -> part -> sql_base a circle of imports)

    # --- the connection and the store's state ----------------------------------------------------
    @property
    def _db(self) -> Any:
        return self.store._db

    @property
    def VERSIONS(self) -> str:  # noqa: N802 (the store's constant, read under its own name)
        return self.store.VERSIONS

    @property
    def NODE_READ(self) -> str:  # noqa: N802
        return self.store.NODE_READ

    @property
    def CHANGE_AT(self) -> str:  # noqa: N802 (PostgreSQL's schema 17: the time's text from a timestamp, pg_changes)
        return self.store.CHANGE_AT

    @property
    def RECORDED_AT(self) -> str:  # noqa: N802 (PostgreSQL's schema 18: a node's time's text, pg_recorded)
        return self.store.RECORDED_AT

    @property
    def RECORDED_SET(self) -> str:  # noqa: N802
        return self.store.RECORDED_SET

    def _recorded_params(self, at: str | None) -> list[Any]:
        return self.store._recorded_params(at)

    @property
    def CHANGE_OP(self) -> str:  # noqa: N802 (PostgreSQL's schema 18: the op's name from an id, pg_changes)
        return self.store.CHANGE_OP

    @property
    def PROPS_READ(self) -> str:  # noqa: N802
        return self.store.PROPS_READ

    @property
    def CURRENT_IN_VERSIONS(self) -> bool:  # noqa: N802
        return self.store.CURRENT_IN_VERSIONS

    @property
    def TOMBSTONE_KEY(self) -> str:  # noqa: N802
        return self.store.TOMBSTONE_KEY

    @property
    def NO_NAMESPACE(self) -> str | None:  # noqa: N802
        return self.store.NO_NAMESPACE

    def transaction(self) -> AbstractContextManager[None]:
        return self.store.transaction()

    def _now(self) -> str:
        return self.store._now()

    # --- plumbing --------------------------------------------------------------------------------
    def _q(self, sql: str) -> str:
        return self.store._q(sql)

    def _chunks(self, items: Sequence[Any], per_statement: int = 1) -> Iterator[Sequence[Any]]:
        return self.store._chunks(items, per_statement)

    def _in(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return self.store._in(column, values)

    def _tenant_rows(self, ids: Sequence[Any], namespaces: Sequence[str], column: str = "id") -> tuple[str, list[Any]]:
        return self.store._tenant_rows(ids, namespaces, column)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.store._read(sql, params)

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.store._exec(sql, params)

    def _execmany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.store._execmany(sql, rows)

    def _bulk_insert(self, table: str, cols: str, rows: Sequence[Sequence[Any]]) -> None:
        self.store._bulk_insert(table, cols, rows)

    def _log(self, at: str, actor: str, op: str, target: str, namespace: str = "", detail: dict | None = None) -> None:
        self.store._log(at, actor, op, target, namespace, detail)

    def _insert_changes(self, rows: Sequence[Sequence[Any]]) -> None:
        self.store._insert_changes(rows)

    def _refuse_new(self, ids: Sequence[Any], what: str) -> None:
        self.store._refuse_new(ids, what)

    # --- the dialect -----------------------------------------------------------------------------
    def _where(self) -> Where:
        return self.store._where()

    def _hash_in(self, column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
        return self.store._hash_in(column, hashes)

    def _check_text(self, nodes: Sequence[Node]) -> None:
        self.store._check_text(nodes)

    def _write_nodes(self, changed: list[tuple[Node, tuple | None, str]], existing: dict[str, tuple]) -> None:
        self.store._write_nodes(changed, existing)

    def _unindex(self, rids: Sequence[int], purge: bool) -> None:
        self.store._unindex(rids, purge)

    def _props_hold(self, where: Where, path: list[str], value: str) -> None:
        self.store._props_hold(where, path, value)

    def _vectors_unused(self) -> str:
        return self.store._vectors_unused()

    def _vector_value(self, vector: np.ndarray) -> Any:
        return self.store._vector_value(vector)

    def _upsert_vectors(self, rows: list[tuple]) -> None:
        self.store._upsert_vectors(rows)

    # --- the store's own reads a role's write builds on -------------------------------------------
    def get_nodes(self, ids: Iterable[str], as_of: str | None = None,
                  include_retracted: bool = False) -> dict[str, Node]:
        return self.store.get_nodes(ids, as_of, include_retracted)
