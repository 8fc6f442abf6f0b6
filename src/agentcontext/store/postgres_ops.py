"""PostgresStore's second half: edges, text search, vectors, records, audit and the change log.

A mixin over the connection, lock and transaction that ``postgres.PostgresStore`` sets up.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ..errors import DependencyMissingError, ValidationError
from ..model import Edge
from ..text import informative, query_terms
from .pg_sql import RANK_WEIGHTS, PgWhere, page, ts_match
from .common_ops import CommonOps
from .rows import EDGE_COLS, as_list, row_to_edge

try:
    import psycopg
    from psycopg.adapt import Loader
    from psycopg.pq import Format
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise DependencyMissingError("the PostgreSQL store needs the postgres extra: pip install 'agentcontext[postgres]'",
                                 extra="postgres") from exc



class RawVector(Loader):
    """pgvector's binary form as plain bytes (uint16 dim, uint16 unused, big-endian float4s), decoded in bulk."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        return bytes(data)


def decode_vectors(raws: Sequence[bytes]) -> np.ndarray:
    """One float32 matrix from pgvector binary values of one dimension."""
    dim = int.from_bytes(raws[0][:2], "big")
    joined = b"".join(memoryview(r)[4:] for r in raws)
    return np.frombuffer(joined, dtype=">f4").reshape(len(raws), dim).astype(np.float32)


