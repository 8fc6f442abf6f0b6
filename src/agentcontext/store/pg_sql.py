"""PostgreSQL helpers: URL handling, ``= ANY`` conditions and pgvector's binary form.
The schema is ``migrations/postgres.py``."""
from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from .migrations.postgres import INDEXED_CHARS  # noqa: F401  (how much of a body is text-searchable)
from .pg_props import read_sql
from .pg_recorded import read_sql as recorded_sql
from .rows import NODE_COLS, Where


def split_url(url: str) -> tuple[str, str | None]:
    """(libpq URL, schema) from a store URL whose query may carry our ``schema=`` parameter."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema or None


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def decode_vectors(raws: Sequence[bytes]) -> np.ndarray:
    """One float32 matrix from pgvector binary values of one dimension (uint16 dim, uint16 unused, then big-endian
    float4s for ``vector``, float2s for ``halfvec``: told apart by the length)."""
    dim = int.from_bytes(raws[0][:2], "big")
    joined = b"".join(memoryview(r)[4:] for r in raws)
    half = len(raws[0]) == 4 + 2 * dim and dim > 0
    return np.frombuffer(joined, dtype=">f2" if half else ">f4").reshape(len(raws), dim).astype(np.float32)


class PgWhere(Where):
    """``= ANY(array)`` needs no slicing."""

    PLACEHOLDER = "%s"

    def eq_any(self, column: str, values: list[Any] | None) -> None:
        if values is None:
            return
        if len(values) == 1:
            self.parts.append(f"{column} = %s")
            self.params.append(values[0])
        else:
            self.parts.append(f"{column} = ANY(%s)")
            self.params.append(values)


# the columns a node read with ``fields`` carries (linked_sql; the others are NULL: a ranking reads none of them)
RANKED_COLS = ("id", "kind", "namespace", "key", "title", "summary", "content", "embed_hash")


def linked_sql(prop: str, fields: Sequence[str] | None = None, content: bool = False, moved: Sequence[str] = (),
               recorded: bool = False) -> str:
    """The active nodes of one namespace and kind among the ids (an array) and those they name in ``props[prop]``
    (every column), then the nodes naming any of those and the nodes naming those (without content), in one
    statement: ``part`` 0 or 1, ``rid``, the node columns. Each node comes once as a follower (one of two levels),
    and a follower that is also of part 0 comes as its rid and id alone (the other columns NULL: its row is in part
    0 already; at 1,000,000 memories a third of the followers' rows, parsed for nothing before). Parameters by
    name: ids, ns, kind. ``prop`` is checked (``rows.check_prop``) by the caller; it is a literal, and each set of
    ids an array in the default collation (ids are "C"), so the planner walks the ``nodes_<prop>`` expression
    index. ``fields`` (a ranking's read): of the columns only ``RANKED_COLS`` and the props (as text: the client
    keeps the fields it reads, ``pg_search``) are read, the others NULL. The props are not parsed here: reading five
    fields in the server (one ``jsonb`` parse a row and their types) cost 4.4 ms of server CPU a call of ~450 rows
    at 200,000 memories, 2.5 ms with the props sent as text, where the client's decode grew by 0.7 ms
    (docs/POSTGRES_SCALE.md, session 15). ``content``: the followers come with their content too (a ranking reads
    the text of some of them: one statement instead of a ``get_nodes`` round trip each time it does). The second
    level is asked only of the first-level followers not named already (a named node's followers are first-level
    ones: at 200,000 memories ~235 of the ~680 keys a query; the B-tree's array scan had shared most of their pages,
    so it saves only ~2.5% of the statement's buffer reads). The turns named that were asked too are left out of
    the second part of ``named`` by id (``UNION ALL``): a ``UNION`` hashed every named row whole, content and props
    (the statement's execution 0.69x-0.74x without it, the same rows). ``moved`` (a schema of migration 16: the props
    held as columns, ``pg_props.MOVED``): every row brings those columns after the node's (``fields``: its props text as
    held, the client gives back what it reads; else the props whole), and a moved ``prop`` links by its column
    (``nodes_prev``, a plain btree). ``recorded`` (a schema of migration 18): the recorded time read back as its text
    (``pg_recorded``)."""
    link = f"n.{prop}" if prop in moved else f"((n.props::jsonb) ->> '{prop}')"
    named_link = f"a.{prop}" if prop in moved else f"(a.props::jsonb) ->> '{prop}'"
    collate = "" if prop in moved else ' COLLATE "default"'  # the column is "C", as the ids are
    cols = NODE_COLS.split(", ")
    whole = f"{read_sql('n')} AS props" if moved and fields is None else "n.props"
    read = {"props": whole, "recorded_at": f"{recorded_sql('n')} AS recorded_at" if recorded else "n.recorded_at"}
    shaped = [read.get(c, f"n.{c}") if fields is None or c in RANKED_COLS or c == "props"
              else f"NULL AS {c}" for c in cols] + [f"n.{c}" for c in moved]
    if fields is not None:  # the pair hash as its text (``actx_hex``): no conversion a row in the client
        shaped = ["actx_hex(n.pair_hash) AS pair_hash" if c == "n.pair_hash" else c for c in shaped]
    light = ", ".join("'' AS content" if c == "n.content" and not content else c for c in shaped)
    full = ", ".join(shaped)
    live = "n.namespace = %(ns)s AND n.kind = %(kind)s AND n.retracted_at IS NULL"
    blank = ", NULL" * (len(shaped) - 1)  # a named follower's columns after its id

    def naming(cte: str, but: str = "") -> str:
        return f"{link} = ANY(ARRAY(SELECT id{collate} FROM {cte}{but}))"

    return (f"WITH asked AS MATERIALIZED (SELECT n.rid, {full} FROM nodes n WHERE n.id = ANY(%(ids)s) AND {live}), "
            f"named AS MATERIALIZED (SELECT * FROM asked UNION ALL SELECT n.rid, {full} FROM nodes n WHERE n.id = ANY("
            f"ARRAY(SELECT {named_link} FROM asked a)) AND {live} AND n.id NOT IN "
            "(SELECT id FROM asked)), "
            f"f1 AS MATERIALIZED (SELECT n.rid, {light} FROM nodes n WHERE {naming('named')} AND {live}), "
            f"f2 AS (SELECT n.rid, {light} FROM nodes n WHERE {naming('f1', ' WHERE id NOT IN (SELECT id FROM named)')}"
            f" AND {live} AND n.id NOT IN "
            "(SELECT id FROM f1)), f AS (SELECT * FROM f1 UNION ALL SELECT * FROM f2) "
            f"SELECT 0 AS part, * FROM named UNION ALL SELECT 1, f.rid, f.id{blank} "
            "FROM f WHERE f.id IN (SELECT id FROM named) UNION ALL SELECT 1, * FROM f WHERE f.id NOT IN (SELECT id "
            "FROM named)")

