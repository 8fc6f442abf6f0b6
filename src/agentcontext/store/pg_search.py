"""The vector-search part of ``PostgresStore`` (``sql_part.Part``; the ``VectorSearch`` role of ``base.py``,
``Capability.VECTOR_SEARCH``): dense search in the server (pgvector's HNSW indexes, ``pg_vectors.nearest_sql``),
the nodes a ranking reads around its candidates in one round trip, cheap counts and similarities by hash."""
from __future__ import annotations

import copy
import json
from typing import Any, Sequence

import numpy as np

from ..errors import ValidationError
from ..model import Node
from . import pg_q8
from .pg_sql import PgWhere, linked_sql, scored_sql
from .pg_vectors import nearest_sql
from .rows import NODE_COLS, Where, as_list, check_prop, row_to_node
from .sql_part import Part

SEPARATOR = "\x1f"  # joins a long list of hashes into one parameter (a hash holding it is sent as a list)


def _without_content(node: Node) -> Node:
    """A copy of ``node`` without its content (its props a copy too): what ``dataclasses.replace`` gives, at a
    tenth of its cost (it runs ``__init__`` through the fields' introspection; a ranking makes ~300 a query)."""
    light = copy.copy(node)
    light.content, light.props = "", dict(node.props)
    return light


def _with_fields(row: Sequence[Any], keys: list[str], values: Sequence[Any]) -> Node:
    """A node from its columns and the props ``keys`` read in the server (``values``, text; NULL: absent or null),
    or, when its props column came (a field neither a string nor null), from those whole."""
    node = row_to_node(row)
    if row[7] is None:
        node.props = {k: v for k, v in zip(keys, values) if v is not None}
    return node


def _query(vector: np.ndarray, what: str) -> np.ndarray:
    query = np.asarray(vector, dtype=np.float32)
    if query.ndim != 1 or not query.size:
        raise ValidationError(f"{what} needs one query vector, got shape {query.shape}")
    return query


def _linked(rows: Sequence[Sequence[Any]], keys: list[str] | None) -> tuple[dict[str, Node], list[Node]]:
    """``nodes_linked``'s two parts from ``linked_sql``'s rows (``keys``: the props read as columns, or None)."""
    width = 2 + len(NODE_COLS.split(", "))
    make = row_to_node if keys is None else lambda r: _with_fields(r[:width - 2], keys, r[width - 2:])
    named = {r[2]: make(r[2:]) for r in rows if r[0] == 0}
    followers: dict[str, Node] = {}
    for r in sorted((r for r in rows if r[0] == 1), key=lambda r: r[1]):
        if r[2] in followers:
            continue  # a follower of two levels: parsed once
        known = named.get(r[2])  # a follower also asked for: only its id came again (pg_sql.linked_sql)
        followers[r[2]] = make(r[2:]) if known is None else _without_content(known)
    return named, list(followers.values())


