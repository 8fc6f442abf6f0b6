"""The change log's time held as a timestamp on PostgreSQL (migration 17, issue 23 s2): ``changes.at`` is a
``timestamptz`` (8 bytes) where it was the text ``utcnow`` writes (``2024-12-31T00:00:00.000000+00:00``: 33 bytes a
row, ~21 bytes a memory at 200,000 with the row's alignment), and ``changes.at_text`` holds the text only when the
timestamp would not give it back exactly (another form a copy brought: ``...Z``, no microseconds, not a time at all),
so ``changes_since``, export and ``migrate``'s digests see the text that was written, byte for byte.

A text is held as a timestamp when it is canonical: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` naming a real instant, the
form ``AT_READ`` renders (``split`` in the client for writes, ``actx_at`` in SQL for the migration's one pass; the
two agree, and each keeps a text whole rather than guess). The session's time zone plays no part: a text names its
offset, and ``AT_READ`` renders in UTC.
"""
from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any, Sequence

CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00")
FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'
# the text a row gives back: the one it was written with when it was not canonical, else its timestamp rendered
AT_READ = f"coalesce(at_text, to_char(at AT TIME ZONE 'UTC', '{FORMAT}'))"
INSERT = ("INSERT INTO changes(at, at_text, actor, op, target, namespace, detail) VALUES (%s::timestamptz, %s, %s, %s, "
          "%s, %s, %s)")
# the migration's test of a text (no cast is tried before the text is known to name a real day: a bad one would
# fail the statement); STABLE, as the text -> timestamptz cast it makes
PATTERN = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}"
           r"\+00:00$")
AT_SQL = f"""CREATE OR REPLACE FUNCTION actx_at(t text) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE WHEN t ~ '{PATTERN}' AND left(t, 4) <> '0000' THEN CASE WHEN substr(t, 9, 2)::int <= extract(day FROM
  make_date(left(t, 4)::int, substr(t, 6, 2)::int, 1) + interval '1 month' - interval '1 day') THEN CASE WHEN
  to_char(t::timestamptz AT TIME ZONE 'UTC', '{FORMAT}') = t THEN t::timestamptz END END END $$"""


def has_times(db: Any) -> bool:
    """Whether the change log's time is a timestamp (migration 17)."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'changes' AND column_name = 'at_text'").fetchone() is not None


def canonical(at: Any) -> bool:
    """Whether ``at`` is a text a timestamp gives back exactly (``AT_READ``)."""
    return isinstance(at, str) and _canonical(at)


@lru_cache(maxsize=256)  # the rows of one write share their time: a bulk load splits it once
def _canonical(at: str) -> bool:
    if not CANONICAL.fullmatch(at):
        return False
    try:
        when = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%f+00:00")
    except ValueError:  # no such day or time (2024-02-30, a 60th second)
        return False
    return when.isoformat(timespec="microseconds") + "+00:00" == at


def split(at: Any) -> tuple[Any, Any]:
    """(the timestamp's text, the text kept): one of them None."""
    return (at, None) if canonical(at) else (None, at)


def split_rows(rows: Sequence[Sequence[Any]], at: int = 0) -> list[tuple]:
    """Change rows whose column ``at`` is the text written, with that column as the two (``split``)."""
    return [(*r[:at], *split(r[at]), *r[at + 1:]) for r in rows]


def split_cols(cols: str) -> tuple[str, int]:
    """A column list naming ``at``, with ``at_text`` after it, and where ``at`` stands."""
    names = [c.strip() for c in cols.split(",")]
    at = names.index("at")
    return ", ".join([*names[:at + 1], "at_text", *names[at + 1:]]), at


def copy_form(cols: str, rows: Sequence[Sequence[Any]]) -> tuple[str, list[tuple]]:
    """A copy's column list and rows with ``at`` split in two (``split_cols``, ``split_rows``)."""
    cols, at = split_cols(cols)
    return cols, split_rows(rows, at)
