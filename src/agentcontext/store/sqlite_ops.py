"""The SQLite store's edges, text index, vectors, records, audit and change log (a mixin of SQLiteStore)."""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import ValidationError
from ..model import Edge
from .common_ops import CommonOps
from .rows import EDGE_COLS, Where, as_list, row_to_edge
from ..text import informative, query_terms
from .sql import fts_match

CHUNK = 900  # stay below SQLite's host-parameter limit


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class SqlWhere(Where):
    """``column IN (?, ?, ...)``; callers chunk long lists (CHUNK)."""

    def eq_any(self, column: str, values: list[str] | None) -> None:
        if values is None:
            return
        if len(values) == 1:
            self.parts.append(f"{column} = ?")
        else:
            self.parts.append(f"{column} IN ({','.join('?' * len(values))})")
        self.params.extend(values)


class SQLiteOps(CommonOps):
    """Provided by SQLiteStore: the connection, transactions, the clock and the change log."""

    _db: sqlite3.Connection
    transaction: Callable[[], Any]
    _now: Callable[[], str]
    _read: Callable[..., list[tuple]]
    _log: Callable[..., None]

    # --- edges -----------------------------------------------------------------------------
    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        new = 0
        with self.transaction():
            keyed = {e.id: e for e in edges}
            ids = list(keyed)
            current: dict[str, tuple] = {}
            for chunk in chunks(ids):
                for row in self._db.execute(
                    f"SELECT eid, weight, props, valid_from, valid_until, position, namespace FROM edges "
                    f"WHERE retracted_at IS NULL AND eid IN ({','.join('?' * len(chunk))})", chunk,
                ):
                    current[row[0]] = row
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
            for chunk in chunks(retire):
                self._db.execute(
                    f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND eid IN "
                    f"({','.join('?' * len(chunk))})", [at, *chunk])
            inserts.sort(key=lambda row: row[0])  # eid order: the live-eid index fills in order (~40% faster bulk)
            self._db.executemany(f"INSERT INTO edges(eid, {EDGE_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", inserts)
            if inserts:
                namespaces = sorted({row[4] for row in inserts})
                self._log(at, actor, "edges.put", namespaces[0] if len(namespaces) == 1 else "*",
                          namespaces[0] if len(namespaces) == 1 else "",
                          {"count": len(inserts), "new": new, "namespaces": namespaces[:20]})
        return new

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int:
        at = at or self._now()
        count = 0
        with self.transaction():
            for chunk in chunks(list(ids)):
                count += self._db.execute(
                    f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND eid IN "
                    f"({','.join('?' * len(chunk))})", [at, *chunk]).rowcount
            if count:
                self._log(at, actor, "edges.retract", "*", "", {"count": count})
        return count

    def edges(self, src=None, dst=None, type=None, namespace=None, as_of=None, valid_at=None,
              min_weight=None, offset=0, limit=None) -> list[Edge]:
        srcs, dsts = as_list(src), as_list(dst)
        if (srcs is not None and len(srcs) > CHUNK) or (dsts is not None and len(dsts) > CHUNK):
            out: list[Edge] = []
            big_src = srcs is not None and len(srcs) > CHUNK
            for chunk in chunks(srcs if big_src else dsts):
                out.extend(self.edges(chunk if big_src else srcs, dsts if big_src else chunk, type, namespace,
                                      as_of, valid_at, min_weight))
            out.sort(key=lambda e: (e.src, e.position, e.dst, e.type))
            return out[offset: None if limit is None else offset + limit]
        where = self._edge_where(srcs, dsts, type, namespace, as_of, valid_at, min_weight)
        page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else (
            f" LIMIT -1 OFFSET {int(offset)}" if offset else "")
        rows = self._read(f"SELECT {EDGE_COLS} FROM edges{where.sql()} ORDER BY src, position, dst, type{page}",
                          where.params)
        return [row_to_edge(r) for r in rows]

    # --- text index ------------------------------------------------------------------------
    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50) -> list[tuple[str, float]]:
        terms = self._informative_terms(query_terms(query))
        if not terms:
            return []
        where = SqlWhere()
        where.add("fts MATCH ?", fts_match(terms))
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        where.add("n.retracted_at IS NULL")
        sql = (
            "SELECT n.id, -bm25(fts, 4.0, 3.0, 2.0, 1.0, 2.0) AS score FROM fts JOIN nodes n ON n.rid = fts.rowid"
            f"{where.sql()} ORDER BY bm25(fts, 4.0, 3.0, 2.0, 1.0, 2.0) LIMIT {int(limit)}"
        )
        return [(r[0], float(r[1])) for r in self._read(sql, where.params)]

    def _informative_terms(self, terms: list[str]) -> list[str]:
        if len(terms) < 2:
            return terms
        total = self._read("SELECT count(*) FROM fts_docsize")[0][0]
        counts = {t: self._read("SELECT count(*) FROM fts WHERE fts MATCH ?", (fts_match([t]),))[0][0]
                  for t in terms} if total >= 1000 else {}
        return informative(terms, counts, total)

    # --- vectors ---------------------------------------------------------------------------
    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int:
        rows = []
        for h, vec in vectors.items():
            arr = np.asarray(vec, dtype=np.float32)
            rows.append((h, model, int(arr.shape[0]), arr.tobytes()))
        with self.transaction():
            self._db.executemany("INSERT OR REPLACE INTO vectors(hash, model, dim, vector) VALUES (?,?,?,?)", rows)
            if rows:
                self._log(self._now(), "", "vectors.put", model, "", {"count": len(rows)})
        return len(rows)

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        count = 0
        with self.transaction():
            for chunk in chunks(list(dict.fromkeys(hashes))):
                count += self._db.execute(
                    f"DELETE FROM vectors WHERE hash IN ({','.join('?' * len(chunk))})", chunk).rowcount
            if count:
                self._log(self._now(), "", "vectors.delete", "*", "", {"count": count})
        return count

    def get_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in chunks(list(hashes)):
            for h, blob in self._read(
                f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({','.join('?' * len(chunk))})",
                [model, *chunk],
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def missing_vectors(self, model: str, namespace=None) -> list[tuple[str, str]]:
        where = SqlWhere()
        where.add("n.embed_hash IS NOT NULL AND n.retracted_at IS NULL")
        where.eq_any("n.namespace", as_list(namespace))
        where.add("NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = n.embed_hash AND v.model = ?)", model)
        rows = self._read(f"SELECT n.embed_hash, min(n.embed_text) FROM nodes n{where.sql()} GROUP BY n.embed_hash",
                          where.params)
        return [(h, t) for h, t in rows]

    def load_vectors(self, model: str, namespace=None, kind=None) -> tuple[list[str], np.ndarray]:
        where = SqlWhere()
        where.add("n.retracted_at IS NULL AND v.model = ?", model)
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        rows = self._read(
            f"SELECT n.id, v.dim, v.vector FROM nodes n JOIN vectors v ON v.hash = n.embed_hash{where.sql()} "
            "ORDER BY n.rid", where.params)
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        dims = {r[1] for r in rows}
        if len(dims) != 1:
            raise ValidationError(f"vectors of model {model!r} have mixed dimensions {sorted(dims)}; reindex")
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dims.pop())
        return [r[0] for r in rows], matrix

    def _where(self) -> SqlWhere:
        return SqlWhere()
