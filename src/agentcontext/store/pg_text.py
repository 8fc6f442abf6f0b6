"""Text search in PostgreSQL, ranked by BM25 as SQLite's FTS5 ``bm25()`` ranks it.

The text index is the ``tsv`` column (key A, title B, summary and tags C, content D; ``migrations/postgres.py``). A
query's words become lexemes (``to_tsvector('english', word)``: stemmed, stopwords dropped); the GIN index finds
the rows holding any of them, and each is scored

    sum over the query's lexemes of  idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with FTS5's constants (k1 = 1.2, b = 0.75), ``tf`` the lexeme's positions in the row weighted 4:3:2:1 (key, title,
summary and tags, content: the column weights SQLite's bm25() is given), ``dl`` the row's number of lexemes, and
``idf = ln((N - n + 0.5) / (n + 0.5))`` (at least 1e-6, as in FTS5). ``N`` and ``avgdl`` are measured on the table
(on a sample of it when it is large, then remembered for ``STATS_SECONDS``); ``n`` is counted for rare lexemes and
taken from the planner's statistics for common ones (counting those would cost more than the search); on a large
table a query's lexemes and their counts are remembered for ``STATS_SECONDS`` too, so the next search with the same
words (a memory query asks two to four) costs one round trip. When many rows match, ``ts_rank`` weighted by idf
(cheap, in C) keeps the best 4 x limit (at least ``PREFILTER``) of them and BM25 orders those (each lexeme's
``tf`` read by ``ts_rank_cd``, in C).
On a large table the rows are found through the rarest lexemes only, as many as hold at most ``MATCH_ROWS`` rows
together (``rarest``; always the rarest one): the more common lexemes still score the rows found, but a row holding
only those is not found; and when even the rarest holds more, only the first ``MATCH_ROWS`` rows found are ranked,
those also holding another of the query's lexemes first (such a lexeme's idf is low, and its rows differ in score
only by its count and their length). At 1,000,000
memories a query's words can hold 40,000 rows, each read and ranked (100-400 ms), and such a row's score rarely
reaches the best hits; on a small table (``SMALL``) and for ``ids`` nothing is capped.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

SMALL = 5000  # at most this many rows: N, avgdl and every lexeme's count are measured exactly, every query
SAMPLE_ROWS = 2000  # a larger table's avgdl comes from a sample of about this many rows (at 1,000,000 memories
# eight seeds gave 28.53-28.84 against 28.47-28.81 with 5,000 rows: under 1%)
SAMPLE_SEED = 1  # the sample's blocks (TABLESAMPLE ... REPEATABLE): the same for every process
STATS_SECONDS = 30.0
ALONE_SECONDS = 1.0  # whether a large namespace lies alone in the table (``ALONE``), remembered this long: the
# searches of one query ask it once, and a namespace made since changes the statistics a second later at most
LEXEME_CACHE = 512  # a large table's lexeme lookups remembered (per store, for STATS_SECONDS)
PREFILTER = 200  # ts_rank keeps the best max(4 x limit, PREFILTER) of the rows found for BM25 to order
MATCH_ROWS = 2000  # on a large table, the rows holding more common lexemes than this (together) are not searched
PENDING_KB = 256  # the text index's pending list (GIN's new entries, read whole by every search of it) at most
# this many kB: 32 pages, where the default 4 MB held ~450 pages that each text statement read (1.3-2 ms each, three
# to five a query, at 200,000 and 1,000,000 memories; migration 12, docs/POSTGRES_SCALE.md)
K1, B = 1.2, 0.75
WEIGHTS = "{0.25, 0.5, 0.75, 1.0}"  # ts_rank's D, C, B, A weights (content, summary and tags, title, key): 1:2:3:4
CD_WEIGHTS = "{0.125, 0.25, 0.375, 0.5}"  # ts_rank_cd's D, C, B, A weights: a lexeme's positions, 1:2:3:4, in eighths
Read = Callable[[str, Sequence[Any]], list[tuple]]

# the planner's statistics are read (and their text array cast) once per statement, not once per lexeme
LEXEMES = """
WITH s AS MATERIALIZED (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
         FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'nodes' AND attname = 'tsv')
SELECT w.term, x.lex, x.share, CASE WHEN %s OR x.share IS NULL THEN (
         SELECT count(*) FROM nodes WHERE retracted_at IS NULL AND tsv @@ quote_literal(x.lex)::tsquery{scope}) END
FROM unnest(%s::text[]) WITH ORDINALITY w(term, i)
CROSS JOIN LATERAL (SELECT lex, (SELECT s.freqs[array_position(s.elems, lex)] FROM s) AS share
     FROM unnest(tsvector_to_array(to_tsvector('english', w.term))) lex) x
