"""The scale-out store: PostgreSQL with pgvector (psycopg 3), same protocol and semantics as SQLiteStore.

``postgresql://user@host:port/db?schema=name`` keeps one workspace per schema (our ``schema`` parameter is
taken off the URL before connecting). Writers are serialised per schema by a transaction-scoped advisory
lock, like SQLite's ``BEGIN IMMEDIATE``, so the change log's sequence numbers commit in order and a reader
of ``changes_since`` never skips a row that commits later with a smaller number.

Needs the pgvector extension (created on first open if the role may; otherwise run ``CREATE EXTENSION vector``).
Differences from SQLite, all deliberate: only the first ``pg_sql.INDEXED_CHARS`` characters of a body are
text-searchable (a tsvector is capped at 1 MB); text cannot hold NUL characters (a ValidationError). Purged rows
are gone from every query at once, but their bytes stay in dead tuples and WAL until VACUUM and WAL recycling.
"""
from __future__ import annotations

import hashlib
import json
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from ..errors import StoreError, ValidationError
from ..model import Edge, Node, utcnow
from .pg_sql import SCHEMA, PgWhere, page, redact, split_url
from .rows import (EDGE_COLS, EXISTING_COLS, LIGHT_COLS, NODE_COLS, as_list, plan_versions, put_detail, row_to_edge,
                   row_to_node)
from .postgres_ops import EdgeVectorOps  # imports psycopg or names the missing extra

import psycopg  # noqa: E402,I001
from pgvector.psycopg import register_vector  # noqa: E402
from psycopg import sql as pgsql  # noqa: E402

_LOCK_CLASS = 0x61637478  # 'actx'
T = TypeVar("T")