class EdgeVectorOps(CommonOps):
    PLACEHOLDER = "%s"
    _db: psycopg.Connection
    _lock: Any

    def transaction(self) -> Any: ...  # provided by PostgresStore

    def _now(self) -> str: ...  # provided by PostgresStore

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...  # provided by PostgresStore

    def _retrying(self, fn: Any) -> Any: ...  # provided by PostgresStore

    def _log(self, at: str, actor: str, op: str, target: str, namespace: str = "",
             detail: dict | None = None) -> None: ...  # provided by PostgresStore

    def _raw_read(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        """Rows with vector columns as raw bytes (binary protocol, no per-row numpy objects)."""
        def run() -> list[tuple]:
            cur = self._db.cursor(binary=True)
            cur.adapters.register_loader(self._db.adapters.types["vector"].oid, RawVector)
            return cur.execute(sql, params).fetchall()

        with self._lock:
            return self._retrying(run)

    # --- edges -----------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        new = 0
        with self.transaction():
            keyed = {e.id: e for e in edges}
            current = {row[0]: row for row in self._db.execute(
                "SELECT eid, weight, props, valid_from, valid_until, position, namespace FROM edges "
                "WHERE retracted_at IS NULL AND eid = ANY(%s)", (list(keyed),))}
            inserts, retire = [], []
            for eid, e in keyed.items():
                props = json.dumps(e.props, sort_keys=True, default=str)
                old = current.get(eid)
                if old and (old[1], old[2], old[3], old[4], old[5], old[6]) == (
                        e.weight, props, e.valid_from, e.valid_until, e.position, e.namespace):
                    e.recorded_at = None
                    continue
                if old:
                    retire.append(eid)
                else:
                    new += 1
                e.recorded_at = at
                inserts.append((eid, e.src, e.type, e.dst, e.namespace, e.weight, props, e.valid_from,
                                e.valid_until, at, None, e.position))
            if retire:
                self._db.execute("UPDATE edges SET retracted_at = %s WHERE retracted_at IS NULL AND eid = ANY(%s)",
                                 (at, retire))
            if inserts:
                inserts.sort(key=lambda row: row[0])
                with self._db.cursor() as cur:
                    with cur.copy(f"COPY edges(eid, {EDGE_COLS}) FROM STDIN") as copy:
                        for row in inserts:
                            copy.write_row(row)
                namespaces = sorted({row[4] for row in inserts})
                self._log(at, actor, "edges.put", namespaces[0] if len(namespaces) == 1 else "*",
                          namespaces[0] if len(namespaces) == 1 else "",
                          {"count": len(inserts), "new": new, "namespaces": namespaces[:20]})
        return new

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        with self.transaction():
            count = self._db.execute("UPDATE edges SET retracted_at = %s WHERE retracted_at IS NULL AND eid = ANY(%s)",
                                     (at, list(ids))).rowcount
            if count:
                self._log(at, actor, "edges.retract", "*", "", {"count": count})
        return count

    def edges(self, src=None, dst=None, type=None, namespace=None, as_of=None, valid_at=None,
              min_weight=None, offset=0, limit=None) -> list[Edge]:
        where = self._edge_where(src, dst, type, namespace, as_of, valid_at, min_weight)
        rows = self._read(f"SELECT {EDGE_COLS} FROM edges{where.sql()} ORDER BY src, position, dst, type"
                          f"{page(limit, offset)}", where.params)
        return [row_to_edge(r) for r in rows]

    def edge_columns(self, namespace=None) -> list[tuple]:
        """Every active edge as (src, dst, type, weight, position, valid_from, valid_until) in no particular
        order: one scan, no sort, for engines that order rows themselves."""
        where = PgWhere()
        where.add("retracted_at IS NULL")
        where.eq_any("namespace", as_list(namespace))
        return self._read(f"SELECT src, dst, type, weight, position, valid_from, valid_until FROM edges{where.sql()}",
                          where.params)

    def edges_touching(self, ids: Sequence[str], side: str = "src", types: Sequence[str] | None = None,
                       min_weight: float | None = None) -> list[tuple]:
        """Active edges leaving (``side="src"``) or entering (``"dst"``) the given nodes, as tuples
        (src, dst, type, weight, namespace, valid_from, valid_until), in (src, position, dst, type) order."""
        if side not in ("src", "dst"):
            raise ValidationError("side must be src or dst", side=side)
        ids = list(ids)
        where = self._edge_where(ids if side == "src" else None, ids if side == "dst" else None, as_list(types),
                                 None, None, None, min_weight)
        return self._read(f"SELECT src, dst, type, weight, namespace, valid_from, valid_until FROM edges{where.sql()} "
                          "ORDER BY src, position, dst, type", where.params)

    # --- text index ------------------------------------------------------------------------
    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50) -> list[tuple[str, float]]:
        """(id, ts_rank_cd over weighted key/title/summary+tags/content, length-normalised) best first."""
        terms = query_terms(query)
        if len(terms) > 1:
            total = self._read("SELECT count(*) FROM nodes WHERE retracted_at IS NULL")[0][0]
            counts = {t: self._read("SELECT count(*) FROM nodes WHERE retracted_at IS NULL AND "
                                    "tsv @@ to_tsquery('english', %s)", [ts_match([t])])[0][0]
                      for t in terms} if total >= 1000 else {}
            terms = informative(terms, counts, total)
        match = ts_match(terms)
        if not match:
            return []
        where = PgWhere()
        where.add("n.tsv @@ q.q")
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        where.add("n.retracted_at IS NULL")
        sql = (f"SELECT n.id, ts_rank_cd('{RANK_WEIGHTS}', n.tsv, q.q, 1) AS score "
               f"FROM nodes n, (SELECT to_tsquery('english', %s) AS q) q{where.sql()} "
               f"ORDER BY score DESC, n.rid LIMIT {int(limit)}")
        return [(r[0], float(r[1])) for r in self._read(sql, [match, *where.params])]

    # --- vectors ---------------------------------------------------------------------------
    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int:
        rows = []
        for h, vec in vectors.items():
            arr = np.asarray(vec, dtype=np.float32)
            if arr.ndim != 1 or not arr.size:
                raise ValidationError(f"vector for {h} must be one non-empty row, got shape {arr.shape}", hash=h)
            rows.append((h, model, int(arr.shape[0]), arr))
        with self.transaction():
            with self._db.cursor() as cur:
                cur.executemany("INSERT INTO vectors(hash, model, dim, vector) VALUES (%s,%s,%s,%s) "
                                "ON CONFLICT (hash, model) DO UPDATE SET dim = EXCLUDED.dim, vector = EXCLUDED.vector",
                                rows)
            if rows:
                self._log(self._now(), "", "vectors.put", model, "", {"count": len(rows)})
        return len(rows)

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        """Delete the vectors of these text hashes (every model)."""
        with self.transaction():
            unique = list(dict.fromkeys(hashes))
            count = self._db.execute("DELETE FROM vectors WHERE hash = ANY(%s)", (unique,)).rowcount
            if count:
                self._log(self._now(), "", "vectors.delete", "*", "", {"count": count})
        return count

    def get_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        rows = self._raw_read("SELECT hash, vector FROM vectors WHERE model = %s AND hash = ANY(%s)",
                              (model, list(hashes)))
        return {h: decode_vectors([raw])[0] for h, raw in rows}

    def missing_vectors(self, model: str, namespace=None) -> list[tuple[str, str]]:
        where = PgWhere()
        where.add("n.embed_hash IS NOT NULL AND n.retracted_at IS NULL")
        where.eq_any("n.namespace", as_list(namespace))
        where.add("NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = n.embed_hash AND v.model = %s)", model)
        rows = self._read(f"SELECT n.embed_hash, min(n.embed_text) FROM nodes n{where.sql()} GROUP BY n.embed_hash",
                          where.params)
        return [(h, t) for h, t in rows]

    def load_vectors(self, model: str, namespace=None, kind=None) -> tuple[list[str], np.ndarray]:
        where = PgWhere()
        where.add("n.retracted_at IS NULL AND v.model = %s", model)
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        rows = self._raw_read(f"SELECT n.id, v.dim, v.vector FROM nodes n JOIN vectors v ON v.hash = n.embed_hash"
                              f"{where.sql()} ORDER BY n.rid", where.params)
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        dims = {r[1] for r in rows}
        if len(dims) != 1:
            raise ValidationError(f"vectors of model {model!r} have mixed dimensions {sorted(dims)}; reindex")
        return [r[0] for r in rows], decode_vectors([r[2] for r in rows])

    def _where(self) -> PgWhere:
        return PgWhere()
