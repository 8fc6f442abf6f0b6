"""A node's recorded time held as a timestamp on PostgreSQL (migration 18, issue 23 s2), as migration 17 holds the
change log's (``pg_changes``): ``nodes.recorded_at`` a ``timestamptz`` (8 bytes) where it was the text a write's
``utcnow`` gives (``2024-12-31T00:00:00.000000+00:00``: 33 bytes, one a memory), and ``nodes.recorded_text`` the text
only when a timestamp would not give it back exactly (``pg_changes.canonical``: another form a copy brought), so every
read (``read_sql``: a node, a listing in recorded order, ``as_of``, an export, ``migrate``'s digests) sees the text
that was written, byte for byte, and compares it as text, as SQLite does. ``node_versions`` keeps its text column
(superseded versions: few rows); a version moved there from ``nodes`` is read through ``read_sql``.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Sequence

from .pg_changes import FORMAT, split

_FIRST, _LAST = datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)  # the timestamps a text names (4 digits)


def read_sql(alias: str = "") -> str:
    """SQL: a node row's recorded time as the text written (the row of ``alias``, or unqualified)."""
    a = f"{alias}." if alias else ""
    return f"coalesce({a}recorded_text, to_char({a}recorded_at AT TIME ZONE 'UTC', '{FORMAT}'))"


def latest_held(text: str) -> str | None:
    """The latest canonical time (``pg_changes.canonical``) whose text sorts at or before ``text`` (None: none does).
    Canonical texts sort as their times do, so a row held as a timestamp reads as at most ``text`` exactly when its
    timestamp is at most this one: ``at_most`` compares timestamps, not every row's rendered text."""
    def form(t: datetime) -> str:
        return t.isoformat(timespec="microseconds") + "+00:00"

    if form(_FIRST) > text:
        return None
    low, high = 0, (_LAST - _FIRST) // timedelta(microseconds=1)  # form(low) <= text; find the last such
    while low < high:
        mid = (low + high + 1) // 2
        if form(_FIRST + timedelta(microseconds=mid)) <= text:
            low = mid
        else:
            high = mid - 1
    return form(_FIRST + timedelta(microseconds=low))


def at_most(as_of: str) -> tuple[str, list[Any]]:
    """SQL (``%s`` placeholders) and params: a node row's recorded time, as its text, at or before ``as_of`` (text
    order, as SQLite compares): a timestamp at most ``latest_held``, or a kept text at most ``as_of``."""
    return "(recorded_at <= %s::timestamptz OR recorded_text <= %s)", [latest_held(as_of), as_of]


# a listing's order in recorded time (``rows.NODE_ORDERS``) by the timestamp, a row whose text is kept (its timestamp
# NULL) first: it is there exactly when the page holds one
TIMED = {" ORDER BY n.recorded_at, n.id": " ORDER BY n.recorded_at NULLS FIRST, n.id",
         " ORDER BY n.recorded_at DESC, n.id DESC": " ORDER BY n.recorded_at DESC NULLS FIRST, n.id DESC"}


def page(store: Any, cols: str, where: Any, order: str, limit: int) -> list[tuple] | None:
    """The first ``limit`` live rows (``cols``) of ``where`` in recorded ``order``, sorted by the timestamp and their
    texts rendered after the page, or None when the text order must decide (another order, or a row of ``where``
    keeps a text of its own: ``select_nodes`` sorts by the texts then). Canonical texts sort as their times do, so
    where every row's is canonical the two orders are one (ties: the same time, the same text, then the id); a row
    keeping its text has no timestamp and sorts first (NULLS FIRST), so the page's first row tells. Sorting the texts
    rendered every matched row's before the page was cut (20,000 rows, a page of 100: 30.7 -> 22.6 ms, newest first
    45.7 -> 27.1; docs/POSTGRES_SCALE.md). A whole listing renders every row's text anyway: it keeps the text order."""
    timed = TIMED.get(order)
    if timed is None:
        return None
    inner = f"SELECT n.* FROM nodes n{where.hint}{where.sql()}{timed} LIMIT {int(limit)}"
    rows = store._read(f"SELECT {cols}, n.recorded_at IS NULL FROM ({inner}) n{timed}", where.params)
    if rows and rows[0][-1]:
        return None
    return [r[:-1] for r in rows]


def has_times(db: Any) -> bool:
    """Whether the schema holds the nodes' recorded time as a timestamp (migration 18)."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'nodes' AND column_name = 'recorded_text'").fetchone() is not None


def reads(cols: str, alias: str = "") -> str:
    """A column list naming ``recorded_at`` with the text read back in its place (``read_sql``)."""
    return cols.replace(" recorded_at,", f" {read_sql(alias)} AS recorded_at,")


def setter(times: bool) -> "tuple[str, Any]":
    """The SET clause that writes a node's recorded time (``?`` placeholders) and the params it takes for a text."""
    if not times:
        return "recorded_at = ?", lambda at: [at]
    return "recorded_at = ?::timestamptz, recorded_text = ?", lambda at: list(split(at))


def split_rows(rows: Sequence[Sequence[Any]], names: Sequence[str]) -> list[list[Any]]:
    """Node rows (columns ``names``, the recorded time as its text) as ``nodes`` holds them: the timestamp's text or
    None in ``recorded_at``, the text kept or None appended (the column ``recorded_text``)."""
    at = list(names).index("recorded_at")
    out = []
    for r in rows:
        r = list(r)
        r[at], kept = split(r[at])
        r.append(kept)
        out.append(r)
    return out