class PostgresStore(EdgeVectorOps):
    """PostgreSQL store. One connection per instance (thread-safe by a lock); processes share the database."""

    def __init__(self, url: str, schema: str | None = None, timeout: float = 60.0) -> None:
        self.url = redact(url)  # shown by the CLI and in receipts: never the password
        conninfo, url_schema = split_url(url)
        self.schema = schema or url_schema
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_at = ""
        self._conninfo = conninfo
        self._timeout = timeout
        self._closed = False
        self._connect()
        db = self._db
        self._lock_key = int.from_bytes(
            hashlib.sha256((self.schema or db.execute("SELECT current_schema()").fetchone()[0]).encode()).digest()[:4],
            "big", signed=True)
        self._ensure_vector_extension()
        register_vector(db)
        with self.transaction():
            for statement in SCHEMA:
                db.execute(statement)

    def _connect(self) -> None:
        """Open the connection and set the session up (lock timeout, our schema first on the search path)."""
        try:
            db = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=int(self._timeout))
        except psycopg.Error as exc:
            safe = redact(self._conninfo)
            raise StoreError(f"cannot connect to the PostgreSQL store at {safe}: {exc}; check that the server "
                             "runs and the URL (user, host, port, database) is right", url=safe) from exc
        db.execute(f"SET lock_timeout = '{int(self._timeout * 1000)}ms'")
        if self.schema:
            with db.transaction():  # concurrent CREATE SCHEMA IF NOT EXISTS can still collide: serialise it
                db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_CLASS,))
                db.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pgsql.Identifier(self.schema)))
            db.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(self.schema)))
        self._db = db

    def _retrying(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (a read, or the first statement of a transaction); if the connection was lost (server
        restart, idle timeout, terminated backend) and no transaction is open, reconnect once and run it again."""
        try:
            return fn()
        except psycopg.OperationalError:
            if self._closed or self._depth or not (self._db.broken or self._db.closed):
                raise
        self._db.close()
        self._connect()
        register_vector(self._db)
        return fn()

    def _ensure_vector_extension(self) -> None:
        has = "SELECT 1 FROM pg_extension WHERE extname = 'vector'"
        if self._db.execute(has).fetchone():
            return
        try:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_CLASS,))
                self._db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise StoreError(f"the pgvector extension is missing and could not be created ({exc}); run "
                             "CREATE EXTENSION vector as a superuser in this database", url=self.url) from exc

    # --- lifecycle -------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._retrying(self._begin)
            self._tx_at = utcnow()  # one transaction, one moment: as_of sees all of it or none
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                if not (self._db.broken or self._db.closed):
                    self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            self._db.execute("COMMIT")

    def _begin(self) -> None:
        """BEGIN and take this schema's writer lock, in one round trip."""
        try:
            self._db.execute(f"BEGIN; SELECT pg_advisory_xact_lock({_LOCK_CLASS}, {int(self._lock_key)})")
        except psycopg.errors.LockNotAvailable as exc:
            self._db.execute("ROLLBACK")
            raise StoreError(f"the store at {self.url} stayed locked too long; another process holds a long write",
                             url=self.url) from exc

    def _now(self) -> str:
        return self._tx_at if self._depth else utcnow()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._retrying(lambda: self._db.execute(sql, params).fetchall())

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._db.execute(sql, params).rowcount

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()

    def check_integrity(self) -> str:
        """'ok', or what is inconsistent (live nodes without their current version row)."""
        problems = []
        lost = self._read("SELECT count(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM node_versions v "
                          "WHERE v.id = n.id AND v.version = n.version)")[0][0]
        if lost:
            problems.append(f"{lost} nodes lack their current version row")
        return "; ".join(problems) or "ok"

    def _log(self, at: str, actor: str, op: str, target: str, namespace: str = "", detail: dict | None = None) -> None:
        self._db.execute("INSERT INTO changes(at, actor, op, target, namespace, detail) VALUES (%s,%s,%s,%s,%s,%s)",
                         (at, actor, op, target, namespace, json.dumps(detail or {})))

    # --- nodes -----------------------------------------------------------------------------
    def put_nodes(self, nodes: Sequence[Node], actor: str = "", at: str | None = None) -> list[int]:
        at = at or self._now()
        ids = [n.id for n in nodes]
        if len(set(ids)) != len(ids):
            raise ValidationError("put_nodes got the same id twice in one call; merge them first")
        for node in nodes:
            if any("\x00" in (text or "") for text in (node.id, node.key, node.title, node.summary, node.content,
                                                         node.embed_text, *node.tags)):
                raise ValidationError(f"node {node.id!r} holds a NUL character, which PostgreSQL text cannot store; "
                                      "remove it", id=node.id)
        with self.transaction():
            existing = {row[0]: row for row in self._db.execute(
                f"SELECT {EXISTING_COLS} FROM nodes WHERE id = ANY(%s)", (ids,))}
            versions, changed = plan_versions(nodes, existing, at, actor)
            inserts, updates, logs = [], [], []
            for node, old, props_json in changed:
                row = (
                    node.id, node.kind, node.namespace, node.key, node.title, node.summary, node.content,
                    props_json, list(node.tags), node.valid_from, node.valid_until, node.recorded_at, None,
                    node.version, node.content_hash, node.created_by, node.embed_hash, node.tokens, node.embed_text,
                )
                (updates if old else inserts).append(row)
                logs.append((at, actor, "node.put", node.id, node.namespace, put_detail(node)))
            cols = NODE_COLS + ", embed_text"
            with self._db.cursor() as cur:
                if updates:
                    cur.executemany(
                        "UPDATE nodes SET kind=%s, namespace=%s, key=%s, title=%s, summary=%s, content=%s, props=%s, "
                        "tags=%s, valid_from=%s, valid_until=%s, recorded_at=%s, retracted_at=%s, version=%s, "
                        "content_hash=%s, created_by=%s, embed_hash=%s, tokens=%s, embed_text=%s, tag_text=%s "
                        "WHERE id=%s", [r[1:] + (" ".join(r[8]), r[0]) for r in updates])
                if inserts:
                    with cur.copy(f"COPY nodes({cols}, tag_text) FROM STDIN") as copy:
                        for r in inserts:
                            copy.write_row(r + (" ".join(r[8]),))
                if inserts or updates:
                    with cur.copy(f"COPY node_versions({cols}) FROM STDIN") as copy:
                        for r in inserts + updates:
                            copy.write_row(r)
                    cur.executemany("INSERT INTO changes(at, actor, op, target, namespace, detail) "
                                    "VALUES (%s,%s,%s,%s,%s,%s)", logs)
        return versions

    def _select_nodes(self, where: PgWhere, as_of: str | None, with_content: bool = True,
                      order: str = "", limit: int | None = None, offset: int = 0) -> list[Node]:
        cols = NODE_COLS if with_content else LIGHT_COLS
        if as_of is None:
            sql = f"SELECT {cols} FROM nodes n{where.sql()}{order}{page(limit, offset)}"
            return [row_to_node(r) for r in self._read(sql, where.params)]
        # The graph as it stood at as_of: the latest version recorded by then, unless retracted.
        inner = (f"SELECT DISTINCT ON (id) {cols} FROM node_versions WHERE recorded_at <= %s "
                 "ORDER BY id, version DESC")
        live = (" AND " if where.parts else " WHERE ") + "n.retracted_at IS NULL"
        sql = f"SELECT * FROM ({inner}) n{where.sql()}{live}{order}{page(limit, offset)}"
        return [row_to_node(r) for r in self._read(sql, [as_of, *where.params])]

    def get_node(self, id: str, as_of: str | None = None, include_retracted: bool = False) -> Node | None:
        if as_of is None and include_retracted:
            rows = self._read(f"SELECT {NODE_COLS} FROM nodes WHERE id = %s", (id,))
            return row_to_node(rows[0]) if rows else None
        return self.get_nodes([id], as_of=as_of).get(id)

    def get_nodes(self, ids: Iterable[str], as_of: str | None = None) -> dict[str, Node]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        where = PgWhere()
        where.add("n.id = ANY(%s)", ids)
        if as_of is None:
            where.add("n.retracted_at IS NULL")
        return {node.id: node for node in self._select_nodes(where, as_of)}

    def _node_where(self, namespace, kind, key_prefix, keys, tags, valid_at, as_of=None) -> PgWhere:
        # as_of needs nothing here: tags are a column of whichever rows (live or versions) are selected
        where = PgWhere()
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        if keys is not None:
            where.eq_any("n.key", list(keys) or [""])
        if key_prefix:
            where.add("n.key >= %s AND n.key < %s", key_prefix, key_prefix + "\U0010ffff")
        if tags:
            where.add("n.tags @> %s::text[]", list(dict.fromkeys(tags)))
        if valid_at:
            where.add("(n.valid_from IS NULL OR n.valid_from <= %s) AND (n.valid_until IS NULL OR n.valid_until > %s)",
                      valid_at, valid_at)
        return where

    def node_index(self, namespace, as_of: str | None = None) -> list[tuple]:
        """Light rows (id, key, kind, title, summary, version, content_hash, tokens) of active nodes, by key."""
        cols = "id, key, kind, title, summary, version, content_hash, tokens"
        where = PgWhere()
        where.eq_any("n.namespace", as_list(namespace))
        where.add("n.retracted_at IS NULL")
        if as_of is None:
            return self._read(f"SELECT {cols} FROM nodes n{where.sql()} ORDER BY n.key, n.id", where.params)
        inner = ("SELECT DISTINCT ON (id) id, key, kind, title, summary, version, content_hash, tokens, namespace, "
                 "retracted_at FROM node_versions WHERE recorded_at <= %s ORDER BY id, version DESC")
        return self._read(f"SELECT {cols} FROM ({inner}) n{where.sql()} ORDER BY n.key, n.id",
                          [as_of, *where.params])

    def get_contents(self, ids: Sequence[str], as_of: str | None = None) -> dict[str, str]:
        """The content of each node (as it stood at ``as_of``), without decoding anything else."""
        ids = list(dict.fromkeys(ids))
        if as_of is None:
            return dict(self._read("SELECT id, content FROM nodes WHERE id = ANY(%s)", (ids,)))
        return dict(self._read("SELECT DISTINCT ON (id) id, content FROM node_versions WHERE id = ANY(%s) "
                               "AND recorded_at <= %s ORDER BY id, version DESC", (ids, as_of)))

    def retract_nodes(self, ids: Sequence[str], actor: str = "", at: str | None = None,
                      edges: str = "both") -> int:
        at = at or self._now()
        with self.transaction():
            rows = self._db.execute("SELECT id, namespace FROM nodes WHERE id = ANY(%s) AND retracted_at IS NULL "
                                    "ORDER BY rid", (list(ids),)).fetchall()
            if not rows:
                return 0
            live = [r[0] for r in rows]
            self._exec(
                f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT id, kind, namespace, key, title, "
                "summary, content, props, tags, valid_from, valid_until, %s, %s, version + 1, content_hash, "
                "created_by, embed_hash, tokens, embed_text FROM nodes WHERE id = ANY(%s)", (at, at, live))
            self._exec("UPDATE nodes SET retracted_at = %s, recorded_at = %s, version = version + 1 "
                       "WHERE id = ANY(%s)", (at, at, live))
            if edges == "both":
                self._exec("UPDATE edges SET retracted_at = %s WHERE retracted_at IS NULL AND "
                           "(src = ANY(%s) OR dst = ANY(%s))", (at, live, live))
            else:
                self._exec("UPDATE edges SET retracted_at = %s WHERE retracted_at IS NULL AND src = ANY(%s)",
                           (at, live))
            with self._db.cursor() as cur:
                cur.executemany("INSERT INTO changes(at, actor, op, target, namespace, detail) "
                                "VALUES (%s,%s,%s,%s,%s,'{}')", [(at, actor, "node.retract", r[0], r[1]) for r in rows])
        return len(rows)

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "",
                    at: str | None = None) -> dict[str, int]:
        at = at or self._now()
        ids = list(ids)
        totals = {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0}
        with self.transaction():
            rows = self._db.execute("SELECT id, namespace, kind FROM nodes WHERE id = ANY(%s) ORDER BY rid",
                                    (ids,)).fetchall()
            hashes = [h for (h,) in self._db.execute(
                "SELECT DISTINCT embed_hash FROM node_versions WHERE id = ANY(%s) AND embed_hash IS NOT NULL", (ids,))]
            totals["versions"] = self._exec("DELETE FROM node_versions WHERE id = ANY(%s)", (ids,))
            totals["edges"] = self._exec("DELETE FROM edges WHERE src = ANY(%s) OR dst = ANY(%s)", (ids, ids))
            totals["nodes"] = self._exec("DELETE FROM nodes WHERE id = ANY(%s)", (ids,))
            if hashes:
                totals["vectors"] = self._exec(
                    "DELETE FROM vectors v WHERE v.hash = ANY(%s) AND NOT EXISTS "
                    "(SELECT 1 FROM node_versions w WHERE w.embed_hash = v.hash)", (hashes,))
            with self._db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tombstones(id, namespace, kind, purged_at, reason, actor) VALUES (%s,%s,%s,%s,%s,%s) "
                    "ON CONFLICT (id) DO UPDATE SET namespace = EXCLUDED.namespace, kind = EXCLUDED.kind, "
                    "purged_at = EXCLUDED.purged_at, reason = EXCLUDED.reason, actor = EXCLUDED.actor",
                    [(r[0], r[1], r[2], at, reason, actor) for r in rows])
                cur.executemany("INSERT INTO changes(at, actor, op, target, namespace, detail) "
                                "VALUES (%s,%s,%s,%s,%s,%s)",
                                [(at, actor, "node.purge", r[0], r[1], json.dumps({"reason": reason})) for r in rows])
        return totals

    # --- graph engine helpers (the same extras SQLiteStore offers graph/) ------------------
    def node_briefs(self, ids: Sequence[str]) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """(kind, content, props) of active nodes by id: the lean read traversal results need."""
        rows = self._read("SELECT id, kind, content, props FROM nodes WHERE id = ANY(%s) AND retracted_at IS NULL",
                          (list(ids),))
        return {nid: (kind, content, json.loads(props) if props and props != "{}" else {})
                for nid, kind, content, props in rows}

    def edge_history(self, namespace=None) -> list[Edge]:
        """Every edge interval, retracted ones included, in the order the store recorded them."""
        where = PgWhere()
        where.eq_any("namespace", as_list(namespace))
        rows = self._read(f"SELECT {EDGE_COLS} FROM edges{where.sql()} ORDER BY recorded_at, rid", where.params)
        return [row_to_edge(r) for r in rows]

    def put_tombstones(self, rows: Sequence[dict[str, Any]]) -> int:
        """Restore tombstones (from a saved graph); existing ones with the same id are replaced."""
        with self.transaction():
            with self._db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tombstones(id, namespace, kind, purged_at, reason, actor) VALUES (%s,%s,%s,%s,%s,%s) "
                    "ON CONFLICT (id) DO UPDATE SET namespace = EXCLUDED.namespace, kind = EXCLUDED.kind, "
                    "purged_at = EXCLUDED.purged_at, reason = EXCLUDED.reason, actor = EXCLUDED.actor",
                    [(r["id"], r.get("namespace"), r.get("kind"), r.get("purged_at"), r.get("reason"),
                      r.get("actor")) for r in rows])
            if rows:
                self._log(self._now(), "", "tombstones.put", "*", "", {"count": len(rows)})
        return len(rows)
