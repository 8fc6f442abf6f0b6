"""Copying a whole store, row by row, between backends: what ``Store.export_rows`` and ``Store.import_rows`` do.

``TABLES`` lists every table of the store of record with the columns a copy carries (all but those a backend
derives itself: row ids, SQLite's text index and tag rows, PostgreSQL's tsvector and tag text) and the order pages
come in. Values are normalised on the way out (tags a list, a vector a float32 array), so a page exported by one
backend imports into the other unchanged: versions, hashes, times, authors and sequence numbers stay as they are.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import ValidationError
from .pg_hash import text as hash_text
from .pg_props import whole_text
from .rows import EDGE_COLS, NODE_COLS, as_tags, whole_embed_text

TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # table: (page order, columns copied)
    "nodes": (("rid",), (*NODE_COLS.split(", "), "embed_text")),
    "node_versions": (("id", "version"), (*NODE_COLS.split(", "), "embed_text")),
    "edges": (("rid",), ("eid", *EDGE_COLS.split(", "))),
    "vectors": (("hash", "model"), ("hash", "model", "dim", "vector")),
    "tombstones": (("id",), ("id", "namespace", "kind", "purged_at", "reason", "actor", "erasure")),
    "records": (("kind", "key"), ("kind", "key", "value", "updated_at")),
    "audit": (("seq",), ("seq", "at", "principal", "action", "target", "outcome", "detail")),
    "changes": (("seq",), ("seq", "at", "actor", "op", "target", "namespace", "detail")),
}
PAGE = 5000


def columns(table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if table not in TABLES:
        raise ValidationError(f"unknown table {table!r}; a copy carries {', '.join(TABLES)}", table=table)
    return TABLES[table]


TENANT_TABLES = ("nodes", "node_versions", "edges", "tombstones")  # the tables whose rows carry a namespace


def export_rows(store: Any, table: str, after: Sequence[Any] | None, limit: int,
                namespace: str | None = None) -> tuple[list[dict], list | None]:
    """One page of ``table`` after the cursor ``after``: (rows as dicts, the cursor of the next page or None);
    ``namespace``: only that namespace's rows (a ``TENANT_TABLES`` table: one tenant moving to another shard)."""
    order, cols = columns(table)
    where = ""
    params: list[Any] = []
    seek = store.PAGE_SEEK.get(table)  # an index on an expression of the first key that sorts as the key does
    hashed = table == "vectors" and store._hash_sql("hash") != "hash"  # PostgreSQL keys vectors by bytes (pg_hash)
    if after is not None:
        marks = [store._hash_param() if hashed and c == "hash" else "?" for c in order]
        where = f" WHERE ({', '.join(order)}) > ({', '.join(marks)})"
        params = list(after)
        if seek:
            where += f" AND {seek} >= {seek.replace(order[0], '?')}"
            params.append(after[0])
    if namespace is not None:
        if table not in TENANT_TABLES:
            raise ValidationError(f"table {table!r} has no namespace column; one tenant's rows are in "
                                  f"{', '.join(TENANT_TABLES)}", table=table)
        where += (" AND " if where else " WHERE ") + "namespace = ?"
        params.append(namespace)
    # by position (the key's columns come first): the key's names are among the columns copied too, which
    # PostgreSQL calls ambiguous in the ORDER BY of a UNION
    ordering = ", ".join((seek, *order)) if seek else ", ".join(str(i + 1) for i in range(len(order)))
    if hashed:  # the key's own order (its index), the hashes read as text
        ordering = ", ".join(f"{table}.{c}" for c in order)
    arms = store.COPY_ARMS.get(table, (table,))  # node_versions on SQLite: the superseded rows and the live ones
    selects = []
    for i, source in enumerate(arms):  # a version row never holds the live row's text to embed: NULL, as before
        picked = cols if i == 0 else [("NULL AS embed_text" if c == "embed_text" else c) for c in cols]
        if source == "nodes" and "props" in picked:  # PostgreSQL's schemas 16, 18: the props whole again (pg_props),
            reads = {"props": f"{store.PROPS_READ} AS props", "recorded_at": f"{store.RECORDED_AT} AS recorded_at"}
            picked = [reads.get(c, c) for c in picked]  # the recorded time's text (pg_recorded)
        if table == "changes":  # PostgreSQL's schemas 17, 18: the time's text from a timestamp, the op's from an id
            reads = {"at": f"{store.CHANGE_AT} AS at", "op": f"{store.CHANGE_OP} AS op"}  # (pg_changes)
            picked = [reads.get(c, c) for c in picked]
        if table == "vectors":  # PostgreSQL holds a context vector as int8 (pg_q8): its values rebuilt
            picked = [(f"{store._vector_sql()} AS vector" if c == "vector" else c) for c in picked]
        keys = list(order)
        if hashed:
            keys = [store._hash_sql(c) if c == "hash" else c for c in order]
            picked = [store._hash_sql(c) if c == "hash" else c for c in picked]
        selects.append(f"SELECT {', '.join(keys)}, {', '.join(picked)} FROM {source}{where}")
    sql = store._q(f"{' UNION ALL '.join(selects)} ORDER BY {ordering} LIMIT {int(limit)}")
    params = params * len(arms)
    raw = store._vector_rows(sql, params) if table == "vectors" else store._read(sql, params)
    k = len(order)
    rows = []
    for r in raw:
        row = dict(zip(cols, r[k:]))
        if "tags" in row:
            row["tags"] = as_tags(row["tags"])
        if "embed_hash" in row:  # a node's hashes as text, its props as written (PostgreSQL's schema 13: pg_hash,
            row["content_hash"], row["embed_hash"] = hash_text(row["content_hash"]), hash_text(row["embed_hash"])
            row["props"] = whole_text(row["props"])  # pg_props)
        if table == "nodes" and row["embed_text"] is None and row["embed_hash"] is not None:
            # held once: SQLite when it is the content, PostgreSQL when the content or ``title: content``
            row["embed_text"] = whole_embed_text(row["title"], row["content"], None, row["embed_hash"])
        if table == "vectors":
            row["vector"] = store._decode_vectors([row["vector"]])[0]
        rows.append(row)
    return rows, (list(raw[-1][:k]) if len(raw) == limit else None)


def pages(store: Any, table: str, limit: int = PAGE, namespace: str | None = None) -> Iterable[list[dict]]:
    """Every row of ``table`` (of ``namespace`` only, when given) in pages."""
    after: list | None = None
    while True:
        rows, after = export_rows(store, table, after, limit, namespace)
        if rows:
            yield rows
        if after is None:
            return


def import_rows(store: Any, table: str, batches: Iterable[Sequence[dict]]) -> int:
    """Insert exported rows as they are, in one transaction (no new versions, no change-log entries: the change
    log is itself copied); the backend indexes what it derives."""
    _, cols = columns(table)
    count = 0
    with store.transaction():
        for batch in batches:
            rows = [tuple(_encode(store, table, row, c) for c in cols) for row in batch]
            store._check_import(table, rows)
            if rows and not count:
                store._importing(table)  # before the first row: e.g. an empty table's indexes built after the rows
            if table == "nodes":
                store._import_nodes(rows)
            elif table == "node_versions":
                store._import_versions(rows)
            else:
                store._bulk_insert(table, ", ".join(cols), rows)
            count += len(rows)
        store._imported(table)
    return count


def _encode(store: Any, table: str, row: dict, col: str) -> Any:
    value = row.get(col)
    if col == "tags":
        return store._tags_value(list(value or []))
    if col == "vector":
        return store._vector_value(np.asarray(value, dtype=np.float32))
    return value
