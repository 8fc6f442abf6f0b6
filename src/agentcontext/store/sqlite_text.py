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
integer column weights, so rounding makes it exact. The namespaces' live rows (rid, tokens, kind: 16 bytes a row)
are read once and remembered (``ScopeStats``), then follow the change log (a write reads only the rows it put or
retracted in those namespaces again; a purge or a long log: all of them); a phrase's rows are placed among them by
rid (numpy), and only the best ``limit`` rows' ids are read.

Cost (benchmarks/text_scope.py): one statement per query word instead of one per query, each scoring every row
holding the word in the whole table, so a search beside other namespaces costs more than FTS5's single ranked
statement (about 1.5-3x for the text search alone). Timing still grows with what the whole table holds (as
before): a side channel of volume, not of scores.

When no node lies outside the namespaces searched (a store holding one namespace, as each LoCoMo store does, or a
search of every namespace), the whole table's statistics are the namespaces' own and the search is FTS5's single
ranked statement, as before (``alone``: two index seeks per searched namespace). ``within`` (some ids' rows: what a
principal reads of a pack, doc by doc) is always ranked here, by those rows' statistics.
"""
from __future__ import annotations

import math
import threading
from typing import Any, Callable, Sequence

import numpy as np

from ..text import COMMON_SHARE, informative

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


def marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def alone(read: Read, namespaces: Sequence[str]) -> bool:
    """Whether no node (live or not) lies outside ``namespaces``: a seek on the namespace index for each gap around
    the sorted names (retracted nodes outside make this False, which only costs the scoped path)."""
    names = sorted(set(namespaces))
    gaps = [("namespace < ?", [names[0]]), ("namespace > ?", [names[-1]])]
    gaps += [("namespace > ? AND namespace < ?", [lo, hi]) for lo, hi in zip(names, names[1:])]
    return not any(read(f"SELECT 1 FROM nodes WHERE {cond} LIMIT 1", params) for cond, params in gaps)


class ScopeRows:
    """The live rows of the text index in a set of namespaces: rids (sorted), each row's tokens and kind, and the
    token total; counted once per store change (``change_counter``) and remembered."""

    def __init__(self, rids: np.ndarray, lengths: np.ndarray, kinds: np.ndarray, kind_names: list[str]) -> None:
        self.rids, self.lengths, self.kinds, self.kind_names = rids, lengths, kinds, kind_names
        self.total = int(lengths.sum()) if lengths.size else 0

    def changed(self, removed: Sequence[int], added: list[tuple[int, str, bytes]]) -> ScopeRows:
        """These rows with the rows ``removed`` (rids) taken out and ``added`` (rid, kind, fts_docsize entry) put
        in, in rid order."""
        keep = ~np.isin(self.rids, np.asarray(removed, dtype=np.int64))
        names = list(self.kind_names)
        codes = {k: i for i, k in enumerate(names)}
        new = scope_rows(added)
        remap = np.asarray([codes.setdefault(k, len(codes)) for k in new.kind_names], dtype=np.int32)
        names = list(codes)
        rids = np.concatenate([self.rids[keep], new.rids])
        order = np.argsort(rids, kind="stable")
        return ScopeRows(rids[order], np.concatenate([self.lengths[keep], new.lengths])[order],
                         np.concatenate([self.kinds[keep], remap[new.kinds] if new.kinds.size else new.kinds])[order],
                         names)

    def kind_mask(self, kinds: list[str] | None) -> np.ndarray | None:
        if kinds is None:
            return None
        return np.isin(self.kinds, [i for i, k in enumerate(self.kind_names) if k in set(kinds)])


def scope_rows(found: list[tuple[int, str, bytes]]) -> ScopeRows:
    """``ScopeRows`` of (rid, kind, fts_docsize entry) rows."""
    if not found:
        return ScopeRows(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int32), [])
    found = sorted(found)
    rids, kinds, sizes = zip(*found)
    codes: dict[str, int] = {}
    kind_codes = np.fromiter((codes.setdefault(k, len(codes)) for k in kinds), dtype=np.int32, count=len(kinds))
    return ScopeRows(np.asarray(rids, dtype=np.int64), row_tokens(list(sizes)), kind_codes, list(codes))


def rows_of_ids(read: Read, ids: Sequence[str], namespaces: Sequence[str] | None) -> ScopeRows:
    """``ScopeRows`` of the live rows with these ids (in ``namespaces``): what a principal who may read only
    those records searches, ranked by their statistics alone."""
    found: list[tuple[int, str, bytes]] = []
    unique = list(dict.fromkeys(ids))
    where = "" if namespaces is None else f" AND n.namespace IN ({marks(namespaces)})"
    for at in range(0, len(unique), 800):
        part = unique[at:at + 800]
        found.extend(read("SELECT n.rid, n.kind, d.sz FROM nodes n JOIN fts_docsize d ON d.id = n.rid WHERE n.id IN "
                          f"({marks(part)}) AND n.retracted_at IS NULL{where}", (*part, *(namespaces or ()))))
    return scope_rows(found)


Since = Callable[[int], "list[Any] | None"]  # the store's changes after a seq (op, target, namespace), None: too many


class ScopeStats:
    """``ScopeRows`` per set of namespaces, remembered per store change (a few sets; 16 bytes a row). After a change
    the remembered rows follow the change log (the nodes put or retracted in those namespaces are read again), so a
    write costs the next search its own rows, not the namespaces' (a purge, a long log or a text index that changed
    without its log, an import: read whole again)."""

    KEEP = 8  # namespace sets remembered
    FOLLOW = 5000  # changes followed at most; more: the rows are read whole again

    def __init__(self) -> None:
        self._kept: dict[tuple[str, ...], tuple[tuple[int, ...], ScopeRows]] = {}
        self._lock = threading.Lock()

    def get(self, read: Read, namespaces: Sequence[str], version: tuple[int, ...], since: Since) -> ScopeRows:
        """The rows of ``namespaces`` as of ``version`` (the store's change counter and the text index's totals);
        ``since(seq)``: the changes after ``seq`` (at most FOLLOW, else None)."""
        key = tuple(sorted(set(namespaces)))
        with self._lock:
            kept = self._kept.get(key)
        value = None
        if kept is not None and kept[0] == version:
            return kept[1]
        if kept is not None and kept[0][0] < version[0]:
            value = self._follow(read, key, kept[1], since(kept[0][0]))
        if value is None:
            value = scope_rows(read("SELECT n.rid, n.kind, d.sz FROM nodes n JOIN fts_docsize d ON d.id = n.rid "
                                    f"WHERE n.namespace IN ({marks(key)}) AND n.retracted_at IS NULL", key))
        with self._lock:
            if len(self._kept) >= self.KEEP:
                self._kept.clear()
            self._kept[key] = (version, value)
        return value

    @staticmethod
    def _follow(read: Read, key: tuple[str, ...], rows: ScopeRows, changes: list | None) -> ScopeRows | None:
        """``rows`` after ``changes``, or None when they cannot be followed (too many, a purge)."""
        if changes is None or any(c.op == "node.purge" for c in changes):
            return None
        names = set(key)
        targets = list(dict.fromkeys(c.target for c in changes
                                     if c.op in ("node.put", "node.retract") and c.namespace in names))
        if not targets:
            return rows
        removed: list[int] = []
        added: list[tuple[int, str, bytes]] = []
        for at in range(0, len(targets), 800):
            part = targets[at:at + 800]
            for rid, kind, size, retracted in read(
                    "SELECT n.rid, n.kind, d.sz, n.retracted_at FROM nodes n LEFT JOIN fts_docsize d ON d.id = n.rid "
                    f"WHERE n.id IN ({marks(part)}) AND n.namespace IN ({marks(key)})", (*part, *key)):
                removed.append(rid)
                if retracted is None and size is not None:
                    added.append((rid, kind, size))
        return rows.changed(removed, added)


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


def phrase_hits(read: Read, phrase: str, scope: ScopeRows, table_rows: int,
                table_avgdl: float) -> tuple[np.ndarray, np.ndarray]:
    """(positions in ``scope``, f) of the scope's rows holding ``phrase`` (an FTS5 MATCH operand), in rid order:
    ``f`` read back from the phrase's own ``bm25()``, which weighs it by the whole table's idf and avgdl (the
    rows holding it anywhere: those the statement returns)."""
    rows = read(f"SELECT rowid, -{BM25} FROM fts WHERE fts MATCH ?", (phrase,))
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rid_list, score_list = zip(*rows)
    rids = np.array(rid_list, dtype=np.int64)
    at = np.searchsorted(scope.rids, rids)
    inside = at < scope.rids.size
    inside[inside] = scope.rids[at[inside]] == rids[inside]
    at = at[inside]
    g = np.array(score_list, dtype=np.float64)[inside] / idf(table_rows, len(rows))  # f * (k1 + 1) / (f + k1 *
    # (1 - b + b * D / avgdl))
    norm = K1 * (1 - B + B * scope.lengths[at] / table_avgdl)
    return at, np.round(g * norm / (K1 + 1.0 - g))


def row_tokens(blobs: list[bytes]) -> np.ndarray:
    """Each row's tokens (float64) from its ``fts_docsize`` entry: the five columns' one-byte counts summed at once
    while each holds fewer than 128 tokens, decoded row by row otherwise."""
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    if raw.size == 5 * len(blobs) and not (raw & 0x80).any():
        return raw.reshape(len(blobs), 5).sum(axis=1, dtype=np.int64).astype(np.float64)
    return np.asarray([tokens(b) for b in blobs], dtype=np.float64)


def scoped_search(read: Read, terms: list[str], phrase: Callable[[str], str], scope: Callable[[tuple], ScopeRows],
                  kinds: list[str] | None, ids: Sequence[str] | None, limit: int,
                  common: float | None) -> list[tuple[str, float]]:
    """BM25 of the rows of a scope (``scope(totals)``: given the text index's (rows, tokens), the rows searched and
    counted, e.g. some namespaces'; of ``kinds``, among ``ids``) matching any of ``terms`` (each one FTS5 phrase,
    ``phrase(term)`` its MATCH operand; in query order), with the scope's statistics; the terms held by more than
    ``common`` of its rows are dropped (``text.informative``), as ``text_search`` drops them on the whole table (a
    term held by at most that share of its rows anywhere is not counted in them)."""
    table_rows, table_tokens = table_totals(read)
    scope = scope((table_rows, table_tokens))
    rows = int(scope.rids.size)
    if not rows:
        return []
    table_avgdl = table_tokens / table_rows
    kept = terms
    if len(terms) >= 2 and rows >= 1000:  # else every term ranks (``text.informative``)
        counts = {}
        for term in terms:  # a term held by at most ``common`` of the rows anywhere is kept: no need to count it
            counts[term] = read("SELECT count(*) FROM fts WHERE fts MATCH ?", (phrase(term),))[0][0]
            if counts[term] > (COMMON_SHARE if common is None else common) * rows:
                found = np.array([r[0] for r in read("SELECT rowid FROM fts WHERE fts MATCH ?", (phrase(term),))],
                                 dtype=np.int64)
                counts[term] = int(np.isin(found, scope.rids, assume_unique=True).sum())
        kept = informative(terms, counts, rows, common)
    hits = {t: phrase_hits(read, phrase(t), scope, table_rows, table_avgdl) for t in kept}
    score = np.zeros(rows, dtype=np.float64)
    matched = np.zeros(rows, dtype=bool)
    avgdl = scope.total / rows
    for term in kept:  # FTS5 sums the phrases in query order: so does this, for the same floats
        at, f = hits[term]
        if at.size:
            weight = idf(rows, int(at.size))
            score[at] += weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * scope.lengths[at] / avgdl)))
            matched[at] = True
    wanted = scope.kind_mask(kinds)
    if wanted is not None:
        matched &= wanted
    places = np.flatnonzero(matched)
    if ids is not None:  # few ids (a caller's candidates): their rows
        chosen = [r[0] for chunk in range(0, len(ids), 900) for r in read(
            f"SELECT rid FROM nodes WHERE id IN ({marks(ids[chunk:chunk + 900])})", ids[chunk:chunk + 900])]
        places = places[np.isin(scope.rids[places], np.asarray(chosen, dtype=np.int64))]
    order = places[np.lexsort((scope.rids[places], -score[places]))][: int(limit)]
    top = scope.rids[order].tolist()
    names: dict[int, str] = {}
    for chunk in range(0, len(top), 900):
        part = top[chunk:chunk + 900]
        names.update(read(f"SELECT rid, id FROM nodes WHERE rid IN ({marks(part)})", part))
    return [(names[rid], float(score[i])) for rid, i in zip(top, order.tolist())]
