"""SQLite text search ranked by the statistics of the namespaces searched, never of the whole table.

FTS5's ``bm25()`` takes its statistics from the whole ``fts`` table: the number of rows ``N``, the average row
length ``avgdl`` and each phrase's row count ``n`` (its idf). Those count every namespace, so a principal searching
only its own namespace would see its scores (and their order) move when a namespace it may not read holds the
query's words: an oracle for whether, and how often, a word occurs where it may not look. Here a search ranks as
FTS5 would if the store held only the namespaces searched:

    score = sum over the query's phrases of idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

with ``f`` the phrase's hits in the row weighted by column (4, 3, 2, 1, 2: key, title, summary, content, tags),
``D`` the row's tokens (``fts_docsize``), ``avgdl`` and ``N`` over the live rows of the namespaces searched (every
kind), ``idf = ln((N - n + 0.5) / (n + 0.5))`` at least 1e-6, ``n`` the rows of those namespaces holding the phrase;
k1 = 1.2, b = 0.75: FTS5's formula, evaluated in FTS5's order, so the scores are bit-identical to ``bm25()`` on a
store holding only those namespaces (tests/test_text_stats_scope.py checks it). ``f`` is read back from FTS5 itself:
each phrase is matched alone and its ``bm25()`` (global idf and avgdl, both known) inverted; ``f`` is a sum of the
integer column weights, so rounding makes it exact. The namespaces' ``N`` and token total are counted once per
change of the store (``change_counter``) and remembered.

When no node lies outside the namespaces searched (a store holding one namespace, as each LoCoMo store does, or a
search of every namespace), the whole table's statistics are the namespaces' own and the search is FTS5's single
ranked statement, as before (``alone``: two index seeks per searched namespace).
"""
from __future__ import annotations

import math
import threading
from typing import Any, Callable, Sequence

import numpy as np

WEIGHTS = (4.0, 3.0, 2.0, 1.0, 2.0)  # key, title, summary, content, tags
BM25 = "bm25(fts, 4.0, 3.0, 2.0, 1.0, 2.0)"
K1, B = 1.2, 0.75
Read = Callable[[str, Sequence[Any]], list[tuple]]


def varints(blob: bytes) -> list[int]:
    """The unsigned varints FTS5 writes (SQLite's record format: 7 bits a byte, high bit set while more follow; the
    ninth byte gives all 8 bits)."""
    out, i, size = [], 0, len(blob)
    while i < size:
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def tokens(blob: bytes) -> int:
    """A row's tokens over every column, from its ``fts_docsize`` entry."""
    return sum(varints(blob))


def total_tokens(blobs: list[bytes]) -> int:
    """The tokens of many rows: one byte per column while each column holds fewer than 128 tokens (the usual case,
    summed at once), decoded row by row otherwise."""
    if not blobs:
        return 0
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    if not (raw & 0x80).any():
        return int(raw.sum(dtype=np.int64))
    return sum(tokens(b) for b in blobs)


def marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def alone(read: Read, namespaces: Sequence[str]) -> bool:
    """Whether no node (live or not) lies outside ``namespaces``: a seek on the namespace index for each gap around
    the sorted names (retracted nodes outside make this False, which only costs the scoped path)."""
    names = sorted(set(namespaces))
    gaps = [("namespace < ?", [names[0]]), ("namespace > ?", [names[-1]])]
    gaps += [("namespace > ? AND namespace < ?", [lo, hi]) for lo, hi in zip(names, names[1:])]
    return not any(read(f"SELECT 1 FROM nodes WHERE {cond} LIMIT 1", params) for cond, params in gaps)


class ScopeStats:
    """(rows, tokens) of the text index's rows in a set of namespaces, remembered per store change."""

    KEEP = 64  # namespace sets remembered

    def __init__(self) -> None:
        self._kept: dict[tuple[str, ...], tuple[int, int, int]] = {}
        self._lock = threading.Lock()

    def get(self, read: Read, namespaces: Sequence[str], counter: int) -> tuple[int, int]:
        key = tuple(sorted(set(namespaces)))
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] == counter:
            return kept[1], kept[2]
        sizes = [r[0] for r in read("SELECT d.sz FROM nodes n JOIN fts_docsize d ON d.id = n.rid WHERE n.namespace "
                                    f"IN ({marks(key)}) AND n.retracted_at IS NULL", key)]
        value = (counter, len(sizes), total_tokens(sizes))
        with self._lock:
            if len(self._kept) >= self.KEEP:
                self._kept.clear()
            self._kept[key] = value
        return value[1], value[2]


