"""Text search in PostgreSQL, ranked by BM25 as SQLite's FTS5 ``bm25()`` ranks it.

The text index is the ``tsv`` column (key A, title B, summary and tags C, content D; ``migrations/postgres.py``). A
query's words become lexemes (``to_tsvector('english', word)``: stemmed, stopwords dropped); the GIN index finds
the rows holding any of them, and each is scored

    sum over the query's lexemes of  idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with FTS5's constants (k1 = 1.2, b = 0.75), ``tf`` the lexeme's positions in the row weighted 4:3:2:1 (key, title,
summary and tags, content: the column weights SQLite's bm25() is given), ``dl`` the row's number of lexemes, and
``idf = ln((N - n + 0.5) / (n + 0.5))`` (at least 1e-6, as in FTS5). ``N``, ``avgdl`` and ``n`` are exact, in the
namespaces searched: kept by the writes themselves (``pg_text_counts``, migration 14) and read in one statement
(before, a large table's came from a sample and the planner's statistics, and two stores of the same memories ranked
differently). When many rows match, ``ts_rank`` weighted by idf
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
from typing import Any, Callable, Sequence

SMALL = 5000  # at most this many rows: every row a query's lexemes find is ranked (no cap)
PREFILTER = 200  # ts_rank keeps the best max(4 x limit, PREFILTER) of the rows found for BM25 to order
MATCH_ROWS = 2000  # on a large table, the rows holding more common lexemes than this (together) are not searched
PENDING_KB = 256  # the text index's pending list (GIN's new entries, read whole by every search of it) at most
# this many kB: 32 pages, where the default 4 MB held ~450 pages that each text statement read (1.3-2 ms each, three
# to five a query, at 200,000 and 1,000,000 memories; migration 12, docs/POSTGRES_SCALE.md)
K1, B = 1.2, 0.75
WEIGHTS = "{0.25, 0.5, 0.75, 1.0}"  # ts_rank's D, C, B, A weights (content, summary and tags, title, key): 1:2:3:4
CD_WEIGHTS = "{0.125, 0.25, 0.375, 0.5}"  # ts_rank_cd's D, C, B, A weights: a lexeme's positions, 1:2:3:4, in eighths
Read = Callable[[str, Sequence[Any]], list[tuple]]

# (term, lexeme, live rows with these ids holding it) per query term's lexeme, in the terms' order
LEXEMES = """
SELECT w.term, lex, (SELECT count(*) FROM nodes WHERE retracted_at IS NULL AND tsv @@ quote_literal(lex)::tsquery
                     AND id = ANY(%s))
FROM unnest(%s::text[]) WITH ORDINALITY w(term, i), unnest(tsvector_to_array(to_tsvector('english', w.term))) lex
ORDER BY w.i
"""
ID_SCOPE = " AND id = ANY(%s)"


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand: quoted, taken as already normalised."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def rows_of_ids(read: Read, ids: Sequence[str]) -> tuple[int, float]:
    """(rows, average lexemes per row) of the live rows with these ids: counted exactly (a principal's readable
    docs of a pack)."""
    rows, avg = read(f"SELECT count(*), coalesce(avg(length(tsv)), 0) FROM nodes WHERE retracted_at IS NULL"
                     f"{ID_SCOPE}", [list(ids)])[0]
    return int(rows), float(avg)


def lexemes_of_ids(read: Read, terms: list[str], ids: Sequence[str]) -> list[tuple[str, str, int, None]]:
    """(term, lexeme, live rows with these ``ids`` holding it, None) per term's lexeme, counted exactly."""
    return [(t, lex, int(n), None) for t, lex, n in read(LEXEMES, [list(ids), terms])]


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
