"""``SQLStore``: the store protocol (``base.Store``) over SQL, written once for both backends, composed of parts.

The store holds one connection and its dialect (``sql_dialect.SQLDialect``: what a backend supplies, and the
plumbing over it), its transactions (one moment per transaction, nested calls join), its schema (``migrations``)
and the change log's one writer (``_log``). Each role is a part holding the store (``sql_part.Part``) and reaching
its connection and dialect under the store's own names: ``sql_nodes.Nodes`` (node writes and versions),
``sql_edges.Edges``, ``sql_vectors.Vectors``, ``sql_records.Records`` (records, the audit and change logs),
``sql_erasure.Erasure`` (purges and tombstones). The shared reads over nodes, edges and vectors are the
functions of ``sql_reads.py``, ``info()`` and ``check_integrity()`` those of ``sql_info.py``, the rest of an
erasure ``scrub.py`` and whole-store copies ``transfer.py``. Each public method here is one line handing the call
to its part or module. A backend (``SQLiteStore``, ``PostgresStore``) subclasses it and supplies only its dialect.
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..ids import check_id
from ..model import Change, Edge, Node, utcnow
from .base import Adjacency, Capability, EdgeColumns, Frontier, NodeBrief, TimedEdges
from . import scrub, sql_info, sql_reads, transfer
from .migrations import Migrations, applied, upgrade
from .sql_dialect import SQLDialect
from .sql_edges import Edges
from .sql_erasure import Erasure
from .sql_nodes import Nodes
from .sql_part import CHANGE_INSERT
from .sql_records import Records
from .sql_vectors import Vectors
from .rows import Where


class SQLStore(SQLDialect):
    """The store protocol (``base.Store``) over SQL; subclasses hold one connection ``_db`` and the dialect."""

    backend: str
    MIGRATIONS: Migrations
    VECTOR_DTYPE: type = np.float32  # what a vector is held as (base.Store)
    CHANGE_AT = "at"  # the change log's time as its text (PostgreSQL's schema 17 renders a timestamp: pg_changes)
    CHANGE_OP = "op"  # its operation's name (PostgreSQL's schema 18 holds an id: pg_changes)
    capabilities: frozenset[Capability] = frozenset({Capability.PERSISTENT, Capability.SHARED})

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self._timeout = timeout
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_at = ""
        self._closed = False
        self._nodes = Nodes(self)
        self._edges = Edges(self)
        self._vectors = Vectors(self)
        self._records = Records(self)
        self._erasure = Erasure(self)

    def _now(self) -> str:
        return self._tx_at if self._depth else utcnow()

    def _log(self, at: str, actor: str, op: str, target: str, namespace: str = "", detail: dict | None = None) -> None:
        self._insert_changes([(at, actor, op, target, namespace, json.dumps(detail or {}))])

    def _insert_changes(self, rows: Sequence[Sequence[Any]]) -> None:
        """Change-log rows (``sql_part.CHANGE_COLS``: the time as the text written first)."""
        self._execmany(self._q(CHANGE_INSERT), rows)

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
            except BaseException as exc:
                self._depth = 0
                self._rollback()
                self._raise_refused(exc)
                raise
            self._depth = 0
            try:
                self._commit()  # (its own steps too: an index a large vector load builds after its rows)
            except BaseException as exc:
                self._raise_refused(exc)
                raise

    def _raise_refused(self, exc: BaseException) -> None:
        """The server refused the role a table (or the owner's right to build an index): ours, naming the grant."""
        refused = self._refused(exc)
        if refused is not None:
            raise refused from exc

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
        return self._nodes.put_nodes(nodes, actor, at)

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
        return self._nodes.get_node(id, as_of, include_retracted)

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
        return self._nodes.node_versions(id)

    def node_version(self, id: str, version: int) -> Node | None:
        return self._nodes.node_version(id, version)

    def namespaces(self) -> list[str]:
        return self._nodes.namespaces()

    def nodes_naming(self, prop: str, values: Sequence[str], namespace=None, kind=None) -> list[Node]:
        return sql_reads.nodes_naming(self, prop, values, namespace, kind)

    def retract_nodes(self, ids: Sequence[str], actor: str = "", at: str | None = None,
                      edges: str = "both") -> int:
        return self._nodes.retract_nodes(ids, actor, at, edges)

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "",
                    at: str | None = None, erasure: str | None = None) -> dict[str, int]:
        return self._erasure.purge_nodes(ids, reason, actor, at, erasure)

    # --- tombstones ------------------------------------------------------------------------------
    def tombstone(self, id: str) -> dict[str, Any] | None:
        found = self.tombstones(ids=[id])
        return found[-1] if found else None  # the latest (PostgreSQL keeps one per namespace an id was purged in)

    def tombstones(self, namespace=None, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return self._erasure.tombstones(namespace, ids)

    def put_tombstones(self, rows: Sequence[dict[str, Any]]) -> int:
        return self._erasure.put_tombstones(rows)

    # --- erasure (store/scrub.py holds the SQL both backends share) -------------------------------
    def find_by_props(self, path: Sequence[str], value: str, namespace=None, kind=None,
                      include_retracted: bool = False) -> list[str]:
        return self._erasure.find_by_props(path, value, namespace, kind, include_retracted)

    def erased(self, ids: Sequence[str]) -> set[str]:
        return scrub.erased(self, ids)

    def nodes_holding(self, needles: Sequence[str]) -> list[str]:
        return scrub.nodes_holding(self, needles)

    def purge_history(self, ids: Sequence[str], actor: str = "") -> dict[str, int]:
        return scrub.purge_history(self, ids, actor)

    def redact_audit(self, targets: Sequence[str], note: dict[str, Any]) -> int:
        return scrub.redact_audit(self, targets, note)

    def forget_statistics(self, tables: Sequence[str] | None = None) -> dict[str, Any]:
        return {"statistics": "none kept", "may_remain": [], "held": False}  # PostgresStore's: pg_statistics.py

    def erase_records(self, kind: str, keys: Sequence[str], actor: str = "") -> int:
        return scrub.erase_records(self, kind, keys, actor)

    # --- edges ---------------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        return self._edges.put_edges(edges, actor, at)

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int:
        return self._edges.retract_edges(ids, actor, at)

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
        return self._vectors.put_vectors(vectors, model)

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        return self._vectors.delete_vectors(hashes)

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
        self._records.put_records(kind, values, actor)

    def get_record(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._records.get_record(kind, key)

    def list_records(self, kind: str, prefix: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        return self._records.list_records(kind, prefix)

    def delete_record(self, kind: str, key: str, actor: str = "") -> bool:
        return self._records.delete_record(kind, key, actor)

    def append_audit(self, principal: str, action: str, target: str, outcome: str,
                     detail: dict | None = None) -> None:
        self._records.append_audit(principal, action, target, outcome, detail)

    def audit(self, principal: str | None = None, since: str | None = None, limit: int | None = None) -> list[dict]:
        return self._records.audit(principal, since, limit)

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

    def _importing(self, table: str) -> None:
        """Before the first copied row of ``table`` goes in: nothing, unless the backend prepares a large load."""
        return None

    def _imported(self, table: str) -> None:
        """After a table's copied rows went in (sequences, indexes): nothing, unless the backend keeps such."""
        return None

    def change_counter(self) -> int:
        return self._records.change_counter()

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        return self._records.changes_since(seq, limit)
