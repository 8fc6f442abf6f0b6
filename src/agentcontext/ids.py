"""The rule every record id must follow when a record is created: ``check_id``.

A record id (a node's id, an edge's endpoints and type, a tombstone's id) is any text of printable Unicode, spaces
included, that is not blank, holds no control character and is at most ``MAX_ID_BYTES`` long in UTF-8. The store
applies it on every write that creates a record (``store/sql_base.py``), so each door (Python API, CLI, MCP, web
console, imports) refuses a bad id the same way and before anything is written. Ids already in a store made before
the rule are still read, updated and erased: only new ids are checked.

1,024 bytes is far above any id agentcontext or its packs make (the longest of the 214,659 ids the whole test
suite wrote, the example packs, the Nenjo packages and the LoCoMo eval included, is 76 bytes: a ``pkg:`` doc id)
and below what an index entry may hold on PostgreSQL (2,704 bytes), so an id that passes here fits every backend.
"""
from __future__ import annotations

import re
from typing import Any

from .errors import ValidationError

MAX_ID_BYTES = 1024
"""The longest id, in bytes of its UTF-8 encoding."""

# C0 controls (NUL, tab, newline, ...), DEL and the C1 controls; the Unicode line and paragraph separators, which
# break a line as a newline does; lone surrogates, which no UTF-8 text (and so no store) can hold
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SHOWN = 60  # characters of a bad id a message quotes


def shown(value: Any) -> str:
    """A bad id as a message quotes it: its first characters, escaped, with the full length when cut."""
    text = str(value)
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text):,} characters)"


def id_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a record id (the rule it breaks), or None when it is a good one."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not text"
    if not value.strip():
        return "is empty" if not value else "is blank (only spaces)"
    if len(value) * 4 > MAX_ID_BYTES:  # short ids (almost all of them) need no encoding to measure
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_ID_BYTES:
            return f"is {size:,} bytes long in UTF-8, over the limit of {MAX_ID_BYTES:,}"
    bad = _FORBIDDEN.search(value)
    if bad is not None:
        return f"holds a control character (U+{ord(bad.group()):04X})"
    return None


def check_id(value: Any, what: str = "id") -> str:
    """``value`` if it is a good record id, else ``ValidationError`` naming the id, the rule it breaks and the fix."""
    problem = id_problem(value)
    if problem is not None:
        raise ValidationError(
            f"{what} {shown(value)} {problem}: an id must be 1 to {MAX_ID_BYTES:,} bytes (UTF-8) of printable text, "
            "spaces allowed, with no control characters (NUL, tab, newline, ...); choose another id that follows "
            "this rule", id=str(value)[:200], rule=problem, max_bytes=MAX_ID_BYTES)
    return value