ORDER BY w.i
"""
SCOPE = " AND namespace = ANY(%s)"
ID_SCOPE = " AND id = ANY(%s)"

# Whether no node lies outside the namespaces: one seek on a namespace index for each gap around them (the least
# namespace, the greatest, the next one after each), in the server's collation (the namespaces sorted there too).
# Written as min / max, which the planner always answers from the index's first entry; the same test as EXISTS
# (a node below the least, above the greatest, between two), whose estimate a statistics run on a table of one
# namespace turned into two sequential scans (200,000 memories: 940 ms a query, where the seeks take 0.2 ms).
ALONE = """
WITH s AS (SELECT DISTINCT unnest(%s::text[]) AS ns), p AS (SELECT ns, lead(ns) OVER (ORDER BY ns) AS nxt FROM s)
SELECT NOT (coalesce((SELECT min(namespace) FROM nodes) < (SELECT min(ns) FROM s), false)
         OR coalesce((SELECT max(namespace) FROM nodes) > (SELECT max(ns) FROM s), false)
         OR EXISTS (SELECT 1 FROM p WHERE p.nxt IS NOT NULL
                    AND (SELECT min(namespace) FROM nodes WHERE namespace > p.ns) < p.nxt))
"""


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand: quoted, taken as already normalised."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


STATS = ("WITH e AS (SELECT reltuples::bigint AS n FROM pg_class WHERE oid = 'nodes'::regclass) "
         f"SELECT e.n, CASE WHEN e.n > {10 * SMALL} THEN (SELECT avg(length(tsv)) FROM nodes TABLESAMPLE SYSTEM ("
         f"(SELECT least(100.0, {SAMPLE_ROWS} * 100.0 / greatest(n, 1)) FROM e)) REPEATABLE ({SAMPLE_SEED}) "
         "WHERE retracted_at IS NULL) END FROM e")


def scope_key(namespaces: Sequence[str] | None) -> tuple[str, ...] | None:
    """The namespaces whose statistics rank a search (None: the whole table), as a cache key."""
    return None if namespaces is None else tuple(sorted(set(namespaces)))


class TextStats:
    """N and avgdl of one store's text index, or of the rows of some namespaces (``scope``): measured while they are
    few, then estimated and remembered. A large table's estimate is one statement (the planner's row count and a
    sample's average length); the sample is the same blocks for every process (``REPEATABLE``), so processes agree
    on avgdl and a new one mostly finds those blocks in the server's buffers (a fresh sample each time read about
    1,000 uncached blocks at 1,000,000 memories: 50-130 ms). Many rows of some namespaces: counted (the namespace
    index), their avgdl from a sample of their own rows."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, ...] | None, tuple[float, tuple[int, float]]] = {}

    def get(self, read: Read, scope: tuple[str, ...] | None = None) -> tuple[int, float, bool]:
        """(rows, average lexemes per row, whether they are few: counted exactly)."""
        at, value = self._kept.get(scope, (-math.inf, (0, 0.0)))
        if time.monotonic() - at <= STATS_SECONDS:
            return value[0], value[1], False
        rows, avg, few = self._table(read) if scope is None else self._scope(read, list(scope))
        if few:  # counted every time, never remembered
            return rows, avg, True
        if len(self._kept) >= LEXEME_CACHE:
            self._kept.clear()
        self._kept[scope] = (time.monotonic(), (rows, avg))
        return rows, avg, False

    def _table(self, read: Read) -> tuple[int, float, bool]:
        estimate, sampled = read(STATS, ())[0]
        avg = 0.0
        if estimate <= 10 * SMALL:  # maybe small (or never analysed): count up to SMALL + 1 rows
            rows, avg = read("SELECT count(*), coalesce(avg(length(tsv)), 0) FROM (SELECT tsv FROM nodes "
                             f"WHERE retracted_at IS NULL LIMIT {SMALL + 1}) f", ())[0]
            if rows <= SMALL:
                return int(rows), float(avg), True
            if estimate <= SMALL:  # never analysed: count once
                estimate = read("SELECT count(*) FROM nodes WHERE retracted_at IS NULL", ())[0][0]
            share = min(100.0, 100.0 * SAMPLE_ROWS / max(estimate, 1))
            sampled = read(f"SELECT avg(length(tsv)) FROM nodes TABLESAMPLE SYSTEM ({share:.4f}) REPEATABLE "
                           f"({SAMPLE_SEED}) WHERE retracted_at IS NULL", ())[0][0]
        return int(estimate), float(sampled if sampled is not None else avg), False

    def _scope(self, read: Read, names: list[str]) -> tuple[int, float, bool]:
        rows, avg = read("SELECT count(*), coalesce(avg(length(tsv)), 0) FROM (SELECT tsv FROM nodes WHERE "
                         f"retracted_at IS NULL{SCOPE} LIMIT {SMALL + 1}) f", [names])[0]
        if rows <= SMALL:
            return int(rows), float(avg), True
        rows = read(f"SELECT count(*) FROM nodes WHERE retracted_at IS NULL{SCOPE}", [names])[0][0]
        share = min(100.0, 100.0 * SAMPLE_ROWS / max(rows, 1))  # of the blocks: about SAMPLE_ROWS of their rows
        sampled = read(f"SELECT avg(length(tsv)) FROM nodes TABLESAMPLE SYSTEM ({share:.4f}) REPEATABLE "
                       f"({SAMPLE_SEED}) WHERE retracted_at IS NULL{SCOPE}", [names])[0][0]
        if sampled is None:  # the sample missed their blocks: measure them all
            sampled = read(f"SELECT avg(length(tsv)) FROM nodes WHERE retracted_at IS NULL{SCOPE}", [names])[0][0]
        return int(rows), float(sampled or 0.0), False


