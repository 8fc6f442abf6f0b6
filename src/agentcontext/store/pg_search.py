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
from . import pg_hash, pg_props, pg_q8
from .pg_sql import PgWhere, linked_sql
from .pg_hash import text as hash_text
from .pg_vectors import nearest_sql
from .rows import Where, as_list, check_prop, row_to_node
from .sql_part import Part

SEPARATOR = "\x1f"  # joins a long list of hashes into one parameter (a hash holding it is sent as a list)


def _without_content(node: Node) -> Node:
    """A copy of ``node`` without its content (its props a copy too): what ``dataclasses.replace`` gives, at a
    tenth of its cost (it runs ``__init__`` through the fields' introspection; a ranking makes ~300 a query)."""
    light = copy.copy(node)
    light.content, light.props = "", dict(node.props)
    return light


def _with_fields(rows: Sequence[Sequence[Any]], keys: list[str]) -> list[Node]:
    """Nodes from their columns (``linked_sql`` with fields: the props as text, the columns a ranking does not read
    NULL) whose props hold only the ``keys`` that are set, or, when one of those is neither a string nor null,
    every prop (nothing the caller reads changes type). The props of every row are parsed in one ``json.loads``
    (one call for ~450 rows, not one each) and each node made with only the fields ``row_to_node`` sets."""
    every = json.loads("[" + ",".join(r[7] or "{}" for r in rows) + "]")
    out = []
    for r, props in zip(rows, every):
        if r[7] and r[7].startswith(pg_props.MARK):  # updated_at held once (migration 13): given back
            pg_props.give_back(props)
        picked = {k: v for k in keys if (v := props.get(k)) is not None}
        out.append(Node(id=r[0], kind=r[1], namespace=r[2], key=r[3], title=r[4], summary=r[5], content=r[6],
                        props=picked if all(type(v) is str for v in picked.values()) else props, version=r[13],
                        content_hash=hash_text(r[14]), created_by=r[15] or "",
                        embed_hash=hash_text(r[16]), tokens=r[17]))
    return out


def _moved_fields(rows: Sequence[Sequence[Any]], keys: list[str]) -> list[Node]:
    """``_with_fields`` for rows of a schema of migration 16: the moved props (``pg_props.MOVED``: string values; the
    pair hash as its text, ``linked_sql``) come as the columns after the node's, so no props text is parsed unless the
    caller reads another prop, or a text holds a moved key after all (a value not a string: not moved; null needs no
    parse, the caller skips nulls as ``_with_fields`` does): checked once over the call's texts, then row by row only
    when one does."""
    at = {k: 18 + i for i, k in enumerate(pg_props.MOVED)}
    texts = [k for k in keys if k not in at]
    picks = [(k, at[k]) for k in keys if k in at]
    probes = [(f'"{k}": ', f'"{k}": null') for k in keys if k in at]
    joined = "\x1e".join(r[7] or "" for r in rows)
    fast = not texts and all(joined.count(p) == joined.count(n) for p, n in probes)
    out = []
    for r in rows:
        text = r[7]
        if fast or not (texts or any(p in text and text.count(p) != text.count(n) for p, n in probes)):
            picked = {k: v for k, i in picks if (v := r[i]) is not None}
            if "updated_at" in keys and text and text.startswith(pg_props.MARK) and "created_at" in picked:
                picked["updated_at"] = picked["created_at"]
        else:  # as _with_fields: the props whole (the moved ones given back), or the keys asked when all are text
            props = pg_props.whole(text)
            props.update({k: v for k, i in at.items() if (v := r[i]) is not None})
            if text and text.startswith(pg_props.MARK):
                pg_props.give_back(props)
            props = dict(sorted(props.items()))
            picked = {k: v for k in keys if (v := props.get(k)) is not None}
            if not all(type(v) is str for v in picked.values()):
                picked = props
        out.append(Node(id=r[0], kind=r[1], namespace=r[2], key=r[3], title=r[4], summary=r[5], content=r[6],
                        props=picked, version=r[13], content_hash=hash_text(r[14]), created_by=r[15] or "",
                        embed_hash=hash_text(r[16]), tokens=r[17]))
    return out


