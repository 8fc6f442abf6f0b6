"""The nodes-and-versions part of ``SQLStore`` (``sql_part.Part``): node writes (new versions, retraction) and the
version reads; the shared reads over live nodes are in ``sql_reads.py``, a purge is the erasure part's."""
from __future__ import annotations

from typing import Sequence

from ..errors import ValidationError
from ..ids import id_problem
from ..model import Node
from .rows import EXISTING_COLS, NODE_COLS, plan_versions, put_detail, row_to_node
from .sql_part import CHANGE_COLS, Part


class Nodes(Part):
    """Writes of nodes: each change a new version row, a retraction a version of its own."""

    __slots__ = ()

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
                read = EXISTING_COLS.replace(" recorded_at,", f" {self.RECORDED_AT},")  # (pg_recorded)
                for row in self._db.execute(f"SELECT {read} FROM nodes WHERE {clause}", params):
                    existing[row[0]] = row
            versions, changed = plan_versions(nodes, existing, at, actor)
            if changed:
                self._write_nodes(changed, existing)
                self._bulk_insert("changes", CHANGE_COLS, [(at, actor, "node.put", node.id, node.namespace,
                                                            put_detail(node)) for node, _, _ in changed])
        return versions

    def get_node(self, id: str, as_of: str | None = None, include_retracted: bool = False) -> Node | None:
        if as_of is None and include_retracted:
            rows = self._read(self._q(f"SELECT {self.NODE_READ} FROM nodes WHERE id = ?"), (id,))
            return row_to_node(rows[0]) if rows else None
        return self.get_nodes([id], as_of=as_of).get(id)

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
                    self._exec(f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT {self.NODE_READ}, NULL "
                               f"FROM nodes WHERE {live}", live_params)
                self._exec(self._q(f"UPDATE nodes SET retracted_at = ?, {self.RECORDED_SET}, version = version + 1 "
                                   f"WHERE {live}"), [at, *self._recorded_params(at), *live_params])
                src, src_params = self._in("src", [r[0] for r in rows])
                if edges == "both":
                    dst, dst_params = self._in("dst", [r[0] for r in rows])
                    self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND "
                                       f"({src} OR {dst})"), [at, *src_params, *dst_params])
                else:
                    self._exec(self._q(f"UPDATE edges SET retracted_at = ? WHERE retracted_at IS NULL AND {src}"),
                               [at, *src_params])
                self._insert_changes([(at, actor, "node.retract", r[0], r[2], "{}") for r in rows])
                count += len(rows)
        return count
