"""``SQLDialect``: one connection and its dialect, what a SQL backend supplies and every part of ``SQLStore`` speaks
through.

A backend (``SQLiteStore``, ``PostgresStore``) fills in the abstract hooks: how to connect, begin and commit, how
``column IN values`` is spelled (``Where``), how rows are written in bulk, the text index, the vector encoding, the
as-of view of the versions table and its sizes on disk; the constants say how its schema is laid out. The
plumbing below (``_q``, ``_chunks``, ``_in``, ``_page``, ``_read``, ``_exec``) is written once over them: shared SQL
uses ``?`` placeholders and ``_q`` turns them into the driver's (``%s`` for psycopg).
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np

from ..model import Node
from .rows import LIGHT_COLS, NODE_COLS, Where

T = TypeVar("T")


class SQLDialect(ABC):
    """One connection ``_db`` and the dialect spoken over it (the base of ``sql_base.SQLStore``)."""

    PLACEHOLDER = "?"
    EMBED_TEXT = "coalesce(n.embed_text, n.content)"  # a node's whole text to embed (rows.held_embed_text)
    CHUNK: int | None = None  # the most values one ``IN`` list may hold (None: arrays, no limit)
    NO_LIMIT = "ALL"  # what LIMIT says for "no limit" before an OFFSET
    EDGE_SCAN = ""  # a hint that makes the one-pass edge scan a table scan
    # How a vector row is found from a node (``n``) or a version (``w``) by hash: plain equality, unless the backend
    # indexes a short prefix of the random hashes (SQLite, migration 5)
    VECTOR_JOIN = "v.hash = n.embed_hash"
    NODES_WITH_VECTORS = "nodes n JOIN vectors v"  # what VECTOR_JOIN joins (SQLite: nodes first, CROSS JOIN)
    VERSION_USES = "w.embed_hash = vectors.hash"
    LIVE_USES = VERSION_USES  # the same question asked of the live rows (``w`` is a row of nodes)
    PAGE_SEEK: dict[str, str] = {}  # table: an indexed expression whose order leads its copy order (export pages)
    # Where every version of a node reads from, the current one included: node_versions holds them all, unless the
    # backend keeps only superseded versions there and the live row is the current one (SQLite, migration 6)
    VERSIONS = "node_versions"
    # a node row's columns as read (PostgreSQL's schema 16 gives its props back from columns: pg_props.read_sql)
    NODE_READ, LIGHT_READ, PROPS_READ = NODE_COLS, LIGHT_COLS, "props"
    # a live node's recorded time as its text, and the SET clause writing it with the params it takes for a text
    # (PostgreSQL's schema 18 holds a timestamp: pg_recorded)
    RECORDED_AT, RECORDED_SET = "recorded_at", "recorded_at = ?"
    # a page of a listing in recorded order sorted by the timestamp, its text rendered after the page (pg_recorded)
    TIMED_PAGES = False

    @staticmethod
    def _recorded_params(at: str | None) -> list[Any]:
        return [at]
    CURRENT_IN_VERSIONS = True
    LIKE_ANY_CASE = "ILIKE"  # a pattern match that folds case (SQLite's LIKE folds ASCII letters by itself)
    COPY_ARMS: dict[str, tuple[str, ...]] = {}  # table: the tables its copy reads, merged in page order
    # The tombstones' key (the upsert's ON CONFLICT target), and what a tombstone naming no namespace stores (PostgreSQL
    # keys them by (id, namespace) from its migration 7, so the namespace cannot be NULL there)
    TOMBSTONE_KEY = "id"
    NO_NAMESPACE: str | None = None
    _db: Any
    _lock: threading.RLock

    # --- the dialect ---------------------------------------------------------------------------
    @abstractmethod
    def _begin(self) -> None:
        """Open a write transaction holding this store's writer lock."""

    @abstractmethod
    def _commit(self) -> None: ...

    def _refused(self, exc: BaseException) -> Exception | None:
        """Our error for a write the server refused the connection's role (a table it may not write), or None."""
        return None

    @abstractmethod
    def _rollback(self) -> None: ...

    @abstractmethod
    def _guard(self, fn: Callable[[], T]) -> T:
        """Run a read (or a transaction's first statement) with the backend's retry on busy or lost connections."""

    @abstractmethod
    def _execmany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abstractmethod
    def _where(self) -> Where: ...

    @abstractmethod
    def _versions_as_of(self, cols: str, as_of: str) -> tuple[str, list[Any]]:
        """A SELECT of ``cols`` over each node's latest version recorded by ``as_of``, and its parameters."""

    @abstractmethod
    def _filter_tags(self, where: Where, tags: list[str], as_of: str | None) -> None:
        """Keep nodes holding every tag (those of the version row when ``as_of`` is given)."""

    @abstractmethod
    def _write_nodes(self, changed: list[tuple[Node, tuple | None, str]], existing: dict[str, tuple]) -> None:
        """Write planned nodes (``rows.plan_versions``): live rows, version rows and the text index."""

    @abstractmethod
    def text_search(self, query: str, namespace: str | Sequence[str] | None = None,
                    kind: str | Sequence[str] | None = None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None,
                    within: Sequence[str] | None = None) -> list[tuple[str, float]]: ...

    @abstractmethod
    def _vector_value(self, vector: np.ndarray) -> Any:
        """A float32 row as the driver stores it."""

    @abstractmethod
    def _decode_vectors(self, raws: Sequence[Any]) -> np.ndarray:
        """Stored values of one dimension as a float32 matrix."""

    @abstractmethod
    def _table_exists(self, name: str) -> bool: ...

    @abstractmethod
    def _sizes(self) -> dict[str, Any]:
        """Bytes on disk: ``total`` and by table."""

    def _physical_problems(self) -> list[str]:
        """What the backend's own check finds damaged (nothing, unless it has one)."""
        return []

    @abstractmethod
    def _check_text(self, nodes: Sequence[Node]) -> None:
        """Refuse text the backend cannot store."""

    @abstractmethod
    def _prop_in(self, where: Where, name: str, values: list[str]) -> None:
        """Keep nodes ``n`` whose ``props[name]`` is one of ``values`` (at most ``CHUNK`` of them)."""

    @abstractmethod
    def _props_hold(self, where: Where, path: list[str], value: str) -> None:
        """Keep nodes whose props hold ``value`` at ``path`` (equal, or an element of a list)."""

    @abstractmethod
    def _unindex(self, rids: Sequence[int], purge: bool) -> None:
        """Drop text-index (and, when purging, tag) rows the backend keeps beside the nodes."""

    def _hash_in(self, column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
        """``column IN hashes`` for a column of content hashes (at most ``CHUNK`` of them)."""
        return self._in(column, hashes)

    def _hash_sql(self, column: str) -> str:
        """A ``vectors.hash`` column as its text hash (PostgreSQL holds bytes: ``pg_hash``)."""
        return column

    def _hash_param(self) -> str:
        """A placeholder (``?``, before ``_q``) for a text hash compared with ``vectors.hash``."""
        return "?"

    def _vectors_unused(self) -> str:
        """A condition on a ``vectors`` row: no version of any node (the current ones included) uses its hash."""
        unused = f"NOT EXISTS (SELECT 1 FROM node_versions w WHERE {self.VERSION_USES})"
        if not self.CURRENT_IN_VERSIONS:
            unused += f" AND NOT EXISTS (SELECT 1 FROM nodes w WHERE {self.LIVE_USES})"
        return unused

    def _upsert_vectors(self, rows: list[tuple]) -> None:
        """Insert (hash, model, dim, vector) rows, replacing those of the same hash and model."""
        self._execmany(self._q("INSERT INTO vectors(hash, model, dim, vector) VALUES (?,?,?,?) ON CONFLICT "
                               "(hash, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector"), rows)

    def _bulk_insert(self, table: str, cols: str, rows: Sequence[Sequence[Any]]) -> None:
        marks = ",".join("?" * len(cols.split(",")))
        self._execmany(self._q(f"INSERT INTO {table}({cols}) VALUES ({marks})"), rows)

    def _vector_sql(self, alias: str = "") -> str:
        """A ``vectors`` row's values as SQL (``alias``: ``v.`` or empty); PostgreSQL rebuilds an int8 one."""
        return f"{alias}vector"

    def _vector_rows(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        """Rows with a vector column, read the fastest way the driver allows."""
        return self._read(sql, params)

    # --- plumbing ------------------------------------------------------------------------------
    def _q(self, sql: str) -> str:
        return sql if self.PLACEHOLDER == "?" else sql.replace("?", self.PLACEHOLDER)

    def _chunks(self, items: Sequence[Any], per_statement: int = 1) -> Iterator[Sequence[Any]]:
        """``items`` in slices one statement can take (``per_statement`` lists of them in one statement)."""
        if self.CHUNK is None:
            if items:
                yield items
            return
        size = self.CHUNK // per_statement
        for i in range(0, len(items), size):
            yield items[i: i + size]

    def _in(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        where = self._where()
        where.eq_any(column, list(values))
        return where.parts[0], where.params

    def _tenant_rows(self, ids: Sequence[Any], namespaces: Sequence[str], column: str = "id") -> tuple[str, list[Any]]:
        """``column IN ids AND namespace IN namespaces``: rows read before by id, named with their tenant as well (on
        Citus a statement naming the tenant goes to its shard alone)."""
        where = self._where()
        where.eq_any(column, list(ids))
        where.eq_any("namespace", sorted(set(namespaces)))
        return " AND ".join(where.parts), where.params

    def _page(self, limit: int | None, offset: int) -> str:
        if limit is not None:
            return f" LIMIT {int(limit)}" + (f" OFFSET {int(offset)}" if offset else "")
        return f" LIMIT {self.NO_LIMIT} OFFSET {int(offset)}" if offset else ""

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._guard(lambda: self._db.execute(sql, params).fetchall())

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._db.execute(sql, params).rowcount
