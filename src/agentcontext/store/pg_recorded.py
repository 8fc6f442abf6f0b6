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
