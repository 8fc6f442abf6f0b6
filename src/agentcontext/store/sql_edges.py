"""The edges part of ``SQLStore`` (``sql_part.Part``): edge writes, each change closing the old interval and opening a
new one; the edge reads are in ``sql_reads.py``."""
from __future__ import annotations

from typing import Sequence

from ..ids import check_id, id_problem
from ..model import Edge
from .rows import EDGE_COLS, plan_edges
from .sql_part import Part


class Edges(Part):
    """Writes of edges (validity intervals)."""

    __slots__ = ()

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
