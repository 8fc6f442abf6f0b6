"""``SQLStore``: everything both SQL backends share, written once.

Transactions (one moment per transaction, nested calls join), schema migrations, version planning, node and
edge writes, tombstones, vectors, records, the audit log and the change log. The shared read queries over nodes,
edges and vectors are in ``sql_reads.py``, ``info()`` and ``check_integrity()`` in ``sql_info.py``; the class
delegates to them one line each, as it does to ``scrub.py`` (erasure) and ``transfer.py`` (copies). A backend
(``SQLiteStore``, ``PostgresStore``) subclasses it and supplies only its dialect: how to connect, begin and
commit, how ``column IN values`` is spelled (``Where``), how rows are written in bulk, the text index, the
vector encoding, the as-of view of the versions table, and its sizes on disk.

Shared SQL is written with ``?`` placeholders; ``_q`` turns them into the driver's (``%s`` for psycopg), and a
``Where`` does the same for the conditions it collects.
"""
from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from ..errors import ValidationError
from ..ids import check_id, id_problem
from ..model import Change, Edge, Node, utcnow
from .base import Adjacency, Capability, EdgeColumns, Frontier, NodeBrief, TimedEdges
from . import scrub, sql_info, sql_reads, transfer
from .migrations import Migrations, applied, upgrade
from .rows import (EDGE_COLS, EXISTING_COLS, NODE_COLS, Where, as_list, plan_edges, plan_versions, put_detail,
                   row_to_node)

T = TypeVar("T")
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


def refuse_not_finite(hashes: Sequence[str], arrays: Sequence[np.ndarray]) -> None:
    """ValidationError naming the first vector holding NaN or infinity (checked a matrix at a time)."""
    if not arrays:
        return
    if len({a.shape for a in arrays}) == 1:
        ok = np.isfinite(np.stack(arrays)).all(axis=1)
    else:
        ok = np.array([np.isfinite(a).all() for a in arrays])
    if not ok.all():
        h = hashes[int(np.flatnonzero(~ok)[0])]
        raise ValidationError(f"vector for {h} holds NaN or infinity; only finite values can be stored (check the "
                              "embedder's output)", hash=h)


