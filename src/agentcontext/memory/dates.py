"""Time in memories, for temporal questions (issue 11 s5): which memories place an event in time, which months
their events fall in, and which dates a query names or whether it asks when.

A conversation turn says "I went to a support group yesterday"; the question is "When did Caroline go to the
support group?" or "What did Caroline do in May 2023?". Two things help retrieval there, both cheap at any
store size (one regex per memory when the index takes it in, integer columns and numpy at query time):

- ``time_refs(text)``: a bit set of the time expressions the text holds: ``TIMED`` for any (yesterday, last
  week, on Friday, three years ago, a month's name, a year), and which relative ones shift the event away
  from the day the memory was written (``RECENT``: the week before; ``LAST_MONTH``; ``NEXT_MONTH``;
  ``LAST_YEAR``). Memory search favours ``TIMED`` memories a little for every query (they state events), and
  more for a query that asks when (``asks_when``).
- ``date_matches``: the query names months or years ("in May 2023", "on 3 May", "in 2022") and the memory's
  events fall in one of them: its own month (``created_at``, the session date of a conversation turn), resolved
  by its relative expressions ("last month" in a memory of 18 April 2023 is March 2023). The index keeps each
  memory's month and the month a week earlier (``month_numbers``), so matching is integer arithmetic.
"""
from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta

import numpy as np

TIMED, RECENT, LAST_MONTH, NEXT_MONTH, LAST_YEAR = 1, 2, 4, 8, 16
# The version of what ``time_refs`` and ``month_numbers`` compute. The memory index file (memory/index.py) stores
# their values per memory; a file written with another version (or none: before version 2) is rebuilt, never read.
# Move it whenever a change here would give any text or date another value.
TIME_BITS_VERSION = 2
NO_MONTH = int(np.iinfo(np.int32).min)  # the month columns' value for a memory without a (readable) date

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTH_NAMES = "|".join(_MONTHS)
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thu|fri|sat|sun"
_TIMED = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|lately|the other day|ago|since|(?:19|20)\d\d"
    rf"|(?:last|next|this|on) (?:night|morning|week|weekend|month|year|past|{_WEEKDAYS})|{_MONTH_NAMES})\b",
    re.IGNORECASE)
_RECENT = re.compile(rf"\b(?:yesterday|last night|last week|last weekend|the other day|(?:last|on) (?:{_WEEKDAYS}))\b",
                     re.IGNORECASE)
_LAST_MONTH = re.compile(r"\b(?:last month|(?:a few|two|three|several|couple of) weeks ago)\b", re.IGNORECASE)
_NEXT_MONTH = re.compile(r"\bnext month\b", re.IGNORECASE)
_LAST_YEAR = re.compile(r"\blast year\b", re.IGNORECASE)
# A month's name (with a day and a year, either side) or a year alone. "may" only capitalised: "may" is a verb too.
_NAMED = re.compile(
    rf"\b(?P<month>{_MONTH_NAMES})\b\.?(?:\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?,?\s*(?P<year>(?:19|20)\d\d)?"
    r"|\b(?P<alone>(?:19|20)\d\d)\b", re.IGNORECASE)
_ASKS_WHEN = re.compile(r"^\s*(?:when|how long|what (?:year|month|date|day)|which (?:year|month))\b|\bwhen did\b",
                        re.IGNORECASE)


# The same patterns matched case-sensitively on an ASCII text lowered (every literal in them is lower case): for
# ASCII, IGNORECASE is ASCII case folding and lowering keeps every position and word boundary, so they match where
# the others do, at half the cost (a case-insensitive pattern that starts with ``\b`` is tried at every position)
_ASCII = tuple(re.compile(p.pattern) for p in (_TIMED, _RECENT, _LAST_MONTH, _NEXT_MONTH, _LAST_YEAR))