def idf(rows: int, holding: int) -> float:
    """FTS5's idf (fts5Bm25GetData): at least 1e-6."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else 1e-6


def table_totals(read: Read) -> tuple[int, int]:
    """(rows, tokens) of the whole text index: FTS5's averages record (``fts_data`` id 1: rows, then each column's
    token total)."""
    found = read("SELECT block FROM fts_data WHERE id = 1", ())
    if not found or not found[0][0]:
        return 0, 0
    values = varints(found[0][0])
    return values[0], sum(values[1:])


def phrase_hits(read: Read, phrase: str, namespaces: Sequence[str], table_rows: int,
                table_avgdl: float) -> list[tuple[int, str, str, float, int]]:
    """(rid, id, kind, f, D) of every live row of ``namespaces`` holding ``phrase`` (an FTS5 MATCH operand): ``f``
    read back from the phrase's own ``bm25()``, which weighs it by the whole table's idf and avgdl."""
    held = read("SELECT count(*) FROM fts WHERE fts MATCH ?", (phrase,))[0][0]
    weight = idf(table_rows, held)
    rows = read(f"SELECT n.rid, n.id, n.kind, -{BM25}, d.sz FROM fts JOIN nodes n ON n.rid = fts.rowid "
                f"JOIN fts_docsize d ON d.id = fts.rowid WHERE fts MATCH ? AND n.namespace IN ({marks(namespaces)}) "
                "AND n.retracted_at IS NULL", (phrase, *namespaces))
    out = []
    for rid, nid, kind, score, size in rows:
        length = tokens(size)
        g = score / weight  # f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))
        norm = K1 * (1 - B + B * length / table_avgdl)
        out.append((rid, nid, kind, float(round(g * norm / (K1 + 1.0 - g))), length))
    return out


def scoped_search(read: Read, terms: list[str], phrase: Callable[[str], str], namespaces: Sequence[str],
                  kinds: list[str] | None, ids: Sequence[str] | None, limit: int, counter: int, stats: ScopeStats,
                  keep: Callable[[list[str], dict[str, int], int], list[str]]) -> list[tuple[str, float]]:
    """BM25 of the rows of ``namespaces`` (of ``kinds``, among ``ids``) matching any of ``terms`` (each one FTS5
    phrase, ``phrase(term)`` its MATCH operand; in query order), with the namespaces' statistics. ``keep(terms, rows
    holding each, rows)`` chooses the terms that rank (dropping those too common to matter, as ``text_search`` does
    on the whole table)."""
    rows, total = stats.get(read, namespaces, counter)
    if not rows:
        return []
    table_rows, table_tokens = table_totals(read)
    table_avgdl = table_tokens / table_rows
    kept = terms
    if len(terms) >= 2 and rows >= 1000:  # else every term ranks (``text.informative``): no need to count them
        kept = keep(terms, {t: read("SELECT count(*) FROM fts JOIN nodes n ON n.rid = fts.rowid WHERE fts MATCH ? "
                                    f"AND n.namespace IN ({marks(namespaces)}) AND n.retracted_at IS NULL",
                                    (phrase(t), *namespaces))[0][0] for t in terms}, rows)
    hits = {t: phrase_hits(read, phrase(t), namespaces, table_rows, table_avgdl) for t in kept}
    avgdl = total / rows
    wanted_kinds = None if kinds is None else set(kinds)
    wanted_ids = None if ids is None else set(ids)
    found: dict[int, list] = {}  # rid -> [id, score]
    for term in kept:  # FTS5 sums the phrases in query order: so does this, for the same float
        weight = idf(rows, len(hits[term]))
        for rid, nid, kind, f, length in hits[term]:
            if (wanted_kinds is not None and kind not in wanted_kinds) or (wanted_ids is not None
                                                                           and nid not in wanted_ids):
                continue
            entry = found.setdefault(rid, [nid, 0.0])
            entry[1] += weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
    ranked = sorted(found.items(), key=lambda item: (-item[1][1], item[0]))
    return [(nid, score) for _, (nid, score) in ranked[: int(limit)]]