def rows_of_ids(read: Read, ids: Sequence[str]) -> tuple[int, float]:
    """(rows, average lexemes per row) of the live rows with these ids: counted exactly (a principal's readable
    docs of a pack)."""
    rows, avg = read(f"SELECT count(*), coalesce(avg(length(tsv)), 0) FROM nodes WHERE retracted_at IS NULL"
                     f"{ID_SCOPE}", [list(ids)])[0]
    return int(rows), float(avg)


Lexemes = list[tuple[str, str, int | None, float | None]]


def lexemes(read: Read, terms: list[str], count_all: bool, scope: tuple[str, ...] | None = None,
            ids: Sequence[str] | None = None) -> Lexemes:
    """(term, lexeme, rows holding it, share of rows holding it by the planner's statistics) per term with a
    lexeme; the rows (of the namespaces ``scope``, or with these ``ids``; None: every row) are counted for every
    lexeme (``count_all``) or only for those the statistics do not track (rare ones: a cheap count through the GIN
    index)."""
    if ids is not None:
        found = read(LEXEMES.format(scope=ID_SCOPE), [count_all, list(ids), terms])
    elif scope is None:
        found = read(LEXEMES.format(scope=""), [count_all, terms])
    else:
        found = read(LEXEMES.format(scope=SCOPE), [count_all, list(scope), terms])
    return [(t, lex, None if n is None else int(n), None if f is None else float(f)) for t, lex, f, n in found]


class LexemeCache:
    """A large table's lexeme lookups (``lexemes`` with ``count_all`` false, or counted in some namespaces), kept
    for ``STATS_SECONDS`` like ``TextStats``: BM25's counts there are estimates already. A small table's are never
    kept (counted exactly)."""

    def __init__(self) -> None:
        self._found: dict[tuple, tuple[float, Lexemes]] = {}

    def get(self, read: Read, terms: list[str], small: bool, scope: tuple[str, ...] | None = None) -> Lexemes:
        """The lexemes of ``terms``; the rows holding each counted in the namespaces ``scope`` (never taken from
        the planner's statistics, which count every namespace), or in the whole table (None)."""
        if small:
            return lexemes(read, terms, True, scope)
        if scope is not None:  # counted in the namespaces: remembered word by word (queries share words)
            return self._by_term(read, terms, scope)
        key, now = tuple(terms), time.monotonic()  # the whole table's: the planner's shares for common lexemes
        kept = self._found.get(key)
        if kept is not None and now - kept[0] <= STATS_SECONDS:
            return kept[1]
        found = lexemes(read, terms, False)
        if len(self._found) >= LEXEME_CACHE:
            self._found = {k: v for k, v in self._found.items() if now - v[0] <= STATS_SECONDS}
            if len(self._found) >= LEXEME_CACHE:
                self._found.clear()
        self._found[key] = (now, found)
        return found

    def _by_term(self, read: Read, terms: list[str], scope: tuple[str, ...]) -> Lexemes:
        now = time.monotonic()
        fresh = {t: v[1] for t in terms if (v := self._found.get((scope, t))) is not None
                 and now - v[0] <= STATS_SECONDS}
        missing = [t for t in terms if t not in fresh]
        if missing:
            counted: dict[str, Lexemes] = {t: [] for t in missing}  # a stopword has no lexeme: remembered too
            for row in lexemes(read, missing, True, scope):
                counted[row[0]].append(row)
            if len(self._found) + len(counted) > LEXEME_CACHE:
                self._found = {k: v for k, v in self._found.items() if now - v[0] <= STATS_SECONDS}
                if len(self._found) + len(counted) > LEXEME_CACHE:
                    self._found.clear()
            for term, rows in counted.items():
                self._found[(scope, term)] = (now, rows)
            fresh.update(counted)
        return [row for t in terms for row in fresh[t]]