def time_refs(text: str | None) -> int:
    """The bit set of time expressions in ``text`` (module doc); 0 when it holds none."""
    if not text:
        return 0
    timed, recent, last_month, next_month, last_year = (_TIMED, _RECENT, _LAST_MONTH, _NEXT_MONTH, _LAST_YEAR)
    if text.isascii():  # (Unicode case folding has other equivalents: "ſ" is an "s", "K" (Kelvin) a "k")
        text = text.lower()
        timed, recent, last_month, next_month, last_year = _ASCII
    if not timed.search(text):
        return 0
    bits = TIMED
    if recent.search(text):
        bits |= RECENT
    if last_month.search(text):
        bits |= LAST_MONTH
    if next_month.search(text):
        bits |= NEXT_MONTH
    if last_year.search(text):
        bits |= LAST_YEAR
    return bits


def month_numbers(created_at: str | None) -> tuple[int, int]:
    """(the month of an ISO timestamp, the month 7 days before it) as ``year * 12 + month - 1``; ``NO_MONTH``
    twice when there is none or it does not parse."""
    if not created_at:
        return NO_MONTH, NO_MONTH
    try:
        day = datetime.fromisoformat(str(created_at).replace("Z", "+00:00")).date()
    except ValueError:
        return NO_MONTH, NO_MONTH
    week = day - timedelta(days=7)
    return day.year * 12 + day.month - 1, week.year * 12 + week.month - 1


def asks_when(query: str) -> bool:
    """Whether the query asks when something happened or how long ago / for how long."""
    return bool(_ASKS_WHEN.search(query))


def named_dates(query: str) -> list[tuple[int | None, int | None]]:
    """(year or None, month or None) of each month or year the query names."""
    out: list[tuple[int | None, int | None]] = []
    for m in _NAMED.finditer(query):
        if m.group("alone"):
            out.append((int(m.group("alone")), None))
        elif m.group("month").lower() != "may" or m.group("month")[0] == "M":
            out.append((int(m.group("year")) if m.group("year") else None, _MONTHS[m.group("month").lower()]))
    return out


def month_named(named: list[tuple[int | None, int | None]], months: np.ndarray) -> np.ndarray:
    """Where a memory's own month (``months``, from ``month_numbers``) is one the query names: the part of
    ``date_matches`` that holds without any relative expression, in one or two passes over the column."""
    hit = np.zeros(months.size, dtype=bool)
    for year, month in named:
        if month is None:
            hit |= (months >= year * 12) & (months < year * 12 + 12)
        elif year is None:
            hit |= (months % 12 == month - 1) & (months != NO_MONTH)
        else:
            hit |= months == year * 12 + month - 1
    return hit


def date_matches(named: list[tuple[int | None, int | None]], months: np.ndarray, before: np.ndarray,
                 refs: np.ndarray) -> np.ndarray:
    """1.0 where a memory's events fall in a named month or year: its own month (``months``, from
    ``month_numbers``), the month a week before it (``before``) if it says "last week" or "yesterday", the month
    before or after if it says "last month" or "next month", the year before if it says "last year"."""
    out = np.zeros(months.size, dtype=np.float32)
    known = months != NO_MONTH
    if not named or not known.any():
        return out
    own = months.astype(np.int64)
    week = before.astype(np.int64)
    recent, last_month = (refs & RECENT) != 0, (refs & LAST_MONTH) != 0
    next_month, last_year = (refs & NEXT_MONTH) != 0, (refs & LAST_YEAR) != 0
    hit = np.zeros(months.size, dtype=bool)
    for year, month in named:
        if month is None:
            def within(m: np.ndarray, y: int = year) -> np.ndarray:
                return (m >= y * 12) & (m < y * 12 + 12)
            hit |= within(own) | (recent & within(week)) | (last_month & within(own - 1))
            hit |= (next_month & within(own + 1)) | (last_year & within(own - 12))
        elif year is None:
            r, mod = month - 1, own % 12
            hit |= (mod == r) | (recent & (week % 12 == r)) | (last_month & (mod == (r + 1) % 12))
            hit |= next_month & (mod == (r - 1) % 12)
        else:
            t = year * 12 + month - 1
            hit |= (own == t) | (recent & (week == t)) | (last_month & (own == t + 1)) | (next_month & (own == t - 1))
    out[hit & known] = 1.0
    return out
