"""The embedded store: one SQLite file (WAL, busy timeout, FTS5, secure_delete). Only the SQLite dialect lives
here; what both backends share is ``sql_base.SQLStore``, the schema is ``migrations/sqlite.py``.

SQLite comes from the ``sqlean-py`` wheel (SQLite >= 3.42 with FTS5 on every platform), not from the
interpreter: FTS5's ``secure-delete`` option (migration 3), which makes a deleted row leave no term in the
text index, needs 3.42, and Python builds link whatever SQLite the system has (3.40 on Debian 12). A store
file whose text index has secure-delete on cannot be searched by an older SQLite (it says ``invalid fts5 file
format``); every other table still reads."""
from __future__ import annotations

import itertools
import json
import os
import random
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import sqlean as sqlite3

from ..errors import StoreError
from ..model import Node
from .base import Capability
from .migrations.sqlite import MIGRATIONS
from .rows import Where
from . import sqlite_nodes, sqlite_text, sqlite_vectors, transfer
from .sql_base import SQLStore
from .sqlite_fts import SQLiteText, SqlWhere

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


# The driver binds str, int, float and bytearray directly; any other value (None, bytes) it first offers to the
# adapter protocol, and finding no adapter costs about 2 microseconds a value (a failed attribute lookup each): a
# memory's row binds several NULLs and its vector's bytes, so a batch of 10,000 spent most of its binding time
# there. Registered as themselves they bind exactly as before (NULL, BLOB), found by one dictionary lookup.
sqlite3.register_adapter(type(None), _same)
sqlite3.register_adapter(bytes, _same)


FTS_DELETE = "INSERT INTO fts(fts, rowid, key, title, summary, content, tags) VALUES ('delete', ?, ?, ?, ?, ?, ?)"