class PgSearch(Part):
    """Dense search and the reads around it, in the server."""

    __slots__ = ()

    @property
    def _delta(self) -> bool:
        return self.store._delta

    def _node_where(self, namespace, kind, key_prefix, keys, tags, valid_at, as_of=None) -> Where:
        return self.store._node_where(namespace, kind, key_prefix, keys, tags, valid_at, as_of)

    def nearest(self, vector: np.ndarray, model: str, k: int, namespace=None, kind=None, tags=None,
                valid_at: str | None = None, props: dict[str, Any] | None = None,
                titles: Sequence[str] | None = None) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32)
        if query.ndim != 1 or not query.size:
            raise ValidationError(f"nearest needs one query vector, got shape {query.shape}")
        if k <= 0:
            return []
        where = self._node_where(namespace, kind, None, None, tags, valid_at)
        where.add("n.retracted_at IS NULL")
        if props:
            where.add("(n.props::jsonb) @> ?::jsonb", json.dumps(props))
        if titles is not None:
            where.eq_any("n.title", list(titles) or [""])
        counted: list[Any] = []
        count_where = None
        if not tags and not valid_at and not props:  # the filter an index answers, but for retracted_at
            count = PgWhere()
            count.eq_any("n.namespace", as_list(namespace))
            count.eq_any("n.kind", as_list(kind))
            if titles is not None:
                count.eq_any("n.title", list(titles) or [""])
            count_where, counted = count.sql(), count.params
        sql = nearest_sql(self._db, model, int(query.size), where.sql(), k, count_where, self._delta)
        delta = [query, *where.params] if self._delta else []  # the delta's branch (pg_delta)
        rows = self._read(sql, [*counted, *where.params, query, query, query, *where.params, query, *delta])
        rows.sort(key=lambda r: (-r[2], r[1]))  # iterative index scans return them in relaxed order
        return [(r[0], float(r[2])) for r in rows[:k]]  # the index's best k and the delta's (pg_delta), merged

    def nodes_linked(self, ids: Sequence[str], prop: str, namespace: str, kind: str,
                     fields: Sequence[str] | None = None) -> tuple[dict[str, Node], list[Node]]:
        name = check_prop(prop)
        wanted = list(dict.fromkeys(i for i in ids if i))
        if not wanted:
            return {}, []
        keys = None if fields is None else list(dict.fromkeys([name, *(check_prop(f) for f in fields)]))
        rows = self._read(linked_sql(name, keys), {"ids": wanted, "ns": namespace, "kind": kind})
        return _linked(rows, keys)

    def nodes_linked_scored(self, vector: np.ndarray, model: str, ids: Sequence[str], prop: str, namespace: str,
                            kind: str, fields: Sequence[str], scored: Sequence[str] = ()
                            ) -> tuple[dict[str, Node], list[Node], dict[str, float]]:
        query = _query(vector, "nodes_linked_scored")
        name = check_prop(prop)
        wanted = list(dict.fromkeys(i for i in ids if i))
        if not wanted:
            return {}, [], {}
        named_props = [check_prop(f) for f in scored]
        keys = list(dict.fromkeys([name, *(check_prop(f) for f in fields), *named_props]))
        sql = scored_sql(name, keys, named_props, self.store._q8)
        rows = self.store._vector_rows(sql, {"ids": wanted, "ns": namespace, "kind": kind, "q": query,
                                             "model": model, "dim": int(query.size)})  # binary: q8 as its bytes
        width = 2 + len(NODE_COLS.split(", ")) + len(keys)
        named, followers = _linked([r[:width] for r in rows], keys)
        out: dict[str, float] = {}
        packed: dict[str, tuple[str, bytes, float]] = {}
        hashed = [2 + 16, *(width - len(keys) + keys.index(f) for f in named_props)]  # embed_hash, the props'
        for r in rows:
            if r[2 + 7] is not None:  # a row whose props came whole: a scored prop that is no string names nothing
                props = json.loads(r[2 + 7])
                names = [r[hashed[0]], *(v if isinstance(v := props.get(f), str) else None for f in named_props)]
            else:
                names = [r[at] for at in hashed]
            for j, h in enumerate(names):
                if h is None or h in out or h in packed:
                    continue
                score, raw, scale = r[width + 3 * j: width + 3 * j + 3]
                if score is not None:
                    out[h] = float(score)
                elif raw is not None:
                    packed[h] = (h, raw, scale)
                else:
                    out[h] = np.nan
        out.update(pg_q8.scores(query, list(packed.values())))
        return named, followers, out
    def holds_at_least(self, n: int, namespace: str, kind: str) -> bool:
        if n <= 0:
            return True
        sql = ("SELECT count(*) FROM (SELECT 1 FROM nodes WHERE namespace = %s AND kind = %s "
               f"LIMIT {int(n)}) f")  # an index-only scan of (namespace, kind, ...): no row is read
        return self._read(sql, [namespace, kind])[0][0] >= n

    def similarities(self, vector: np.ndarray, model: str, hashes: Sequence[str]) -> dict[str, float]:
        query = _query(vector, "similarities")
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        if any(SEPARATOR in h for h in wanted):
            hashes, among = wanted, "%s"
        else:  # one text, split in the server: dumping a list of thousands of strings costs the client more
            hashes, among = SEPARATOR.join(wanted), "string_to_array(%s, E'\\x1f')"
        if not self.store._q8:
            rows = self._read(f"SELECT hash, -(vector::vector <#> %s) FROM vectors WHERE model = %s AND dim = %s "
                              f"AND hash = ANY({among})", [query, model, int(query.size), hashes])
            return {h: float(s) for h, s in rows}
        # a context vector held as int8 (pg_q8, migration 9) comes as its bytes and is scored here
        rows = self.store._vector_rows(f"SELECT hash, -(vector::vector <#> %s), q8, q8_scale FROM vectors WHERE "
                                       f"model = %s AND dim = %s AND hash = ANY({among})",
                                       [query, model, int(query.size), hashes])  # binary: q8 as its bytes
        out = {h: float(s) for h, s, _, _ in rows if s is not None}
        out.update(pg_q8.scores(query, [(h, raw, scale) for h, s, raw, scale in rows if s is None]))
        return out