def rarest(lexes: list[str], held: dict[str, int], cap: int) -> list[str]:
    """The rarest of ``lexes`` (by ``held``, rows holding each) whose rows add up to at most ``cap``; at least one,
    in the order given."""
    chosen, total = set(), 0
    for lex in sorted(lexes, key=lambda x: (held[x], x)):
        if chosen and total + held[lex] > cap:
            break
        chosen.add(lex)
        total += held[lex]
    return [x for x in lexes if x in chosen]


def idf(rows: int, holding: int) -> float:
    """FTS5's idf; at least 1e-6, also when writers made ``holding`` (counted later) exceed ``rows``."""
    spare = rows - holding + 0.5
    return max(math.log(spare / (holding + 0.5)), 1e-6) if spare > 0 else 1e-6


def lexeme_order(lexes: list[str]) -> list[str]:
    """``lexes`` in a tsvector's order (by their bytes, a shorter prefix first): the order the ranking sums the terms
    in, so a row's score is the same float whichever statement computes it."""
    return sorted(lexes, key=lambda x: x.encode())


def bm25_sql(lexes: list[str], where: str, prefilter: int, limit: int, scan: int | None = None,
             first: bool = False) -> str:
    """(id, score, rid) of the best ``limit`` rows; parameters: the query finding the rows, ``where``'s (conditions
    on ``n``, starting with `` AND ``), (idf, lexeme as a tsquery) per lexeme of ``lexes`` (the query's order),
    avgdl, the idfs (float8[]) and the lexemes as tsqueries (tsquery[]) in ``lexeme_order``. ``scan``: rank at most
    this many of the matching rows (None: every one); ``first`` (with ``scan``): two queries (each followed by
    ``where``'s parameters), the rows the first finds taken before those the second finds (the rows holding a rare
    lexeme and another of the query's, then the rest of the rare lexeme's: they score higher than the rows holding
    the rare lexeme alone, mostly), else the first rows the one query finds.

    When many rows match, ``ts_rank`` weighted by idf keeps the best ``prefilter`` of them (in C) and BM25 orders
    those. A lexeme's ``tf`` in a row is read by ``ts_rank_cd`` with the weights 1/8, 2/8, 3/8, 4/8 (D, C, B, A)
    and a one-lexeme query: each of its positions is a cover of one word, whose weight the rank adds up, so eight
    times the rank is the weighted count of its positions, exactly (eighths are exact floats), in C. The terms are
    added in the tsvector's lexeme order, as the sum over the row's own lexemes added them before, so the scores
    are the same floats. Before, each prefiltered row's query lexemes were unnested (``ts_delete`` twice and a
    subquery per lexeme): ~13 ms of CPU for 600 rows at 1,000,000 memories (issue 23 s3). The prefiltered rows are
    materialized once (their tsvectors detoasted once, not at each use), and each count read once: the subquery of
    the counts is kept apart (``OFFSET 0``), where the planner folded it into the score, which names each count three
    times (~7 ms of CPU for 600 rows at 200,000 memories, issue 23 s3)."""
    cheap = " + ".join(f"%s * ts_rank('{WEIGHTS}', n.tsv, %s::tsquery, 0)" for _ in lexes)
    found = f"SELECT n.rid, n.id, n.tsv FROM nodes n WHERE n.tsv @@ %s::tsquery{where}"
    if first and scan is not None:
        found = f"({found}) UNION ALL ({found})"
    page = "" if scan is None else f" LIMIT {int(scan)}"
    tfs = ", ".join(f"(8 * ts_rank_cd('{CD_WEIGHTS}', pre.tsv, q.lexes[{i}], 0))::int AS tf{i}"
                    for i in range(1, len(lexes) + 1))
    terms = " + ".join(f"CASE WHEN f.tf{i} > 0 THEN f.idfs[{i}] * f.tf{i} * {K1 + 1} / (f.tf{i} + {K1} * ({1 - B} + "
                       f"{B} * f.dl / f.avgdl)) ELSE 0 END" for i in range(1, len(lexes) + 1))
    return (f"WITH pre AS MATERIALIZED (SELECT n.rid, n.id, n.tsv FROM ({found}{page}) n "
            f"ORDER BY {cheap} DESC, n.rid LIMIT {int(prefilter)}), "
            "q AS (SELECT %s::float8 AS avgdl, %s::float8[] AS idfs, %s::tsquery[] AS lexes) "
            f"SELECT f.id, {terms} AS score, f.rid FROM (SELECT pre.id, pre.rid, length(pre.tsv) AS dl, q.avgdl, "
            f"q.idfs, {tfs} FROM pre CROSS JOIN q OFFSET 0) f ORDER BY score DESC, f.rid LIMIT {int(limit)}")
