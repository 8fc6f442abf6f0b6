"""The text-index part of ``PostgresStore`` (``sql_part.Part``): BM25 over the weighted tsvector with the statistics
of the namespaces searched (``pg_text``), the counts a ranking weighs a query's words by, and phrase search. A
sharded store ranks on each shard with every shard's statistics added up (``_bm25_stats``, ``_ranked``)."""
from __future__ import annotations

from typing import Sequence

from ..text import informative, query_terms
from . import pg_text, pg_text_counts
from .pg_sql import PgWhere
from .rows import as_list
from .sql_part import Part

TextStatsRow = tuple[int, float, bool, list[tuple[str, str, int | None, float | None]]]
SEPARATOR = "\x1f"  # joins a ranking's candidate ids into one parameter (an id holding it: sent as a list)


def ids_in(where: PgWhere, ids: list[str] | None) -> None:
    """``n.id`` among ``ids``: as one text split in the server (a ranking's ~1,000 candidates: dumping them as a list
    of strings cost the client ~2.5 ms a call at 200,000 memories, issue 23 s3), as a list when an id holds the
    separator or there is one."""
    if ids is not None and len(ids) > 1 and not any(SEPARATOR in i for i in ids):
        where.add("n.id = ANY(string_to_array(%s, E'\\x1f'))", SEPARATOR.join(ids))
    else:
        where.eq_any("n.id", ids)


class PgText(Part):
    """Text search in the server, ranked with the exact counts of ``pg_text_counts`` (one statement a search)."""

    @property
    def _kept(self) -> bool:
        """Whether the store's schema keeps the counts (``pg_text_counts.STEP``; a store kept at an older one by its
        class's migrations, as upgrade tests do, counts its rows)."""
        return self.store.MIGRATIONS.latest >= pg_text_counts.STEP

    def _counts(self, terms: list[str], names: list[str] | None) -> tuple[int, float, list[tuple[str, str, int]]]:
        """``pg_text_counts.counts`` in the namespaces ``names`` (None: every one), as read less than
        ``COUNTS_SECONDS`` ago outside a transaction (``pg_text_counts.Recent``)."""
        scope = None if names is None else sorted(set(names))
        return self.store._counts.get(self._read, terms, scope, self._kept, fresh=bool(self.store._depth))

    def _bm25_stats(self, query: str, namespace=None, within: Sequence[str] | None = None) -> TextStatsRow:
        """What ``text_search`` ranks with: (rows, average lexemes per row, whether they are few (``pg_text.SMALL``:
        every match ranked), (term, lexeme, rows holding it, None) per query lexeme), all counted exactly: in the
        namespaces searched (``pg_text_counts``), or among the ``within`` rows; a sharded store adds up those of its
        shards, so each shard ranks with the statistics one server holding every row would use."""
        terms = query_terms(query)
        if within is not None:  # counted exactly, every time
            within = list(dict.fromkeys(within))
            (rows, avgdl), small = pg_text.rows_of_ids(self._read, within), True
            return rows, avgdl, small, pg_text.lexemes_of_ids(self._read, terms, within)
        names = as_list(namespace)
        rows, avgdl, found = self._counts(terms, names)
        return rows, avgdl, rows <= pg_text.SMALL, [(t, x, n, None) for t, x, n in found]

    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None,
                    within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(id, BM25 as FTS5 computes it, over the weighted tsvector) best first, with the statistics of the
        namespaces searched, or of the ``within`` rows alone (searched alone too); see ``pg_text``."""
        return self._ranked(query, namespace, kind, limit, common, ids, within)

    def _ranked(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                ids: Sequence[str] | None = None, within: Sequence[str] | None = None,
                stats: TextStatsRow | None = None) -> list[tuple[str, float]]:
        """``text_search``; ``stats``: the statistics to rank with, given (``_bm25_stats`` of several shards added
        up), else this store's own."""
        terms = query_terms(query)
        if not terms or limit <= 0 or (ids is not None and not ids) or (within is not None and not within):
            return []
        if within is not None:
            within = list(dict.fromkeys(within))
        rows, avgdl, small, found = stats if stats is not None else self._bm25_stats(query, namespace, within)
        if not found:
            return []
        held = {lex: n if n is not None else int((share or 0.0) * rows) for _, lex, n, share in found}
        by_term: dict[str, list[str]] = {}
        for term, lex, _, _ in found:
            by_term.setdefault(term, []).append(lex)
        kept_terms = informative(list(by_term), {t: max(held[x] for x in xs) for t, xs in by_term.items()}, rows,
                                 common)
        lexes = list(dict.fromkeys(x for t in kept_terms for x in by_term[t]))
        idfs = [pg_text.idf(rows, held[x]) for x in lexes]
        ordered = pg_text.lexeme_order(lexes)  # the order BM25 adds a row's terms in
        where = PgWhere()
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        ids_in(where, None if ids is None else list(dict.fromkeys(ids)))
        where.eq_any("n.id", within)
        where.add("n.retracted_at IS NULL")
        conditions = where.sql().replace(" WHERE ", " AND ", 1)
        capped = not small and ids is None  # a large table: found through the rarest lexemes, ranked up to a cap
        match = pg_text.rarest(lexes, held, pg_text.MATCH_ROWS) if capped else lexes
        scan = pg_text.MATCH_ROWS if capped and sum(held[x] for x in match) > pg_text.MATCH_ROWS else None
        others = [x for x in lexes if x not in match] if scan is not None else []
        sql = pg_text.bm25_sql(lexes, conditions, max(4 * int(limit), pg_text.PREFILTER), limit, scan,
                               first=bool(others))
        rare = " | ".join(pg_text.quote_lexeme(x) for x in match)
        finding = [rare, *where.params]
        if others:  # the rows holding a rare lexeme and another of the query's first
            more = " | ".join(pg_text.quote_lexeme(x) for x in others)
            finding = [f"({rare}) & ({more})", *where.params, f"({rare}) & !({more})", *where.params]
        pairs = [v for x, f in zip(lexes, idfs) for v in (f, pg_text.quote_lexeme(x))]
        params = [*finding, *pairs, avgdl or 1.0, [idfs[lexes.index(x)] for x in ordered],
                  [pg_text.quote_lexeme(x) for x in ordered]]
        return [(r[0], float(r[1])) for r in self._read(sql, params)]

    def term_counts(self, query: str, namespace=None) -> tuple[int, dict[str, int]]:
        """(live rows in ``namespace``, rows holding each query word's lexemes): the counts ``text_search`` ranks
        with, exact (``pg_text_counts``), for weighting a query's words by their idf (issue 11 s5 (b),
        memory/server_search.py). A word with no lexeme (a stopword) is left out."""
        terms = query_terms(query)
        if not terms:
            return 0, {}
        names = as_list(namespace)
        rows, _, found = self._counts(terms, names)
        counts: dict[str, int] = {}
        for term, _, n in found:
            counts[term] = max(counts.get(term, 0), n)
        return rows, counts

    def phrase_search(self, phrase: str, namespace=None, kind=None, limit: int | None = None) -> list[str]:
        if not query_terms(phrase):
            return []
        where = PgWhere()
        where.add("n.tsv @@ phraseto_tsquery('english', translate(%s, '._/:@-', '      '))", phrase)
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        where.add("n.retracted_at IS NULL")
        page = f" LIMIT {int(limit)}" if limit is not None else ""
        return [r[0] for r in self._read(f"SELECT n.id FROM nodes n{where.sql()} ORDER BY n.rid{page}", where.params)]