def _linked(rows: Sequence[Sequence[Any]], keys: list[str] | None, content: bool = False,
            moved: bool = False) -> tuple[dict[str, Node], list[Node]]:
    """``nodes_linked``'s two parts from ``linked_sql``'s rows (``keys``: the props kept, or None: all; ``content``:
    the followers came with theirs, and a follower also of the first part is that part's node itself)."""
    first = [r[2:] for r in rows if r[0] == 0]
    ids = {r[0] for r in first}
    follows = sorted((r for r in rows if r[0] == 1), key=lambda r: r[1])
    parsed = first + [r[2:] for r in follows if r[2] not in ids]
    made = ([row_to_node(r) for r in parsed] if keys is None else _moved_fields(parsed, keys) if moved
            else _with_fields(parsed, keys))
    named = dict(zip([r[0] for r in first], made))
    read = dict(zip([r[0] for r in parsed[len(first):]], made[len(first):]))
    followers: dict[str, Node] = {}
    for r in follows:
        if r[2] in followers:
            continue  # a follower of two levels: once
        known = named.get(r[2])  # a follower also asked for: only its id came again (pg_sql.linked_sql)
        followers[r[2]] = read[r[2]] if known is None else known if content else _without_content(known)
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
            held = pg_props.filter_sql(list(props), self.store._nb, self.store._pc)  # migrations 13, 16
            where.add(f"{held} @> ?::jsonb", json.dumps(props))
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
        sql = nearest_sql(self._db, model, int(query.size), where.sql(), k, count_where, self._delta,
                          self.store._hb and not self.store._nb)  # nodes' hashes as bytes too: a plain join
        delta = [query, *where.params] if self._delta else []  # the delta's branch (pg_delta)
        rows = self._read(sql, [*counted, *where.params, query, query, query, *where.params, query, *delta])
        rows.sort(key=lambda r: (-r[2], r[1]))  # iterative index scans return them in relaxed order
        return [(r[0], float(r[2])) for r in rows[:k]]  # the index's best k and the delta's (pg_delta), merged

    def nodes_linked(self, ids: Sequence[str], prop: str, namespace: str, kind: str,
                     fields: Sequence[str] | None = None,
                     content: bool = False) -> tuple[dict[str, Node], list[Node]]:
        name = check_prop(prop)
        wanted = list(dict.fromkeys(i for i in ids if i))
        if not wanted:
            return {}, []
        keys = None if fields is None else list(dict.fromkeys([name, *(check_prop(f) for f in fields)]))
        moved = pg_props.MOVED if self.store._pc else ()  # the ranking's props as columns (migration 16)
        rows = self._read(linked_sql(name, keys, content, moved, self.store._rt),  # (18: pg_recorded)
                          {"ids": wanted, "ns": namespace, "kind": kind})
        return _linked(rows, keys, content, bool(moved))

    def holds_at_least(self, n: int, namespace: str, kind: str) -> bool:
        if n <= 0:
            return True
        sql = ("SELECT count(*) FROM (SELECT 1 FROM nodes WHERE namespace = %s AND kind = %s "
               f"LIMIT {int(n)}) f")  # an index-only scan of (namespace, kind, ...): no row is read
        return self._read(sql, [namespace, kind])[0][0] >= n

    def similarities(self, vector: np.ndarray, model: str, hashes: Sequence[str]) -> dict[str, float]:
        query = np.asarray(vector, dtype=np.float32)
        if query.ndim != 1 or not query.size:
            raise ValidationError(f"similarities needs one query vector, got shape {query.shape}")
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        hb = self.store._hb  # vectors keyed by the hash's bytes (migration 10, pg_hash)
        digests = hb and pg_hash.all_digests(wanted)  # checked once: ~2,800 hashes a query
        if digests:  # one text of the digests' hex, decoded and sliced in the server
            hashes, among = "".join(wanted), pg_hash.digests_sql("%s")
        elif any(SEPARATOR in h for h in wanted):
            hashes, among = wanted, "%s::text[]"
        else:  # one text, split in the server: dumping a list of thousands of strings costs the client more
            hashes, among = SEPARATOR.join(wanted), "string_to_array(%s, E'\\x1f')"
        if hb and not digests:
            among = f"ARRAY(SELECT actx_hash(x) FROM unnest({among}) x)"
        # the keys come as bytes: their text made here, the digests' in one call (``pg_hash.texts``)
        text = pg_hash.texts if hb else (lambda keys: list(keys))
        if not self.store._q8:
            rows = self._read(f"SELECT hash, -(vector::vector <#> %s) FROM vectors WHERE model = %s AND dim = %s "
                              f"AND hash = ANY({among})", [query, model, int(query.size), hashes])
            return {h: float(r[1]) for h, r in zip(text([r[0] for r in rows]), rows)}
        # a context vector held as int8 (pg_q8, migration 9) comes as its bytes and is scored here
        rows = self.store._vector_rows(f"SELECT hash, -(vector::vector <#> %s), q8, q8_scale FROM vectors WHERE "
                                       f"model = %s AND dim = %s AND hash = ANY({among})",
                                       [query, model, int(query.size), hashes])  # binary: q8 as its bytes
        keys = text([r[0] for r in rows])
        out = {h: float(r[1]) for h, r in zip(keys, rows) if r[1] is not None}
        out.update(pg_q8.scores(query, [(h, r[2], r[3]) for h, r in zip(keys, rows) if r[1] is None]))
        return out