class SQLiteStore(SQLStore):
    """The embedded default store. Safe to share between threads and processes (``:memory:`` is private to
    this object: neither persistent nor shared)."""

    backend = "sqlite"
    MIGRATIONS = MIGRATIONS
    CHUNK = 900  # stay below SQLite's host-parameter limit
    NO_LIMIT = "-1"
    EDGE_SCAN = " NOT INDEXED"  # one pass over the table beats walking an index for every row
    # The superseded versions' random content hashes are indexed by their first 8 characters (migration 5: 16,
    # migration 6: 8; vectors' too until migration 8): a small index; the full hash is compared too.
    HASH_PREFIX = 8
    # A vector is found by its hash through vector_keys (migration 8; older schemas: sqlite_vectors.keyed_schema)
    VECTOR_JOIN = sqlite_vectors.NODE_VECTOR
    NODES_WITH_VECTORS = "nodes n CROSS JOIN vectors v"  # nodes first: each looks its vector up (no table scan)
    KEYED = True  # vectors found through vector_keys (schema 8 on)
    VERSION_USES = "substr(w.embed_hash, 1, 8) = substr(vectors.hash, 1, 8) AND w.embed_hash = vectors.hash"
    # Whether a live row uses a hash goes through nodes_hash2 (migration 7: 256 buckets, each in row order, so new rows
    # append): the inner select reads one bucket of the index alone (its 8 further characters are in the index), the
    # outer one reads only the rows it names to compare the full hash.
    LIVE_USES = ("w.rid IN (SELECT x.rid FROM nodes x WHERE substr(x.embed_hash, 1, 2) = substr(vectors.hash, 1, 2) "
                 "AND substr(x.embed_hash, 3, 8) = substr(vectors.hash, 3, 8)) AND w.embed_hash = vectors.hash")
    # A node's current version is its live row, held once (migration 6): node_versions keeps the superseded ones
    VERSIONS = "versions"
    CURRENT_IN_VERSIONS = False
    LIKE_ANY_CASE = "LIKE"
    COPY_ARMS = {"node_versions": ("node_versions", "nodes")}  # export pages merge the two, each in key order
    # The WAL is copied into the file (checkpointed) once it holds this many bytes of pages (SQLite's default: 1,000
    # pages), not after every commit of a bulk write: a page a batch dirties is written once per batch and once per
    # checkpoint (with a checkpoint per commit, twice per batch). The file is cut back to WAL_KEEP_BYTES after.
    WAL_CHECKPOINT_BYTES = 256 << 20
    WAL_KEEP_BYTES = 64 << 20
    # A new store file's page size (SQLite's default 4 KiB; a file made with another size keeps it: changing it would
    # take a VACUUM out of WAL mode). A 384-d vector's row is about 1,640 bytes: a 4 KiB page holds two (a fifth of it
    # empty), a 16 KiB one ten, so the vectors take 0.8x the bytes; a batch writes a quarter as many pages to the WAL
    # and to the file, each one system call (issue 23 s1: 0.86x bytes a memory; batch_store per CPU second and
    # retrieve p50 unchanged within the noise of a busy machine: docs/POSTGRES_SCALE.md). Reads of one row copy a
    # larger page from the OS's cache.
    PAGE_BYTES = 16384
    # The page cache (KiB): PAGE_CACHE_KIB, raised to BATCH_CACHE_KIB while a large write is open (a batch of 10,000
    # memories at 1,000,000 dirties about 63 MB; a full cache spills pages to the WAL mid-batch, to be written again)
    PAGE_CACHE_KIB = 65536
    BATCH_CACHE_KIB = 262144
    BATCH_ROWS = 1000
    # Host parameters a multi-row INSERT binds (SQLite >= 3.32 takes 32,766 a statement; sqlean brings >= 3.42): rows
    # land by hundreds a statement, not one statement step and reset each (a new memory's node row 1-2 us less)
    MULTI_ROW_PARAMS = 10_000
    # A batch of new nodes reaches the text index by one statement reading their rows back (FTS_FROM_NODES): about
    # 1 us a memory less than a statement step a row (the driver's loop, binding the texts again). False: one step a row
    FTS_FROM_ROWS = True

    def __init__(self, path: str | Path, timeout: float = 60.0) -> None:
        self.path = Path(path)
        super().__init__(f"sqlite:///{self.path}", timeout)
        self.in_memory = str(path) == ":memory:"
        self._scope_stats = sqlite_text.ScopeStats()  # text statistics of searched namespaces, per store change
        self._text = SQLiteText(self)
        self.capabilities = frozenset() if self.in_memory else frozenset({Capability.PERSISTENT, Capability.SHARED})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}; check the path and its permissions",
                             path=str(self.path)) from exc
        db = self._db
        try:
            db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            db.execute(f"PRAGMA page_size = {self.PAGE_BYTES}")  # a new file only (before WAL): others keep theirs
            self._guard(lambda: db.execute("PRAGMA journal_mode = WAL"))
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StoreError(f"{self.path} is not a store agentcontext can open ({exc}); check the path, or move "
                             "the file away to start a new workspace", path=str(self.path)) from exc
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA secure_delete = ON")
        db.execute("PRAGMA temp_store = MEMORY")
        db.execute(f"PRAGMA cache_size = -{self.PAGE_CACHE_KIB}")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        db.execute(f"PRAGMA wal_autocheckpoint = {max(1000, self.WAL_CHECKPOINT_BYTES // page)}")
        db.execute(f"PRAGMA journal_size_limit = {self.WAL_KEEP_BYTES}")
        self._cache_raised = False
        self._import_top: int | None = None  # the highest vid before an import of vectors (their keys after it)
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}; check that it is an agentcontext "
                             "store (or move it away to start a new workspace)", path=str(self.path)) from exc
        self.KEYED = sqlite_vectors.keyed_schema(self)

    # --- transactions and reads ------------------------------------------------------------
    def _guard(self, fn: Callable[[], T]) -> T:
        """Retry while another process holds the write lock, up to the timeout."""
        deadline = time.monotonic() + self._timeout
        delay = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise StoreError(f"the store at {self.path} stayed locked for {self._timeout:.0f}s; "
                                     "another process holds a long write", path=str(self.path)) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)

    def _begin(self) -> None:
        self._guard(lambda: self._db.execute("BEGIN IMMEDIATE"))

    def _commit(self) -> None:
        self._guard(lambda: self._db.execute("COMMIT"))
        self._restore_cache()

    def _rollback(self) -> None:
        self._db.execute("ROLLBACK")
        self._restore_cache()

    def _batch_cache(self, rows: int) -> None:
        """A write of ``rows`` rows: a large one gets the larger page cache until its transaction ends."""
        if rows >= self.BATCH_ROWS and not self._cache_raised:
            self._db.execute(f"PRAGMA cache_size = -{self.BATCH_CACHE_KIB}")
            self._cache_raised = True

    def _restore_cache(self) -> None:
        if self._cache_raised:  # shrinking the cache frees the pages above the smaller size
            self._db.execute(f"PRAGMA cache_size = -{self.PAGE_CACHE_KIB}")
            self._cache_raised = False

    def _execmany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    def _insert_rows(self, head: str, rows: Sequence[Sequence[Any]]) -> None:
        """``head`` (``INSERT INTO t(a, b)``) for every row, in order: whole statements of many rows each, the rest
        row by row (the two statements stay in the driver's statement cache)."""
        rows = rows if isinstance(rows, (list, tuple)) else list(rows)
        if not rows:
            return
        width = len(rows[0])
        one = f"({','.join('?' * width)})"
        per = max(1, self.MULTI_ROW_PARAMS // width)
        whole = len(rows) - len(rows) % per
        if whole:
            sql = f"{head} VALUES {','.join([one] * per)}"
            for start in range(0, whole, per):
                self._db.execute(sql, list(itertools.chain.from_iterable(rows[start: start + per])))
        if whole < len(rows):
            self._db.executemany(f"{head} VALUES {one}", rows[whole:])

    def _tenant_rows(self, ids: Sequence[Any], namespaces: Sequence[str], column: str = "id") -> tuple[str, list[Any]]:
        """By id alone: one file has no tenant shards to route to, and naming the namespaces as well let SQLite's
        planner walk the namespace's index instead of seeking each id (a retraction of 10 ids took 6-8x as long)."""
        return self._in(column, ids)

    def _where(self) -> SqlWhere:
        return SqlWhere()

    def _hash_in(self, column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
        if self.KEYED and column in ("hash", "v.hash"):  # a vectors row: through vector_keys (migration 8)
            return sqlite_vectors.hash_in(column, hashes)
        n = self.HASH_PREFIX
        prefixes = self._in(f"substr({column}, 1, {n})", sorted({h[:n] for h in hashes}))
        exact = self._in(column, hashes)
        return f"{prefixes[0]} AND {exact[0]}", [*prefixes[1], *exact[1]]

    def _upsert_vectors(self, rows: list[tuple]) -> None:
        """No unique index on (hash, model) (a random-key index as big as the hashes): the rows already held are
        found through vector_keys and replaced, the rest appended and their keys written to the fresh tier, which is
        merged into the settled one when it has grown (``sqlite_vectors``); the writer lock makes that race-free."""
        self._batch_cache(len(rows))
        sqlite_vectors.upsert(self, rows)

    def _bulk_insert(self, table: str, cols: str, rows: Sequence[Sequence[Any]]) -> None:
        if table == "vectors" and self.KEYED and cols == "hash, model, dim, vector":  # dim is derived (migration 8)
            cols, rows = "hash, model, vector", [(r[0], r[1], r[3]) for r in rows]
        self._insert_rows(f"INSERT INTO {table}({cols})", rows)

    def _importing(self, table: str) -> None:
        self._import_top = sqlite_vectors.top(self._db) if table == "vectors" and self.KEYED else None

    def _imported(self, table: str) -> None:
        if table == "vectors" and self._import_top is not None:
            sqlite_vectors.keyed(self._db, self._import_top)
        self._import_top = None

    def export_rows(self, table: str, after: Sequence[Any] | None = None,
                    limit: int = transfer.PAGE) -> tuple[list[dict[str, Any]], list[Any] | None]:
        if table != "vectors" or not self.KEYED:
            return super().export_rows(table, after, limit)
        return sqlite_vectors.export_rows(self, after, limit)

    def _table_exists(self, name: str) -> bool:
        return bool(self._read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def _physical_problems(self) -> list[str]:
        return [r[0] for r in self._read("PRAGMA integrity_check") if r[0] != "ok"]

    def _sizes(self) -> dict[str, Any]:
        try:  # bytes by table (indexes counted with their table); dbstat is compiled into most builds
            tables = dict(self._read(
                "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d LEFT JOIN sqlite_master m "
                "ON m.name = d.name GROUP BY 1 ORDER BY 1"))
        except sqlite3.OperationalError:
            tables = {}
        files = {}
        if not self.in_memory:
            for suffix in ("", "-wal", "-shm"):
                target = Path(f"{self.path}{suffix}")
                files[target.name] = os.path.getsize(target) if target.exists() else 0
        page = self._read("PRAGMA page_size")[0][0]
        pages, free = self._read("PRAGMA page_count")[0][0], self._read("PRAGMA freelist_count")[0][0]
        return {"total": sum(files.values()) if files else pages * page, "files": files, "tables": tables,
                "page_size": page, "free_pages": free}

    # --- nodes -----------------------------------------------------------------------------
    def _check_text(self, nodes: Sequence[Node]) -> None:
        """SQLite text holds anything, NUL characters included."""

    def _versions_as_of(self, cols: str, as_of: str) -> tuple[str, list[Any]]:
        if self.CURRENT_IN_VERSIONS:  # schema 5 and before
            return (f"SELECT {cols} FROM node_versions v WHERE v.recorded_at <= ? AND v.version = (SELECT "
                    "max(version) FROM node_versions w WHERE w.id = v.id AND w.recorded_at <= ?)", [as_of, as_of])
        # The live row when it was recorded by then (it is the latest version), else the latest superseded one: two
        # index-driven arms (through the versions view the planner would build a temporary index per query)
        return (f"SELECT {cols} FROM nodes v WHERE v.recorded_at <= ? UNION ALL SELECT {cols} FROM node_versions v "
                "WHERE v.recorded_at <= ? AND NOT EXISTS (SELECT 1 FROM nodes w WHERE w.id = v.id AND "
                "w.recorded_at <= ?) AND v.version = (SELECT max(version) FROM node_versions w WHERE w.id = v.id "
                "AND w.recorded_at <= ?)", [as_of] * 4)

    def _filter_tags(self, where: Where, tags: list[str], as_of: str | None) -> None:
        if as_of is not None:  # the tags the node had then, from the version row
            for tag in tags:
                where.add("EXISTS (SELECT 1 FROM json_each(n.tags) j WHERE j.value = ?)", tag)
            return
        if len(tags) == 1:  # one tag: a range of the (tag, rid) key, no grouping (a conversation's turns)
            where.add("n.rid IN (SELECT t.rid FROM node_tags t WHERE t.tag = ?)", tags[0])
            # Read the tag's rows and look each node up by rid. Left to itself (no statistics) the planner walks
            # the (namespace, kind) index instead: every memory of the namespace, for a tag that may hold none
            # (a new conversation), a cost that grew with the store.
            where.hint = " NOT INDEXED"
            return
        where.add(f"n.id IN (SELECT x.id FROM nodes x JOIN node_tags t ON t.rid = x.rid WHERE t.tag IN "
                  f"({','.join('?' * len(tags))}) GROUP BY x.id HAVING count(DISTINCT t.tag) = {len(tags)})", *tags)

    def _write_nodes(self, changed: list[tuple[Node, tuple | None, str]], existing: dict[str, tuple]) -> None:
        sqlite_nodes.write_nodes(self, changed)

    def _import_nodes(self, rows: list[tuple]) -> None:
        """Copied rows keep their order; the text index holds the live ones, the tag rows all of them."""
        top = self._db.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0]
        seq = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'nodes'").fetchone()
        top = max(top, seq[0] if seq else 0)
        marks = ",".join("?" * (len(rows[0]) + 1)) if rows else ""
        cols = transfer.TABLES["nodes"][1]
        text, content = cols.index("embed_text"), cols.index("content")
        self._db.executemany(f"INSERT INTO nodes(rid, {', '.join(cols)}) VALUES ({marks})",
                             [(top + 1 + i, *r[:text], None if r[text] == r[content] else r[text], *r[text + 1:])
                              for i, r in enumerate(rows)])
        fts, tags = [], []
        for i, r in enumerate(rows):
            rid, labels = top + 1 + i, json.loads(r[8]) if r[8] else []
            if r[12] is None:  # retracted_at: only live nodes are searchable
                fts.append((rid, r[3], r[4], r[5], r[6], " ".join(labels)))
            tags.extend((rid, t) for t in set(labels))
        self._db.executemany("INSERT INTO fts(rowid, key, title, summary, content, tags) VALUES (?,?,?,?,?,?)", fts)
        self._db.executemany("INSERT OR IGNORE INTO node_tags(rid, tag) VALUES (?,?)", tags)
        # A version row copied before its node is the live row now (migration 6: the current version is held once)
        if not self.CURRENT_IN_VERSIONS:
            self._db.execute("DELETE FROM node_versions WHERE (id, version) IN (SELECT id, version FROM nodes "
                             "WHERE rid > ?)", (top,))

    def _import_versions(self, rows: list[tuple]) -> None:
        """Copied versions, but the current ones: a node's live row is its current version (migration 6)."""
        if self.CURRENT_IN_VERSIONS:
            return super()._import_versions(rows)
        cols = transfer.TABLES["node_versions"][1]
        ident, version = cols.index("id") + 1, cols.index("version") + 1
        marks = ", ".join(f"?{i}" for i in range(1, len(cols) + 1))
        self._db.executemany(
            f"INSERT INTO node_versions({', '.join(cols)}) SELECT {marks} "
            f"WHERE NOT EXISTS (SELECT 1 FROM nodes WHERE id = ?{ident} AND version = ?{version})", rows)

    def _unindex(self, rids: Sequence[int], purge: bool) -> None:
        """Retracted nodes leave the text index; purged (and rewritten) ones their tag rows too. Called while the
        rows still hold what was indexed: the index is contentless (migration 5), so a row leaves it by the 'delete'
        command given the values it was indexed with (its live row's; a retracted row is not in the index)."""
        for chunk in self._chunks(list(rids)):
            marks = ",".join("?" * len(chunk))
            indexed = self._db.execute(f"SELECT rid, key, title, summary, content, tags FROM nodes WHERE rid IN "
                                       f"({marks}) AND retracted_at IS NULL", chunk).fetchall()
            self._db.executemany(FTS_DELETE, [(*r[:5], " ".join(json.loads(r[5]) if r[5] else ())) for r in indexed])
            if purge:
                self._db.execute(f"DELETE FROM node_tags WHERE rid IN ({marks})", chunk)

    def _prop_in(self, where: Where, name: str, values: list[str]) -> None:
        where.parts.append(f"json_extract(n.props, '$.{name}') IN ({','.join('?' * len(values))})")
        where.params.extend(values)

    # --- text index ------------------------------------------------------------------------
    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None,
                    within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        return self._text.text_search(query, namespace, kind, limit, common, ids, within)

    def _props_hold(self, where: Where, path: list[str], value: str) -> None:
        # json_each walks a list's elements, or yields the one value a scalar is
        where.add("EXISTS (SELECT 1 FROM json_each(n.props, ?) j WHERE j.value = ?)", "$." + ".".join(path), value)

    def phrase_search(self, phrase: str, namespace=None, kind=None, limit: int | None = None) -> list[str]:
        return self._text.phrase_search(phrase, namespace, kind, limit)

    # --- erasure ---------------------------------------------------------------------------
    def scrub(self, tables: Sequence[str] | None = None, strict: bool = True) -> dict[str, Any]:
        """Deleted rows are already unreadable inside the file: ``secure_delete`` zeroes freed cells and pages, and
        the text index's ``secure-delete`` drops a row's terms. What the WAL still holds of the old pages goes with a
        TRUNCATE checkpoint: the new pages are copied into the file and the WAL is cut to zero bytes (waiting, up to
        the busy timeout, for readers of older snapshots). ``tables`` and ``strict`` change nothing here."""
        with self._lock:
            zeroing = bool(self._read("PRAGMA secure_delete")[0][0])
            fts = self._read("SELECT v FROM fts_config WHERE k = 'secure-delete'")
            fts_secure = bool(fts and fts[0][0])
            out: dict[str, Any] = {"backend": self.backend, "secure_delete": zeroing, "fts_secure_delete": fts_secure}
            clean = zeroing and fts_secure
            if self.in_memory:
                out["checkpoint"] = "none: the store lives in this process's memory"
            else:
                busy = 1
                for _ in range(3):
                    busy = self._guard(lambda: self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())[0]
                    if not busy:
                        break
                wal = Path(f"{self.path}-wal")
                wal_bytes = os.path.getsize(wal) if wal.exists() else 0
                out["checkpoint"] = {"mode": "TRUNCATE", "busy": bool(busy), "wal_bytes": wal_bytes}
                clean = clean and not busy and wal_bytes == 0
        out["status"] = "clean" if clean else "incomplete"
        out["may_remain"] = [
            "copies of the store file made before the erasure (backups, snapshots, synced folders)",
            "blocks the filesystem or the storage device freed but did not overwrite (journaling, SSD wear levelling)",
        ]
        if not clean:
            out["may_remain"].insert(0, "the WAL file or unzeroed pages of the store file: another process held an "
                                        "old snapshot open for longer than the busy timeout; erase again later")
        return out

    # --- vectors ---------------------------------------------------------------------------
    def _vector_value(self, vector: np.ndarray) -> bytes:
        return vector.tobytes()

    def _decode_vectors(self, raws: Sequence[bytes]) -> np.ndarray:
        return np.frombuffer(b"".join(raws), dtype=np.float32).reshape(len(raws), -1)
