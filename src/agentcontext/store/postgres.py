"""The scale-out store: PostgreSQL with pgvector (psycopg 3), same protocol and semantics as SQLiteStore.
Only the PostgreSQL dialect lives here; what both backends share is ``sql_base.SQLStore``, the schema is
``migrations/postgres.py``.

``postgresql://user@host:port/db?schema=name`` keeps one workspace per schema (our ``schema`` parameter is
taken off the URL before connecting). Writers are serialised per schema by a transaction-scoped advisory
lock, like SQLite's ``BEGIN IMMEDIATE``, so the change log's sequence numbers commit in order and a reader
of ``changes_since`` never skips a row that commits later with a smaller number.

Needs the pgvector extension (created on first open if the role may; otherwise run ``CREATE EXTENSION vector``).
Differences from SQLite, all deliberate: only the first ``pg_sql.INDEXED_CHARS`` characters of a body are
text-searchable (a tsvector is capped at 1 MB); text cannot hold NUL characters (a ValidationError). Purged rows
are gone from every query at once, but their bytes stay in dead tuples and WAL: ``scrub()`` (what erasure calls)
rewrites the touched tables with VACUUM FULL, and the WAL keeps them until the server recycles its segments.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from ..errors import DependencyMissingError, StoreError, ValidationError
from ..model import Node
from .base import Capability
from .migrations.postgres import MIGRATIONS, VERSION_COLS
from . import (pg_bulk, pg_changes, pg_delta, pg_hash, pg_parallel, pg_prewarm, pg_props, pg_q8, pg_recorded,
               pg_refused, pg_scrub, pg_statistics, pg_text_counts, pg_warmup, scrub, transfer)
from .pg_sql import PgWhere, decode_vectors, redact, split_url
from .pg_vectors import SESSION, STORED
from .rows import LIGHT_COLS, NODE_COLS, Where, held_embed_text
from .pg_fts import PgText, TextStatsRow
from .pg_search import PgSearch
from .sql_base import SQLStore

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.adapt import Loader
    from psycopg.pq import Format
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise DependencyMissingError("the PostgreSQL store needs the postgres extra: pip install 'agentcontext[postgres]'",
                                 extra="postgres") from exc

_LOCK_CLASS = 0x61637478  # 'actx'
T = TypeVar("T")


class RawVector(Loader):
    """pgvector's binary form as plain bytes, decoded in bulk by ``pg_sql.decode_vectors``."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        return bytes(data)


def _refuse_nul(nodes: Sequence[Node]) -> None:
    for node in nodes:
        if any("\x00" in (text or "") for text in (node.id, node.key, node.title, node.summary, node.content,
                                                     node.embed_text, *node.tags)):
            raise ValidationError(f"node {node.id!r} holds a NUL character, which PostgreSQL text cannot store; "
                                  "remove it", id=node.id)


def _schema_reads(store: "PostgresStore", db: Any) -> None:
    """What the schema holds in forms the API does not (each read back by SQL) and that SQL, set on ``store``: the
    ranking's props as columns of ``nodes`` (migration 16: ``pg_props.read_sql``), the change log's time and operation
    (17, 18: ``pg_changes``), a node's recorded time (18: ``pg_recorded``)."""
    store._pc, store._rt = pg_props.has_columns(db), pg_recorded.has_times(db)
    store._ct, store._co = pg_changes.has_times(db), store._rt  # (the op's code: the same step as the time's, 18)
    store.CHANGE_AT, store.CHANGE_OP = pg_changes.reads(store._ct, store._co)
    store.PROPS_READ = pg_props.read_sql() if store._pc else "props"
    cols = [c.replace(" props,", f" {store.PROPS_READ} AS props,") if store._pc else c
            for c in (NODE_COLS, LIGHT_COLS, VERSION_COLS)]
    store.NODE_READ, store.LIGHT_READ, store._version_read = [pg_recorded.reads(c) if store._rt else c for c in cols]
    store.RECORDED_AT = pg_recorded.read_sql() if store._rt else "recorded_at"
    store.TIMED_PAGES = store._rt  # a page in recorded order: sorted by the timestamp (pg_recorded.page)
    store.RECORDED_SET, store._recorded_params = pg_recorded.setter(store._rt)


