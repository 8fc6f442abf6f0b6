"""The change log's time held as a timestamp on PostgreSQL (migration 17, issue 23 s2): ``changes.at`` is a
``timestamptz`` (8 bytes) where it was the text ``utcnow`` writes (``2024-12-31T00:00:00.000000+00:00``: 33 bytes a
row, ~21 bytes a memory at 200,000 with the row's alignment), and ``changes.at_text`` holds the text only when the
timestamp would not give it back exactly (another form a copy brought: ``...Z``, no microseconds, not a time at all),
so ``changes_since``, export and ``migrate``'s digests see the text that was written, byte for byte.

The operation's name (``node.put``, ...) is held as a one-character code from migration 18 on (``hold_op``): a
name of ``OPS``, the names the store logs, as the control character numbering it (``chr(1)`` for ``node.put``: 2
bytes where the name took 9, one row a memory); any other name as it is (a copy from another store may bring any
text), behind ``ESCAPE`` when it would read as a code or starts with the escape itself (empty, or a first character
below a space, or ``ESCAPE``). ``OP_READ`` reads the name back. The code stays in the text column ``op``: a new
column would grow the row's null bitmap past a byte and its header from 24 to 32 bytes, more than the code saves.
``OPS`` is part of the schema: append to it (up to 31 names), never reorder or remove a name.

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
# the migration's test of a text (no cast is tried before the text is known to name a real day: a bad one would
# fail the statement); STABLE, as the text -> timestamptz cast it makes
PATTERN = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}"
           r"\+00:00$")
AT_SQL = f"""CREATE OR REPLACE FUNCTION actx_at(t text) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT CASE WHEN t ~ '{PATTERN}' AND left(t, 4) <> '0000' THEN CASE WHEN substr(t, 9, 2)::int <= extract(day FROM
  make_date(left(t, 4)::int, substr(t, 6, 2)::int, 1) + interval '1 month' - interval '1 day') THEN CASE WHEN
  to_char(t::timestamptz AT TIME ZONE 'UTC', '{FORMAT}') = t THEN t::timestamptz END END END $$"""


# migration 18: the names the store logs (sql_*.py, scrub.py, pg_shard_move.py), numbered from 1 in this order
OPS = ("node.put", "node.retract", "node.purge", "record.put", "record.delete", "record.erase", "vectors.put",
       "vectors.delete", "edges.put", "edges.retract", "tombstones.put", "history.purge", "tenant.move")
assert len(OPS) < 32  # a code is a character below a space
CODES = {op: chr(i) for i, op in enumerate(OPS, 1)}
ESCAPE = "\x7f"  # (DEL) before a name held as it is that would otherwise read as a code
_OP_ARRAY = "ARRAY[" + ", ".join(f"'{op}'" for op in OPS) + "]::text[]"
# SQL: a name as held (``hold_op``; the migration's one pass), and the name a row gives back
OP_HOLD_SQL = (f"CASE WHEN array_position({_OP_ARRAY}, {{col}} COLLATE \"C\") IS NOT NULL THEN chr(array_position("
               f"{_OP_ARRAY}, {{col}} COLLATE \"C\")) WHEN {{col}} COLLATE \"C\" < ' ' OR left({{col}}, 1) = chr(127) "
               "THEN chr(127) || {col} ELSE {col} END")
# (byte order, ``COLLATE "C"``, in both: a database's own collation, en_US say, may ignore control characters)
OP_READ = (f"CASE WHEN op COLLATE \"C\" < ' ' THEN ({_OP_ARRAY})[ascii(op)] WHEN left(op, 1) = chr(127) THEN "
           "substr(op, 2) ELSE op END")


def has_times(db: Any) -> bool:
    """Whether the change log's time is a timestamp (migration 17)."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'changes' AND column_name = 'at_text'").fetchone() is not None


def reads(times: bool, ops: bool) -> tuple[str, str]:
    """The SQL that reads a change's time and operation as the texts written (``CHANGE_AT``, ``CHANGE_OP``)."""
    return (AT_READ if times else "at"), (OP_READ if ops else "op")


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


def hold_op(op: Any) -> Any:
    """An operation's name as ``changes.op`` holds it from migration 18 on (the module's docstring)."""
    if not isinstance(op, str):
        return op  # (None: refused by the column, as before)
    code = CODES.get(op)
    if code is not None:
        return code
    return ESCAPE + op if op == "" or op[0] < " " or op[0] == ESCAPE else op


def copy_form(cols: str, rows: Sequence[Sequence[Any]], times: bool = True,
              ops: bool = False) -> tuple[str, list[tuple]]:
    """A change row's column list (naming ``at`` and ``op``) and rows, as the schema holds them: with ``times``
    (migration 17) ``at`` split in two (``at``, ``at_text``: ``split``), with ``ops`` (18) ``op`` coded
    (``hold_op``)."""
    names = [c.strip() for c in cols.split(",")]
    out: Sequence[Sequence[Any]] = rows
    if ops:
        i = names.index("op")
        out = [(*r[:i], hold_op(r[i]), *r[i + 1:]) for r in out]
    if times:
        i = names.index("at")
        names[i + 1:i + 1] = ["at_text"]
        out = [(*r[:i], *split(r[i]), *r[i + 1:]) for r in out]
    return ", ".join(names), list(out)


def insert(rows: Sequence[Sequence[Any]], times: bool, ops: bool) -> tuple[str, list[tuple]]:
    """The statement and rows that log changes given as ``sql_part.CHANGE_COLS`` (the texts written)."""
    cols, out = copy_form("at, actor, op, target, namespace, detail", rows, times, ops)
    values = ", ".join("%s::timestamptz" if c == "at" and times else "%s" for c in cols.split(", "))
    return f"INSERT INTO changes({cols}) VALUES ({values})", out
