"""The erasure part of ``SQLStore`` (``sql_part.Part``): purges and the tombstones they leave, and the props scan an
erasure finds its subject's records with. The SQL of the rest of an erasure (what was erased, history, audit
redaction) is ``scrub.py``; the store's files are each backend's ``scrub``."""
from __future__ import annotations

import json
from typing import Any, Sequence

from ..ids import check_id
from . import scrub
from .pg_hash import text as hash_text
from .rows import as_list
from .sql_part import Part, tombstone_upsert


class Erasure(Part):
    """Purges (content, versions, edges and orphaned vectors gone; a tombstone left) and tombstones."""

    __slots__ = ()

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "",
                    at: str | None = None, erasure: str | None = None) -> dict[str, int]:
        at = at or self._now()
        totals = {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0}
        with self.transaction():
            for chunk in self._chunks(list(ids), per_statement=2):
                clause, params = self._in("id", chunk)
                rows = self._db.execute(f"SELECT id, rid, namespace, kind FROM nodes WHERE {clause} ORDER BY rid",
                                        params).fetchall()
                hashes = [hash_text(h) for (h,) in self._db.execute(
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
                self._insert_changes([(at, actor, "node.purge", r[0], r[2], json.dumps({"reason": reason}))
                                      for r in rows])
        return totals

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

    def find_by_props(self, path: Sequence[str], value: str, namespace=None, kind=None,
                      include_retracted: bool = False) -> list[str]:
        where = self._where()
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        if not include_retracted:
            where.add("n.retracted_at IS NULL")
        self._props_hold(where, scrub.key_path(path), value)
        return [r[0] for r in self._read(f"SELECT n.id FROM nodes n{where.sql()} ORDER BY n.rid", where.params)]