class SQLStore(ABC):
    """The store protocol (``base.Store``) over SQL; subclasses hold one connection ``_db`` and the dialect."""

    backend: str
    MIGRATIONS: Migrations
    PLACEHOLDER = "?"
    VECTOR_DTYPE: type = np.float32  # what a vector is held as (base.Store)
    EMBED_TEXT = "coalesce(n.embed_text, n.content)"  # a node's whole text to embed (rows.held_embed_text)
    CHUNK: int | None = None  # the most values one ``IN`` list may hold (None: arrays, no limit)
    NO_LIMIT = "ALL"  # what LIMIT says for "no limit" before an OFFSET
    EDGE_SCAN = ""  # a hint that makes the one-pass edge scan a table scan
    # How a vector row is found from a node (``n``) or a version (``w``) by hash: plain equality, unless the backend
    # indexes a short prefix of the random hashes (SQLite, migration 5)
    VECTOR_JOIN = "v.hash = n.embed_hash"
    VERSION_USES = "w.embed_hash = vectors.hash"
    LIVE_USES = VERSION_USES  # the same question asked of the live rows (``w`` is a row of nodes)
    PAGE_SEEK: dict[str, str] = {}  # table: an indexed expression whose order leads its copy order (export pages)
    # Where every version of a node reads from, the current one included: node_versions holds them all, unless the
    # backend keeps only superseded versions there and the live row is the current one (SQLite, migration 6)
    VERSIONS = "node_versions"
    CURRENT_IN_VERSIONS = True
    LIKE_ANY_CASE = "ILIKE"  # a pattern match that folds case (SQLite's LIKE folds ASCII letters by itself)
    COPY_ARMS: dict[str, tuple[str, ...]] = {}  # table: the tables its copy reads, merged in page order
    # The tombstones' key (the upsert's ON CONFLICT target), and what a tombstone naming no namespace stores (PostgreSQL
    # keys them by (id, namespace) from its migration 7, so the namespace cannot be NULL there)
    TOMBSTONE_KEY = "id"
    NO_NAMESPACE: str | None = None
    capabilities: frozenset[Capability] = frozenset({Capability.PERSISTENT, Capability.SHARED})
    _db: Any

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self._timeout = timeout
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_at = ""
        self._closed = False

    # --- the dialect ---------------------------------------------------------------------------
    @abstractmethod
    def _begin(self) -> None:
        """Open a write transaction holding this store's writer lock."""

    @abstractmethod
    def _commit(self) -> None: ...

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
    def _unindex(self, rids: Sequence[int], purge: bool) -> None:
        """Drop text-index (and, when purging, tag) rows the backend keeps beside the nodes."""

    def _hash_in(self, column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
        """``column IN hashes`` for a column of content hashes (at most ``CHUNK`` of them)."""
        return self._in(column, hashes)

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

    def _now(self) -> str:
        return self._tx_at if self._depth else utcnow()

    def _log(self, at: str, actor: str, op: str, target: str, namespace: str = "", detail: dict | None = None) -> None:
        self._exec(self._q(CHANGE_INSERT), (at, actor, op, target, namespace, json.dumps(detail or {})))

    # --- lifecycle and schema ------------------------------------------------------------------
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
            self._begin()
            self._tx_at = utcnow()  # one transaction, one moment: as_of sees all of it or none
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            self._commit()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._db.close()

    def _open(self) -> None:
        """Bring the schema up to date (``migrations.upgrade``); on failure close the connection and raise."""
        try:
            upgrade(self)
        except BaseException:
            self._closed = True
            self._db.close()
            raise

    def schema_version(self) -> int:
        done = applied(self)
        return done[-1]["version"] if done else 0

    def info(self) -> dict[str, Any]:
        return sql_info.info(self)

    def check_integrity(self) -> str:
        return sql_info.check_integrity(self)

    # --- nodes ---------------------------------------------------------------------------------
    def put_nodes(self, nodes: Sequence[Node], actor: str = "", at: str | None = None) -> list[int]:
        at = at or self._now()
        ids = [n.id for n in nodes]
        if len(set(ids)) != len(ids):
            raise ValidationError("put_nodes got the same id twice in one call; merge them first")
        bad = [i for i in ids if id_problem(i) is not None]
        if bad:  # a new record needs a good id (ids.py); one made before the rule may still change
            self._refuse_new(bad, "node id")
        self._check_text(nodes)
        with self.transaction():
            existing: dict[str, tuple] = {}
            for chunk in self._chunks(ids):
                clause, params = self._in("id", chunk)
                for row in self._db.execute(f"SELECT {EXISTING_COLS} FROM nodes WHERE {clause}", params):
                    existing[row[0]] = row
            versions, changed = plan_versions(nodes, existing, at, actor)
            if changed:
                self._write_nodes(changed, existing)
                self._bulk_insert("changes", CHANGE_COLS, [(at, actor, "node.put", node.id, node.namespace,
                                                            put_detail(node)) for node, _, _ in changed])
        return versions

    def _refuse_new(self, ids: Sequence[Any], what: str) -> None:
        """ValidationError (``ids.check_id``) for the first of ``ids`` no node of this store has (live or retracted):
        an id that breaks the rule is refused for a new record; a node stored before the rule may still change."""
        known: set[str] = set()
        for chunk in self._chunks(list(dict.fromkeys(i for i in ids if isinstance(i, str) and self._storable(i)))):
            clause, params = self._in("id", chunk)
            known.update(r[0] for r in self._read(f"SELECT id FROM nodes WHERE {clause}", params))
        for i in ids:
            if not isinstance(i, str) or i not in known:
                check_id(i, what)

    def _storable(self, text: str) -> bool:
        """Whether the backend's text can hold ``text`` at all (so that a node may have it as its id)."""
        return True

    def get_node(self, id: str, as_of: str | None = None, include_retracted: bool = False) -> Node | None:
        if as_of is None and include_retracted:
            rows = self._read(self._q(f"SELECT {NODE_COLS} FROM nodes WHERE id = ?"), (id,))
            return row_to_node(rows[0]) if rows else None
        return self.get_nodes([id], as_of=as_of).get(id)

    def get_nodes(self, ids: Iterable[str], as_of: str | None = None,
                  include_retracted: bool = False) -> dict[str, Node]:
        return sql_reads.get_nodes(self, ids, as_of, include_retracted)

    def _node_where(self, namespace, kind, key_prefix, keys, tags, valid_at, as_of=None) -> Where:
        return sql_reads.node_where(self, namespace, kind, key_prefix, keys, tags, valid_at, as_of)

    def find_nodes(self, namespace=None, kind=None, key_prefix=None, keys=None, tags=None, valid_at=None,
                   as_of=None, order="key", offset=0, limit=None, with_content=True) -> list[Node]:
        return sql_reads.find_nodes(self, namespace, kind, key_prefix, keys, tags, valid_at, as_of, order, offset,
                                    limit, with_content)

    def node_index(self, namespace, as_of: str | None = None) -> list[tuple]:
        return sql_reads.node_index(self, namespace, as_of)

    def node_ids(self, namespace=None, include_retracted: bool = False) -> list[str]:
        return sql_reads.node_ids(self, namespace, include_retracted)

    def node_briefs(self, ids: Sequence[str]) -> dict[str, NodeBrief]:
        return sql_reads.node_briefs(self, ids)

    def get_contents(self, ids: Sequence[str], as_of: str | None = None) -> dict[str, str]:
        return sql_reads.get_contents(self, ids, as_of)

    def count_nodes(self, namespace=None, kind=None) -> int:
        return sql_reads.count_nodes(self, namespace, kind)

    def count_by_kind(self, namespace=None) -> dict[str, int]:
        return sql_reads.count_by_kind(self, namespace)

    def node_versions(self, id: str) -> list[Node]:
        rows = self._read(self._q(f"SELECT {NODE_COLS} FROM {self.VERSIONS} WHERE id = ? ORDER BY version"), (id,))
        return [row_to_node(r) for r in rows]

    def node_version(self, id: str, version: int) -> Node | None:
        rows = self._read(self._q(f"SELECT {NODE_COLS} FROM {self.VERSIONS} WHERE id = ? AND version = ?"),
                          (id, version))
        return row_to_node(rows[0]) if rows else None

    def namespaces(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT DISTINCT namespace FROM nodes WHERE retracted_at IS NULL ORDER BY namespace")]

    def nodes_naming(self, prop: str, values: Sequence[str], namespace=None, kind=None) -> list[Node]:
        return sql_reads.nodes_naming(self, prop, values, namespace, kind)

    def retract_nodes(self, ids: Sequence[str], actor: str = "", at: str | None = None,
                      edges: str = "both") -> int:
        if edges not in ("both", "outbound"):
            raise ValidationError(f"edges={edges!r}: use both or outbound", edges=edges)
        at = at or self._now()
        count = 0
        with self.transaction():
            for chunk in self._chunks(list(ids), per_statement=2):
                clause, params = self._in("id", chunk)
                rows = self._db.execute(f"SELECT id, rid, namespace FROM nodes WHERE {clause} "
                                        "AND retracted_at IS NULL ORDER BY rid", params).fetchall()
                if not rows:
                    continue
                live, live_params = self._tenant_rows([r[0] for r in rows], [r[2] for r in rows])
                self._unindex([r[1] for r in rows], purge=False)  # while the rows still hold what was indexed
                if self.CURRENT_IN_VERSIONS:  # the retraction is a version row of its own
                    self._exec(self._q(
                        f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT id, kind, namespace, key, title, "
                        "summary, content, props, tags, valid_from, valid_until, ?, ?, version + 1, content_hash, "
                        f"created_by, embed_hash, tokens, NULL FROM nodes WHERE {live}"), [at, at, *live_params])
                else:  # the live row becomes the retraction; the version it held is superseded
                    self._exec(f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT {NODE_COLS}, NULL "
                               f"FROM nodes WHERE {live}", live_params)
                self._exec(self._q(f"UPDATE nodes SET retracted_at = ?, recorded_at = ?, version = version + 1 "
                                   f"WHERE {live}"), [at, at, *live_params])
                src, src_params = self._in("src", [r[0] for r in rows])
                if edges == "both":
                    dst, dst_params = self._in("dst", [r[0] for r in rows])
                    self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND "
                                       f"({src} OR {dst})"), [at, *src_params, *dst_params])
                else:
                    self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND {src}"),
                               [at, *src_params])
                self._execmany(self._q(CHANGE_INSERT), [(at, actor, "node.retract", r[0], r[2], "{}") for r in rows])
                count += len(rows)
        return count

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "",
                    at: str | None = None, erasure: str | None = None) -> dict[str, int]:
        at = at or self._now()
        totals = {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0}
        with self.transaction():
            for chunk in self._chunks(list(ids), per_statement=2):
                clause, params = self._in("id", chunk)
                rows = self._db.execute(f"SELECT id, rid, namespace, kind FROM nodes WHERE {clause} ORDER BY rid",
                                        params).fetchall()
                hashes = [h for (h,) in self._db.execute(
                    f"SELECT DISTINCT embed_hash FROM {self.VERSIONS} WHERE {clause} AND embed_hash IS NOT NULL",
                    params)]
                self._unindex([r[1] for r in rows], purge=True)
                totals["versions"] += self._exec(f"DELETE FROM node_versions WHERE {clause}", params)
                src, src_params = self._in("src", chunk)
                dst, dst_params = self._in("dst", chunk)
                totals["edges"] += self._exec(f"DELETE FROM edges WHERE {src} OR {dst}", [*src_params, *dst_params])
                held, held_params = self._tenant_rows([r[0] for r in rows], [r[2] for r in rows])
                purged = self._exec(f"DELETE FROM nodes WHERE {held}", held_params) if rows else 0
                totals["nodes"] += purged
                if not self.CURRENT_IN_VERSIONS:
                    totals["versions"] += purged  # each live row was its node's current version
                for part in self._chunks(hashes):  # vectors no version of any other node still uses
                    used, used_params = self._hash_in("hash", part)
                    totals["vectors"] += self._exec(
                        f"DELETE FROM vectors WHERE {used} AND {self._vectors_unused()}", used_params)
                self._execmany(self._q(tombstone_upsert(self.TOMBSTONE_KEY)),
                               [(r[0], r[2], r[3], at, reason, actor, erasure) for r in rows])
                self._execmany(self._q(CHANGE_INSERT), [(at, actor, "node.purge", r[0], r[2],
                                                         json.dumps({"reason": reason})) for r in rows])
        return totals

    # --- tombstones ------------------------------------------------------------------------------
    def tombstone(self, id: str) -> dict[str, Any] | None:
        found = self.tombstones(ids=[id])
        return found[-1] if found else None  # the latest (PostgreSQL keeps one per namespace an id was purged in)

    def tombstones(self, namespace=None, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        where = self._where()
        where.eq_any("namespace", as_list(namespace))
        where.eq_any("id", as_list(ids))
        rows = self._read(f"SELECT id, namespace, kind, purged_at, reason, actor, erasure FROM tombstones"
                          f"{where.sql()} ORDER BY purged_at, id", where.params)
        return [{"id": r[0], "namespace": r[1], "kind": r[2], "purged_at": r[3], "reason": r[4], "actor": r[5],
                 "erasure": r[6]} for r in rows]

    def put_tombstones(self, rows: Sequence[dict[str, Any]]) -> int:
        for r in rows:
            check_id(r["id"], "tombstone id")
        with self.transaction():
            self._execmany(self._q(tombstone_upsert(self.TOMBSTONE_KEY)), [
                (r["id"], self.NO_NAMESPACE if r.get("namespace") is None else r["namespace"], r.get("kind"),
                 r.get("purged_at"), r.get("reason"), r.get("actor"), r.get("erasure")) for r in rows])
            if rows:
                self._log(self._now(), "", "tombstones.put", "*", "", {"count": len(rows)})
        return len(rows)

    # --- erasure (store/scrub.py holds the SQL both backends share) -------------------------------
    def find_by_props(self, path: Sequence[str], value: str, namespace=None, kind=None,
                      include_retracted: bool = False) -> list[str]:
        where = self._where()
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        if not include_retracted:
            where.add("n.retracted_at IS NULL")
        self._props_hold(where, scrub.key_path(path), value)
        return [r[0] for r in self._read(f"SELECT n.id FROM nodes n{where.sql()} ORDER BY n.rid", where.params)]

    @abstractmethod
    def _props_hold(self, where: Where, path: list[str], value: str) -> None:
        """Keep nodes whose props hold ``value`` at ``path`` (equal, or an element of a list)."""

    def erased(self, ids: Sequence[str]) -> set[str]:
        return scrub.erased(self, ids)

    def nodes_holding(self, needles: Sequence[str]) -> list[str]:
        return scrub.nodes_holding(self, needles)

    def purge_history(self, ids: Sequence[str], actor: str = "") -> dict[str, int]:
        return scrub.purge_history(self, ids, actor)

    def redact_audit(self, targets: Sequence[str], note: dict[str, Any]) -> int:
        return scrub.redact_audit(self, targets, note)

    # --- edges ---------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        with self.transaction():
            keyed = {e.id: e for e in edges}
            current: dict[str, tuple] = {}
            for chunk in self._chunks(list(keyed)):
                clause, params = self._in("eid", chunk)
                for row in self._db.execute("SELECT eid, weight, props, valid_from, valid_until, position, namespace "
                                            f"FROM edges WHERE retracted_at IS NULL AND {clause}", params):
                    current[row[0]] = row
            fresh = [e for eid, e in keyed.items() if eid not in current]
            bad = [end for e in fresh for end in (e.src, e.dst) if id_problem(end) is not None]
            if bad:  # a new edge's ends need good ids, unless they are nodes stored before the rule
                self._refuse_new(bad, "edge endpoint")
            for e in fresh:
                check_id(e.type, "edge type")
            inserts, retire, new = plan_edges(keyed, current, at)
            for chunk in self._chunks(retire, per_statement=2):  # eids and their namespaces
                clause, params = self._tenant_rows(chunk, [current[eid][6] for eid in chunk], "eid")
                self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND {clause}"),
                           [at, *params])
            if inserts:
                inserts.sort(key=lambda row: row[0])  # eid order: the live-eid index fills in order (~40% faster)
                self._bulk_insert("edges", f"eid, {EDGE_COLS}", inserts)
                namespaces = sorted({row[4] for row in inserts})
                one = namespaces[0] if len(namespaces) == 1 else None
                self._log(at, actor, "edges.put", one or "*", one or "",
                          {"count": len(inserts), "new": new, "namespaces": namespaces[:20]})
        return new

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        count = 0
        with self.transaction():
            for chunk in self._chunks(list(ids)):
                clause, params = self._in("eid", chunk)
                count += self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND "
                                            f"{clause}"), [at, *params])
            if count:
                self._log(at, actor, "edges.retract", "*", "", {"count": count})
        return count

    def edges(self, src=None, dst=None, type=None, namespace=None, as_of=None, valid_at=None,
              min_weight=None, offset=0, limit=None, include_retracted: bool = False) -> list[Edge]:
        return sql_reads.edges(self, src, dst, type, namespace, as_of, valid_at, min_weight, offset, limit,
                               include_retracted)

    def count_edges(self, namespace=None, type=None) -> int:
        return sql_reads.count_edges(self, namespace, type)

    def count_edges_by_type(self, namespace=None) -> dict[str, int]:
        return sql_reads.count_edges_by_type(self, namespace)

    def adjacency(self, namespace=None, types=None, as_of=None, valid_at=None) -> Adjacency:
        return sql_reads.adjacency(self, namespace, types, as_of, valid_at)

    def edge_columns(self, namespace=None) -> EdgeColumns:
        return sql_reads.edge_columns(self, namespace)

    def edges_touching(self, ids: Sequence[str], side: str = "src", types: Sequence[str] | None = None,
                       min_weight: float | None = None) -> Frontier:
        return sql_reads.edges_touching(self, ids, side, types, min_weight)

    def timed_edges(self, namespace=None) -> TimedEdges:
        return sql_reads.timed_edges(self, namespace)

    def edge_history(self, namespace=None) -> list[Edge]:
        return sql_reads.edge_history(self, namespace)

    # --- vectors -------------------------------------------------------------------------------
    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int:
        arrays = [np.asarray(vec, dtype=np.float32) for vec in vectors.values()]
        for h, arr in zip(vectors, arrays):
            if arr.ndim != 1 or not arr.size:
                raise ValidationError(f"vector for {h} must be one non-empty row, got shape {arr.shape}", hash=h)
        refuse_not_finite(list(vectors), arrays)
        value = self._vector_value
        rows = [(h, model, arr.shape[0], value(arr)) for h, arr in zip(vectors, arrays)]
        with self.transaction():
            self._upsert_vectors(rows)
            if rows:
                self._log(self._now(), "", "vectors.put", model, "", {"count": len(rows)})
        return len(rows)

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        count = 0
        with self.transaction():
            for chunk in self._chunks(list(dict.fromkeys(hashes))):
                clause, params = self._hash_in("hash", chunk)
                count += self._exec(f"DELETE FROM vectors WHERE {clause}", params)
            if count:
                self._log(self._now(), "", "vectors.delete", "*", "", {"count": count})
        return count

    def get_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        return sql_reads.get_vectors(self, hashes, model)

    def missing_vectors(self, model: str, namespace=None) -> list[tuple[str, str]]:
        return sql_reads.missing_vectors(self, model, namespace)

    def count_vectors(self, model: str, namespace=None, kind=None) -> int:
        return sql_reads.count_vectors(self, model, namespace, kind)

    def load_vectors(self, model: str, namespace=None, kind=None) -> tuple[list[str], np.ndarray]:
        return sql_reads.load_vectors(self, model, namespace, kind)

    # --- records, audit and the change log -------------------------------------------------------
    def put_record(self, kind: str, key: str, value: dict[str, Any], actor: str = "") -> None:
        self.put_records(kind, {key: value}, actor)

    def put_records(self, kind: str, values: dict[str, dict[str, Any]], actor: str = "") -> None:
        at = self._now()
        with self.transaction():
            self._execmany(self._q(
                "INSERT INTO records(kind, key, value, updated_at) VALUES (?,?,?,?) ON CONFLICT (kind, key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"),
                [(kind, key, json.dumps(value, sort_keys=True, default=str), at) for key, value in values.items()])
            self._execmany(self._q(CHANGE_INSERT), [(at, actor, "record.put", f"{kind}/{key}", "", "{}")
                                                    for key in values])

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

    def export_rows(self, table: str, after: Sequence[Any] | None = None,
                    limit: int = transfer.PAGE) -> tuple[list[dict[str, Any]], list[Any] | None]:
        return transfer.export_rows(self, table, after, limit)

    def import_rows(self, table: str, batches: Iterable[Sequence[dict[str, Any]]]) -> int:
        return transfer.import_rows(self, table, batches)

    def _tags_value(self, tags: list[str]) -> Any:
        """Tags as the backend stores them."""
        return json.dumps(tags)

    def _import_nodes(self, rows: list[tuple]) -> None:
        """Insert copied live rows (``transfer.TABLES`` columns) in order, and index them."""
        self._bulk_insert("nodes", ", ".join(transfer.TABLES["nodes"][1]), rows)

    def _import_versions(self, rows: list[tuple]) -> None:
        """Insert copied version rows (``transfer.TABLES`` columns), every version of each node."""
        self._bulk_insert("node_versions", ", ".join(transfer.TABLES["node_versions"][1]), rows)

    def _check_import(self, table: str, rows: list[tuple]) -> None:
        """Refuse copied values the backend cannot store (as ``_check_text`` refuses them on writes)."""
        return None

    def _imported(self, table: str) -> None:
        """After a table's copied rows went in (sequences, indexes): nothing, unless the backend keeps such."""
        return None

    def change_counter(self) -> int:
        return self._read("SELECT coalesce(max(seq), 0) FROM changes")[0][0]

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        page = f" LIMIT {int(limit)}" if limit else ""
        rows = self._read(self._q(f"SELECT seq, at, actor, op, target, namespace, detail FROM changes WHERE seq > ? "
                                  f"ORDER BY seq{page}"), (seq,))
        return [Change(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]