class PostgresStore(SQLStore):
    """PostgreSQL store. One connection per instance (thread-safe by a lock); processes share the database."""

    backend = "postgresql"
    MIGRATIONS = MIGRATIONS
    PLACEHOLDER = "%s"
    VECTOR_DTYPE = np.float16  # halfvec (migration 5; pg_vectors.py)
    EMBED_TEXT = ("coalesce(n.embed_text, CASE WHEN n.title <> '' AND n.embed_hash = encode(sha256(convert_to(n.title "
                  "|| ': ' || n.content || E'\\x1f', 'UTF8')), 'hex') THEN n.title || ': ' || n.content ELSE "
                  "n.content END)")  # migration 6: rows.held_embed_text, read back as rows.whole_embed_text does
    # A node's current version is held once, as its live row (migration 4); node_versions keeps the superseded ones
    VERSIONS = "versions"
    CURRENT_IN_VERSIONS = False
    COPY_ARMS = {"node_versions": ("node_versions", "nodes")}  # export pages merge the two, each in key order
    TOMBSTONE_KEY = "id, namespace"  # the tenant in every tenant table's key (migration 7; docs/SHARDING.md)
    NO_NAMESPACE = ""
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED, Capability.VECTOR_SEARCH,
                              Capability.SERVER_QUERIES, Capability.VECTOR_DELTA, Capability.READ_AHEAD})
    CONNECT_TIMEOUT: float | None = None  # seconds a connection attempt may take (None: the store's timeout)
    READ_AHEAD = True  # reads may start ahead on a second connection (``read_ahead``; pg_parallel.py)
    SCRUB_WAIT_S = pg_scrub.WAIT_S  # a strict scrub's wait for transactions older than the erasure

    def __init__(self, url: str, schema: str | None = None, timeout: float = 60.0, prewarm: bool = True,
                 fold_at: int | None = pg_delta.FOLD_AT, warm_up: bool | None = None) -> None:
        super().__init__(redact(url), timeout)  # the URL is shown by the CLI and in receipts: never the password
        self._lock = pg_warmup.Gate()  # re-entrant like SQLStore's; tells a warm-up that a call wants the store
        conninfo, url_schema = split_url(url)
        self.schema = schema or url_schema
        self._conninfo = conninfo
        self._vector_loader: pg_bulk.VectorLoader | None = None
        self._dropped: dict[str, list[str]] = {}  # an import's table: the indexes it dropped (pg_bulk.drop_indexes)
        self.fold_at = fold_at  # a commit leaving more vectors pending starts a background fold (None: never)
        # the store's other connections open the schema as this one found it: never a migration (SecondConnection)
        self.folder = pg_delta.Folder(lambda: SecondConnection(conninfo, self.schema, timeout, False, None,
                                                               version=self.opened_version))
        self._ahead = pg_parallel.ReadAhead(
            lambda warm: SecondConnection(conninfo, self.schema, timeout, False, None, warm_up=warm,
                                          counts=self._counts, version=self.opened_version), self.url)
        self._search = PgSearch(self)
        self._text = PgText(self)
        self._counts = pg_text_counts.Recent()  # BM25's counts read last (the second connection shares them)
        self._deltas = pg_delta.Delta(self)
        self._warm_up = pg_warmup.WarmUp(self)
        self._connect()
        db = self._db
        self._lock_key = int.from_bytes(
            hashlib.sha256((self.schema or db.execute("SELECT current_schema()").fetchone()[0]).encode()).digest()[:4],
            "big", signed=True)
        self._ensure_vector_extension()
        register_vector(db)
        self._open()
        self.opened_version = self.schema_version()  # what its other connections must find (SecondConnection)
        self._delta = pg_delta.has_delta(db)  # False only for a store pinned to an older schema (tests pin one)
        self._q8 = pg_q8.has_q8(db)  # context vectors held as int8 (migration 9)
        self._hb, self._nb = pg_hash.key_forms(self)  # the hashes as bytes: vectors' (migration 10), nodes' (13)
        _schema_reads(self, db)  # props as columns (migration 16), the change log's and nodes' small columns (17, 18)
        self.prewarmed, self.warmed = _warm(self, prewarm, warm_up)

    def _connect(self) -> None:
        """Open the connection and set the session up (lock timeout, our schema first on the search path)."""
        try:
            db = psycopg.connect(self._conninfo, autocommit=True,
                                  connect_timeout=int(self.CONNECT_TIMEOUT or self._timeout))
        except psycopg.Error as exc:
            safe = redact(self._conninfo)
            raise StoreError(f"cannot connect to the PostgreSQL store at {safe}: {exc}; check that the server "
                             "runs and the URL (user, host, port, database) is right", url=safe) from exc
        db.execute(f"SET lock_timeout = '{int(self._timeout * 1000)}ms'")
        for statement in SESSION:  # HNSW search settings (pg_vectors.py)
            db.execute(statement)
        if self.schema:  # made when missing, the role's use of it checked, first on the search path (pg_refused)
            pg_refused.open_schema(db, self.schema, self.url, _LOCK_CLASS)
        self._db = db

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

    # --- transactions and reads ------------------------------------------------------------
    def _guard(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; if the connection was lost (server restart, idle timeout, terminated backend) and no
        transaction is open, reconnect once and run it again. A read the server refused the role: ours (pg_refused)."""
        try:
            return fn()
        except psycopg.errors.InsufficientPrivilege as exc:
            pg_refused.raise_read(exc, self)
            raise
        except psycopg.OperationalError:
            if self._closed or self._depth or not (self._db.broken or self._db.closed):
                raise
        self._db.close()
        self._connect()
        register_vector(self._db)
        return fn()

    def _begin(self) -> None:
        self._lock.want()  # a write: a warm-up still running stops (pg_warmup.Gate)
        self._guard(self._begin_locked)

    def _begin_locked(self) -> None:
        """BEGIN and take this schema's writer lock, in one round trip."""
        try:
            self._db.execute(f"BEGIN; SELECT pg_advisory_xact_lock({_LOCK_CLASS}, {int(self._lock_key)})")
        except psycopg.errors.LockNotAvailable as exc:
            self._db.execute("ROLLBACK")
            raise StoreError(f"the store at {self.url} stayed locked too long; another process holds a long write",
                             url=self.url) from exc

    def _refused(self, exc: BaseException) -> Exception | None:
        return pg_refused.refused(exc, self, reading=False)

    def _commit(self) -> None:
        grew = self._vector_loader is not None and self._vector_loader.pending
        self._finish_loads()
        self._db.execute("COMMIT")
        self._counts.clear()  # what it wrote changed BM25's counts
        if grew:
            self._deltas.grew()  # a background fold when the delta outgrew its bound (pg_delta.Delta)

    def _finish_loads(self) -> None:
        """Before the commit: the HNSW indexes dropped (or never made) for a large load, built over every row of the
        transaction (on failure the transaction is rolled back)."""
        loader, self._vector_loader = self._vector_loader, None
        if loader is not None:
            try:
                loader.finish()
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        self._counts.clear()
        self._vector_loader = None
        self._dropped.clear()
        if not (self._db.broken or self._db.closed):
            self._db.execute("ROLLBACK")

    def _execmany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._db.cursor() as cur:
                cur.executemany(sql, rows)

    def _bulk_insert(self, table: str, cols: str, rows: Sequence[Sequence[Any]]) -> None:
        if table == "vectors":  # copied vectors (import_rows): staged, HNSW indexes dropped for a large load
            self._loader.load(rows, upsert=False, copied=True)
            return
        if table == "tombstones":  # keyed by (id, namespace) (migration 7): one naming no namespace has ''
            rows = [(r[0], self.NO_NAMESPACE if r[1] is None else r[1], *r[2:]) for r in rows]
        if table == "changes":  # the time a timestamp, the op an id, or their texts when none gives them back
            cols, rows = pg_changes.copy_form(cols, rows, self._ct, self._co)  # (pg_changes)
        with self._db.cursor() as cur, cur.copy(f"COPY {table}({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _insert_changes(self, rows: Sequence[Sequence[Any]]) -> None:
        if rows:  # as the schema holds them (pg_changes: migrations 17 and 18)
            self._execmany(*pg_changes.insert(rows, self._ct, self._co))

    def _upsert_vectors(self, rows: list[tuple]) -> None:
        """``put_vectors``' rows (checked finite by SQLStore.put_vectors) staged by binary COPY and upserted in one
        statement (``pg_bulk.VectorLoader``): a new model's HNSW index is made before its rows, and a load large
        beside what the model holds drops the index and builds it again when the transaction commits."""
        pg_bulk.check_range([(r[0], r[3]) for r in rows])  # halfvec's range (finite: checked by put_vectors)
        self._loader.load(rows, upsert=True)

    def _building(self) -> list[tuple[str, int]]:
        """The (model, dim) whose HNSW index this transaction builds after its rows (none: the rows join the delta)."""
        return sorted(self._vector_loader.build) if self._vector_loader is not None else []

    @property
    def _loader(self) -> pg_bulk.VectorLoader:
        """The vector loader of the open transaction (it remembers the indexes to build before its commit: one
        build however many batches the transaction loads)."""
        if self._vector_loader is None:
            self._vector_loader = pg_bulk.VectorLoader(self._db, self._delta, self._q8, self._hb, self._nb)
        return self._vector_loader

    def _tags_value(self, tags: list[str]) -> list[str]:
        return tags

    def _import_nodes(self, rows: list[tuple]) -> None:
        names = transfer.TABLES["nodes"][1]
        title, content, text = names.index("title"), names.index("content"), names.index("embed_text")
        rows = [(*r[:text], held_embed_text(r[title], r[content], r[text]), *r[text + 1:]) for r in rows]
        embed = names.index("embed_hash")
        hashes = sorted({r[embed] for r in rows if r[embed]})
        tagged = [(*r, " ".join(r[8] or [])) for r in rows]  # schemas 16, 18: props split, the time too (pg_bulk)
        self._bulk_insert("nodes", f"{', '.join(names)}, tag_text{pg_bulk.held_cols(self._pc, self._rt)}",
                          pg_bulk.hashes_held(tagged, [*names, "tag_text"], self._nb, self._pc, self._rt))
        pg_bulk.mark_searched(self._db, hashes, self._building(), self._delta, self._q8, self._hb)
        # a version row copied before its node is the live row now (migration 4: the current version is held once)
        self._db.execute("DELETE FROM node_versions v USING nodes n WHERE n.id = ANY(%s) AND v.id = n.id AND "
                         "v.namespace = n.namespace AND v.version = n.version", ([r[0] for r in rows],))

    def _import_versions(self, rows: list[tuple]) -> None:
        """Copied versions, but the current ones: a node's live row is its current version (migration 4)."""
        pg_bulk.import_versions(self._db, rows, self._nb)

    def _check_import(self, table: str, rows: list[tuple]) -> None:
        if table == "vectors":
            pg_bulk.check_vectors([(r[0], r[3]) for r in rows])
        for row in rows:
            if any(isinstance(v, str) and "\x00" in v for v in row):
                raise ValidationError(f"a {table} row ({row[0]!r}) holds a NUL character, which PostgreSQL text cannot "
                                      "store; remove it from the source first", table=table, row=str(row[0]))

    def _importing(self, table: str) -> None:
        self._dropped[table] = pg_bulk.start_import(self, table)

    def _imported(self, table: str) -> None:
        pg_bulk.finish_import(self._db, table, self._dropped.pop(table, []))
        if table in ("audit", "changes"):  # copied sequence numbers: the next one follows the largest
            self._exec(f"SELECT setval(pg_get_serial_sequence('{table}', 'seq'), coalesce(max(seq), 1), "
                       f"max(seq) IS NOT NULL) FROM {table}")
        # vectors: indexes dropped for a large load are built at the commit, after every row (``_commit``)

    def _where(self) -> PgWhere:
        return PgWhere()

    def _table_exists(self, name: str) -> bool:
        return bool(self._read("SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = %s",
                                (name,)))

    def _sizes(self) -> dict[str, Any]:
        tables = dict(self._read(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace s "
            "ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname"))
        return {"total": sum(tables.values()), "tables": tables, "schema": self._read("SELECT current_schema()")[0][0]}

    # --- nodes -----------------------------------------------------------------------------
    def _storable(self, text: str) -> bool:
        return "\x00" not in text  # no node can have it: PostgreSQL text holds no NUL

    def _check_text(self, nodes: Sequence[Node]) -> None:
        _refuse_nul(nodes)

    def _unindex(self, rids: Sequence[int], purge: bool) -> None:
        """Nothing to do: the text index is a column of the row (and queries skip retracted rows)."""

    def _versions_as_of(self, cols: str, as_of: str) -> tuple[str, list[Any]]:
        # the live row when it was recorded by then (it is the latest version), else the latest superseded one
        live, params = pg_recorded.at_most(as_of) if self._rt else ("recorded_at <= %s", [as_of])  # (schema 18)
        return (f"SELECT DISTINCT ON (id) {cols} FROM (SELECT {self._version_read} FROM nodes WHERE {live} "
                f"UNION ALL SELECT {VERSION_COLS} FROM node_versions WHERE recorded_at <= %s) v "
                "ORDER BY id, version DESC", [*params, as_of])

    def _filter_tags(self, where: Where, tags: list[str], as_of: str | None) -> None:
        # as_of needs nothing here: tags are a column of whichever rows (live or versions) are selected
        where.add("n.tags @> ?::text[]", tags)

    def _write_nodes(self, changed: list[tuple[Node, tuple | None, str]], existing: dict[str, tuple]) -> None:
        """New rows by COPY, changed ones staged and updated set-wise (``pg_bulk``); the pair hashes they name noted."""
        inserts, updates = [], []
        for node, old, props_json in changed:
            (updates if old else inserts).append(pg_bulk.live_row(node, props_json, self._nb, self._pc, self._rt))
        if updates:
            pg_bulk.update_nodes(self._db, updates, self._nb, self._pc, self._rt)
        if inserts:
            self._bulk_insert("nodes", pg_bulk.live_cols(self._pc, self._rt), inserts)
        pg_bulk.mark_searched(self._db, sorted({n.embed_hash for n, _, _ in changed if n.embed_hash}),
                              self._building(), self._delta, self._q8, self._hb)
        self._loader.name_pairs([(n.props or {}).get("pair_hash") for n, _, _ in changed])

    # --- text index ------------------------------------------------------------------------
    def _bm25_stats(self, query: str, namespace=None, within: Sequence[str] | None = None) -> TextStatsRow:
        return self._text._bm25_stats(query, namespace, within)

    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None,
                    within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._text.text_search(query, namespace, kind, limit, common, ids, within)

    def _ranked(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                ids: Sequence[str] | None = None, within: Sequence[str] | None = None,
                stats: TextStatsRow | None = None) -> list[tuple[str, float]]:
        return self._text._ranked(query, namespace, kind, limit, common, ids, within, stats)

    def term_counts(self, query: str, namespace=None) -> tuple[int, dict[str, int]]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._text.term_counts(query, namespace)

    def _prop_in(self, where: Where, name: str, values: list[str]) -> None:
        if self._pc and name in pg_props.MOVED:  # a column (migration 16): index nodes_prev answers prev
            where.add(f"n.{name} = ANY(?)", pg_props.column_params(name, values))
            return
        where.add(f"((n.props::jsonb) ->> '{name}') = ANY(?)", list(values))  # index nodes_prev answers prev

    def _props_hold(self, where: Where, path: list[str], value: str) -> None:
        # jsonb containment: a list holding the string, or the string itself
        held = pg_props.filter_sql(path[:1], self._nb, self._pc)  # migrations 13 and 16
        where.add(f"({held} #> ?::text[]) @> to_jsonb(?::text)", path, value)

    def phrase_search(self, phrase: str, namespace=None, kind=None, limit: int | None = None) -> list[str]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._text.phrase_search(phrase, namespace, kind, limit)

    # --- erasure ---------------------------------------------------------------------------
    def scrub(self, tables: Sequence[str] | None = None, strict: bool = True) -> dict[str, Any]:
        """VACUUM (FULL when ``strict``) of ``tables``, after waiting ``SCRUB_WAIT_S`` for readers older than the
        erasure, then a CHECKPOINT; what it does and what its receipt says: pg_scrub.py."""
        with self._lock:
            return pg_scrub.run(self._db, lambda statement: self._guard(lambda: self._db.execute(statement)), tables,
                                strict, self.SCRUB_WAIT_S, self.backend)

    def forget_statistics(self, tables: Sequence[str] | None = None) -> dict[str, Any]:
        """After a strict scrub: the planner's statistics of ``tables`` out of the files, as the role may."""
        names = [t for t in (tables or scrub.TABLES) if t in scrub.TABLES]
        with self._lock:
            return self._guard(lambda: pg_statistics.forget(self, names, self.SCRUB_WAIT_S))

    # --- vectors ---------------------------------------------------------------------------
    def nearest(self, vector: np.ndarray, model: str, k: int, namespace=None, kind=None, tags=None,
                valid_at: str | None = None, props: dict[str, Any] | None = None,
                titles: Sequence[str] | None = None) -> list[tuple[str, float]]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._search.nearest(vector, model, k, namespace, kind, tags, valid_at, props, titles)

    def nodes_linked(self, ids: Sequence[str], prop: str, namespace: str, kind: str,
                     fields: Sequence[str] | None = None,
                     content: bool = False) -> tuple[dict[str, Node], list[Node]]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._search.nodes_linked(ids, prop, namespace, kind, fields, content)

    def holds_at_least(self, n: int, namespace: str, kind: str) -> bool:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._search.holds_at_least(n, namespace, kind)

    def similarities(self, vector: np.ndarray, model: str, hashes: Sequence[str]) -> dict[str, float]:
        self._lock.want()  # a search: a warm-up still running stops (pg_warmup.Gate)
        return self._search.similarities(vector, model, hashes)

    # --- the delta of unindexed vectors (pg_delta.Delta) -------------------------------------------------
    def fold(self, chunk: int = pg_delta.FOLD_CHUNK, progress: Callable[[int, int], None] | None = None
             ) -> dict[str, Any]:
        return self._deltas.fold(chunk, progress)

    def pending_vectors(self) -> int:
        return self._deltas.pending_vectors()

    def pack(self) -> dict[str, Any]:
        """Hold the context vectors written since the last pack as int8 (pg_q8; the background fold packs too)."""
        return self._deltas.pack()

    def info(self) -> dict[str, Any]:
        return {**super().info(), "pending_vectors": self.pending_vectors()}  # folded by `agentcontext store fold`

    def read_ahead(self, read: Callable[[PostgresStore], T]) -> pg_parallel.Pending:
        """Start ``read(store)`` on the second connection and go on (``result()`` answers): pg_parallel.read_ahead."""
        return pg_parallel.read_ahead(self, read)

    def close(self) -> None:
        self._warm_up.stop()  # a warm-up still running ends first (its statement cancelled)
        self.folder.stop()  # a background fold ends after its chunk (which commits or rolls back whole)
        self._ahead.close()  # the second connection, after its current read
        super().close()

    def _vector_value(self, vector: np.ndarray) -> np.ndarray:
        return vector  # pgvector's adapter sends it

    def _vector_sql(self, alias: str = "") -> str:
        """A ``vectors`` row's values whichever form holds them (a context vector as int8: ``pg_q8``)."""
        return pg_q8.value_sql(alias) if self._q8 else f"{alias}vector"

    def _hash_in(self, column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
        return self._in(column, pg_hash.params(hashes, self._hb))  # vectors.hash as bytes (migration 10)

    def _hash_sql(self, column: str) -> str:
        return pg_hash.out(column, self._hb)

    def _hash_param(self) -> str:
        return pg_hash.into("?", self._hb)

    def _vector_rows(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        """Rows with vector columns as raw bytes (binary protocol, no per-row numpy objects)."""
        def run() -> list[tuple]:
            cur = self._db.cursor(binary=True)
            cur.adapters.register_loader(self._db.adapters.types["vector"].oid, RawVector)
            cur.adapters.register_loader(self._db.adapters.types[STORED].oid, RawVector)
            return cur.execute(sql, params).fetchall()

        with self._lock:
            return self._guard(run)

    def _decode_vectors(self, raws: Sequence[bytes]) -> np.ndarray:
        return decode_vectors(raws)


class SecondConnection(PostgresStore):
    """Another connection of a ``PostgresStore``: the one it reads ahead on (pg_parallel.py; ``counts``: the first
    connection's BM25 counts, shared) or its background fold's (pg_delta.py). The same conninfo, schema and role; it
    reads ahead on no further connection of its own, and it never changes the schema: it runs no migration (a store
    pinned to an older schema, or opened by an older agentcontext, stays at its version) and refuses a schema whose
    version is not ``version``, the one the store found when it opened (another process upgraded it since)."""

    READ_AHEAD = False

    def __init__(self, *args: Any, version: int, counts: pg_text_counts.Recent | None = None, **kwargs: Any) -> None:
        self._expected = version
        super().__init__(*args, **kwargs)
        if counts is not None:
            self._counts = counts  # the first connection's: its commits forget them for both

    def _open(self) -> None:
        """Check the schema's version instead of bringing it up to date (SQLStore._open)."""
        found = self.schema_version()
        if found != self._expected:
            self._closed = True
            self._db.close()
            raise StoreError(f"the schema of the store at {self.url} is at version {found}, not {self._expected} as "
                             "when the store was opened: another process changed it since; open the store again",
                             url=self.url, version=found, expected=self._expected)


def _warm(store: PostgresStore, prewarm: bool, warm_up: bool | None) -> tuple[pg_prewarm.PrewarmReport,
                                                                            pg_warmup.WarmUpReport]:
    """At open: the process's first full collection (not during its first queries), and the connection's backend
    warmed by a first search run in the background (pg_warmup.py; ``warm_up`` None: when the search indexes are large
    enough to be prewarmed), after the search indexes are loaded into the server's buffers where they are cold
    (pg_prewarm.py: in the same thread, so neither the open nor a first query waits for the load; ``warm_up=False``:
    loaded in the open), the second connection too (pg_parallel.py)."""
    if prewarm:
        pg_prewarm.collect_once()
    if warm_up is False or (warm_up is None and not prewarm):
        prewarmed = pg_prewarm.prewarm(store._db) if prewarm else pg_prewarm.PrewarmReport(skipped="not asked")
        return prewarmed, store._warm_up.skip("not asked")
    prewarmed = pg_prewarm.PrewarmReport(skipped="not asked")
    if prewarm:  # (warm_up None and no prewarm: returned above)
        found = pg_prewarm.indexes(store._db)
        prewarmed = pg_prewarm.PrewarmReport(blocks=sum(blocks for _, blocks in found))
        if prewarmed.blocks < pg_prewarm.MIN_BLOCKS:
            prewarmed.skipped = f"the search indexes are small (under {pg_prewarm.MIN_BLOCKS} blocks)"
            if warm_up is None:
                return prewarmed, store._warm_up.skip(prewarmed.skipped)
        else:
            store._warm_up.plan = (prewarmed, found)  # loaded by the warm-up's first steps
    warmed = store._warm_up.start()
    if store.READ_AHEAD:
        store._ahead.open_soon()
    return prewarmed, warmed


def schema_exists(url: str) -> bool:
    """Whether ``url`` names a schema (its ``?schema=``, else the connection's current one) holding our tables;
    asked on a connection of its own that creates nothing."""
    conninfo, schema = split_url(url)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=60) as db:
            found = db.execute("SELECT to_regclass(format('%%I.nodes', coalesce(%s, current_schema())))",
                               (schema,)).fetchone()
    except psycopg.Error as exc:
        safe = redact(conninfo)
        raise StoreError(f"cannot connect to the PostgreSQL store at {safe}: {exc}; check that the server "
                         "runs and the URL (user, host, port, database) is right", url=safe) from exc
    return found is not None and found[0] is not None
