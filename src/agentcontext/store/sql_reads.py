"""The read queries both SQL backends share: nodes (live and as of a moment), edges and vectors.

``SQLStore`` delegates its protocol reads here, one line each, so ``sql_base.py`` keeps transactions, the dialect
hooks and the write path. Each function takes the store and uses only its plumbing (``_where``, ``_read``,
``_chunks``, ``_in``, ``_page``) and dialect hooks (``_versions_as_of``, ``_filter_tags``, ``_prop_in``,
``_vector_rows``, ``_decode_vectors``, ``EDGE_SCAN``, ``CHUNK``).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import ValidationError
from ..model import Edge, Node
from .base import Adjacency, EdgeColumns, Frontier, NodeBrief, TimedEdges
from . import pg_recorded
from .pg_hash import text as hash_text
from .pg_props import whole as whole_props
from .rows import EDGE_COLS, LIGHT_COLS, NODE_COLS, NODE_ORDERS, Where, as_list, check_prop, row_to_edge, row_to_node


def select_nodes(store: Any, where: Where, as_of: str | None, with_content: bool = True,
                 order: str = "", limit: int | None = None, offset: int = 0) -> list[Node]:
    page = store._page(limit, offset)
    if as_of is None:  # (PostgreSQL's schema 16: the props given back from their columns, ``pg_props``)
        cols = store.NODE_READ if with_content else store.LIGHT_READ
        if store.TIMED_PAGES and limit is not None and not offset:  # (PostgreSQL's schema 18: by the timestamp
            rows = pg_recorded.page(store, cols, where, order, limit)  # where every row's text is canonical)
            if rows is not None:
                return [row_to_node(r) for r in rows]
        order = order.replace("n.recorded_at", store.RECORDED_AT)  # (PostgreSQL's schema 18: pg_recorded)
        sql = f"SELECT {cols} FROM nodes n{where.hint}{where.sql()}{order}{page}"
        return [row_to_node(r) for r in store._read(sql, where.params)]
    # The graph as it stood at as_of: the latest version recorded by then, unless retracted.
    inner, params = store._versions_as_of(NODE_COLS if with_content else LIGHT_COLS, as_of)
    live = (" AND " if where.parts else " WHERE ") + "n.retracted_at IS NULL"
    sql = f"SELECT * FROM ({inner}) n{where.sql()}{live}{order}{page}"
    return [row_to_node(r) for r in store._read(sql, [*params, *where.params])]


def get_nodes(store: Any, ids: Iterable[str], as_of: str | None = None,
              include_retracted: bool = False) -> dict[str, Node]:
    out: dict[str, Node] = {}
    for chunk in store._chunks(list(dict.fromkeys(ids))):
        where = store._where()
        where.eq_any("n.id", list(chunk))
        if as_of is None and not include_retracted:
            where.add("n.retracted_at IS NULL")
        for node in select_nodes(store, where, as_of):
            out[node.id] = node
    return out


def node_where(store: Any, namespace, kind, key_prefix, keys, tags, valid_at, as_of=None) -> Where:
    where = store._where()
    where.eq_any("n.namespace", as_list(namespace))
    where.eq_any("n.kind", as_list(kind))
    if keys is not None:
        where.eq_any("n.key", list(keys) or [""])
    if key_prefix:
        where.add("n.key >= ? AND n.key < ?", key_prefix, key_prefix + "\U0010ffff")
    if tags:
        store._filter_tags(where, list(dict.fromkeys(tags)), as_of)
    if valid_at:
        where.add("(n.valid_from IS NULL OR n.valid_from <= ?) AND (n.valid_until IS NULL OR n.valid_until > ?)",
                  valid_at, valid_at)
    return where


def find_nodes(store: Any, namespace=None, kind=None, key_prefix=None, keys=None, tags=None, valid_at=None,
               as_of=None, order="key", offset=0, limit=None, with_content=True) -> list[Node]:
    where = node_where(store, namespace, kind, key_prefix, keys, tags, valid_at, as_of)
    if as_of is None:
        where.add("n.retracted_at IS NULL")
    order_sql = NODE_ORDERS.get(order)
    if order_sql is None:
        raise ValidationError(f"unknown order {order!r}; use key, recorded, recorded_desc, id or none")
    return select_nodes(store, where, as_of, with_content, order_sql, limit, offset)


def node_index(store: Any, namespace, as_of: str | None = None) -> list[tuple]:
    cols = "id, key, kind, title, summary, version, content_hash, tokens"
    where = store._where()
    where.eq_any("n.namespace", as_list(namespace))
    where.add("n.retracted_at IS NULL")
    if as_of is None:
        rows = store._read(f"SELECT {cols} FROM nodes n{where.sql()} ORDER BY n.key, n.id", where.params)
    else:
        inner, params = store._versions_as_of(f"{cols}, namespace, retracted_at", as_of)
        rows = store._read(f"SELECT {cols} FROM ({inner}) n{where.sql()} ORDER BY n.key, n.id",
                           [*params, *where.params])
    return [(*r[:6], hash_text(r[6]), *r[7:]) for r in rows]  # the hash as text (bytes on PostgreSQL's schema 13)


def node_ids(store: Any, namespace=None, include_retracted: bool = False) -> list[str]:
    where = store._where()
    where.eq_any("namespace", as_list(namespace))
    if not include_retracted:
        where.add("retracted_at IS NULL")
    return [r[0] for r in store._read(f"SELECT id FROM nodes{where.sql()} ORDER BY rid", where.params)]


def node_briefs(store: Any, ids: Sequence[str]) -> dict[str, NodeBrief]:
    out: dict[str, NodeBrief] = {}
    for chunk in store._chunks(list(ids)):
        clause, params = store._in("id", chunk)
        for nid, kind, content, props in store._read(
                f"SELECT id, kind, content, {store.PROPS_READ} FROM nodes WHERE {clause} AND retracted_at IS NULL",
                params):
            out[nid] = (kind, content, whole_props(props) if props and props != "{}" else {})
    return out


def get_contents(store: Any, ids: Sequence[str], as_of: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for chunk in store._chunks(list(dict.fromkeys(ids))):
        clause, params = store._in("n.id", chunk)
        if as_of is None:
            out.update(store._read(f"SELECT n.id, n.content FROM nodes n WHERE {clause}", params))
        else:
            inner, inner_params = store._versions_as_of("id, content", as_of)
            out.update(store._read(f"SELECT n.id, n.content FROM ({inner}) n WHERE {clause}",
                                   [*inner_params, *params]))
    return out


def count_nodes(store: Any, namespace=None, kind=None) -> int:
    where = node_where(store, namespace, kind, None, None, None, None)
    where.add("n.retracted_at IS NULL")
    return store._read(f"SELECT count(*) FROM nodes n{where.sql()}", where.params)[0][0]


def count_by_kind(store: Any, namespace=None) -> dict[str, int]:
    where = node_where(store, namespace, None, None, None, None, None)
    where.add("n.retracted_at IS NULL")
    return dict(store._read(f"SELECT kind, count(*) FROM nodes n{where.sql()} GROUP BY kind", where.params))


def nodes_naming(store: Any, prop: str, values: Sequence[str], namespace=None, kind=None) -> list[Node]:
    name = check_prop(prop)
    rows: list[tuple] = []
    for chunk in store._chunks(list(dict.fromkeys(values))):
        where = store._where()
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        where.add("n.retracted_at IS NULL")
        store._prop_in(where, name, list(chunk))
        rows.extend(store._read(f"SELECT n.rid, {store.LIGHT_READ} FROM nodes n{where.sql()}", where.params))
    rows.sort(key=lambda r: r[0])
    return [row_to_node(r[1:]) for r in rows]


def edge_where(store: Any, src, dst, type, namespace, as_of, valid_at, min_weight,
               include_retracted: bool = False) -> Where:
    where = store._where()
    where.eq_any("src", as_list(src))
    where.eq_any("dst", as_list(dst))
    where.eq_any("type", as_list(type))
    where.eq_any("namespace", as_list(namespace))
    if as_of is not None:
        where.add("recorded_at <= ? AND (retracted_at IS NULL OR retracted_at > ?)", as_of, as_of)
    elif not include_retracted:
        where.add("retracted_at IS NULL")
    if valid_at:
        where.add("(valid_from IS NULL OR valid_from <= ?) AND (valid_until IS NULL OR valid_until > ?)",
                  valid_at, valid_at)
    if min_weight is not None:
        where.add("weight >= ?", min_weight)
    return where


def edges(store: Any, src=None, dst=None, type=None, namespace=None, as_of=None, valid_at=None,
          min_weight=None, offset=0, limit=None, include_retracted: bool = False) -> list[Edge]:
    srcs, dsts = as_list(src), as_list(dst)
    big = store.CHUNK is not None and any(v is not None and len(v) > store.CHUNK for v in (srcs, dsts))
    if big:  # more ids than one statement takes: query slice by slice, merge in order
        big_src = srcs is not None and len(srcs) > store.CHUNK  # type: ignore[operator]
        out: list[Edge] = []
        for chunk in store._chunks(srcs if big_src else dsts):  # type: ignore[arg-type]
            out.extend(store.edges(chunk if big_src else srcs, dsts if big_src else chunk, type, namespace,
                                   as_of, valid_at, min_weight, include_retracted=include_retracted))
        out.sort(key=lambda e: (e.src, e.position, e.dst, e.type))
        return out[offset: None if limit is None else offset + limit]
    where = edge_where(store, srcs, dsts, type, namespace, as_of, valid_at, min_weight, include_retracted)
    rows = store._read(f"SELECT {EDGE_COLS} FROM edges{where.sql()} ORDER BY src, position, dst, type"
                       f"{store._page(limit, offset)}", where.params)
    return [row_to_edge(r) for r in rows]


def count_edges(store: Any, namespace=None, type=None) -> int:
    where = edge_where(store, None, None, type, namespace, None, None, None)
    return store._read(f"SELECT count(*) FROM edges{where.sql()}", where.params)[0][0]


def count_edges_by_type(store: Any, namespace=None) -> dict[str, int]:
    where = edge_where(store, None, None, None, namespace, None, None, None)
    return dict(store._read(f"SELECT type, count(*) FROM edges{where.sql()} GROUP BY type", where.params))


def adjacency(store: Any, namespace=None, types=None, as_of=None, valid_at=None) -> Adjacency:
    where = edge_where(store, None, None, types, namespace, as_of, valid_at, None)
    return store._read(f"SELECT src, dst, type, weight, position FROM edges{where.sql()} "
                       "ORDER BY src, position, dst", where.params)


def edge_columns(store: Any, namespace=None) -> EdgeColumns:
    where = store._where()
    where.add("retracted_at IS NULL")
    where.eq_any("namespace", as_list(namespace))
    return store._read(f"SELECT src, dst, type, weight, position, valid_from, valid_until FROM edges"
                       f"{store.EDGE_SCAN}{where.sql()}", where.params)


def edges_touching(store: Any, ids: Sequence[str], side: str = "src", types: Sequence[str] | None = None,
                   min_weight: float | None = None) -> Frontier:
    if side not in ("src", "dst"):
        raise ValidationError("side must be src or dst", side=side)
    out: list[tuple] = []
    for chunk in store._chunks(list(ids)):
        where = edge_where(store, chunk if side == "src" else None, chunk if side == "dst" else None,
                           as_list(types), None, None, None, min_weight)
        out.extend(store._read(f"SELECT src, dst, type, weight, namespace, valid_from, valid_until, position "
                               f"FROM edges{where.sql()}", where.params))
    out.sort(key=lambda r: (r[0], r[7], r[1], r[2]))  # (src, position, dst, type): code-point order everywhere
    return [r[:7] for r in out]


def timed_edges(store: Any, namespace=None) -> TimedEdges:
    where = edge_where(store, None, None, None, namespace, None, None, None)
    where.add("(valid_from IS NOT NULL OR valid_until IS NOT NULL)")
    return store._read(f"SELECT src, dst, type, valid_from, valid_until FROM edges{where.sql()}", where.params)


def edge_history(store: Any, namespace=None) -> list[Edge]:
    where = store._where()
    where.eq_any("namespace", as_list(namespace))
    rows = store._read(f"SELECT {EDGE_COLS} FROM edges{where.sql()} ORDER BY recorded_at, rid", where.params)
    return [row_to_edge(r) for r in rows]


def get_vectors(store: Any, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for chunk in store._chunks(list(hashes)):
        where = store._where()
        where.add("model = ?", model)
        clause, params = store._hash_in("hash", list(chunk))
        where.add(clause, *params)
        sql = f"SELECT {store._hash_sql('hash')}, {store._vector_sql()} FROM vectors{where.sql()}"
        for h, raw in store._vector_rows(sql, where.params):
            out[h] = store._decode_vectors([raw])[0]
    return out


def missing_vectors(store: Any, model: str, namespace=None) -> list[tuple[str, str]]:
    where = store._where()
    where.add("n.embed_hash IS NOT NULL AND n.retracted_at IS NULL")
    where.eq_any("n.namespace", as_list(namespace))
    where.add(f"NOT EXISTS (SELECT 1 FROM vectors v WHERE {store.VECTOR_JOIN} AND v.model = ?)", model)
    # held once (NULL embed_text, embed_hash set): SQLite when it is the content, PostgreSQL ``title: content`` too
    rows = store._read(f"SELECT n.embed_hash, min({store.EMBED_TEXT}) FROM nodes n{where.sql()} "
                       "GROUP BY n.embed_hash", where.params)
    return [(hash_text(h), t) for h, t in rows]


def count_vectors(store: Any, model: str, namespace=None, kind=None) -> int:
    where = store._where()
    where.add("n.retracted_at IS NULL AND v.model = ?", model)
    where.eq_any("n.namespace", as_list(namespace))
    where.eq_any("n.kind", as_list(kind))
    return store._read(f"SELECT count(*) FROM {store.NODES_WITH_VECTORS} ON {store.VECTOR_JOIN}{where.sql()}",
                       where.params)[0][0]


def load_vectors(store: Any, model: str, namespace=None, kind=None) -> tuple[list[str], np.ndarray]:
    where = store._where()
    where.add("n.retracted_at IS NULL AND v.model = ?", model)
    where.eq_any("n.namespace", as_list(namespace))
    where.eq_any("n.kind", as_list(kind))
    rows = store._vector_rows(f"SELECT n.id, v.dim, {store._vector_sql('v.')} FROM {store.NODES_WITH_VECTORS} ON "
                              f"{store.VECTOR_JOIN}{where.sql()} ORDER BY n.rid", where.params)
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    dims = {r[1] for r in rows}
    if len(dims) != 1:
        raise ValidationError(f"vectors of model {model!r} have mixed dimensions {sorted(dims)}; reindex")
    return [r[0] for r in rows], store._decode_vectors([r[2] for r in rows])
