"""A prototype of the text stage's lever left after session 18 (issue 23 s3), measured without a migration: for each
word past the cap (``pg_text.MATCH_ROWS`` rows), its best ``--keep`` rows by BM25's term (the row's weighted count
and length at the current ``avgdl``) in a table of their own, indexed by (word, term), read for a one-word search
instead of the word's rows in ``nodes``. The top ``limit`` read there is BM25's exact best of every row holding the
word when the ``limit``-th score is above the ``keep``-th term (a row outside the list scores at most that); it is
compared with the exact ranking of every matching row (``MATCH_ROWS`` and ``PREFILTER`` unbounded) and timed against
the search as it is (the capped statement); searches of several words too (``several_words``: the rows holding a
word within the cap or two listed words read from the heap, the rest bounded by the lists). Everything is built
in temporary tables of one session (nothing written to the store; never run it on the shared cluster). Prints: the
lists' rows and bytes a memory, per search the statement ms as it is / through the list / the exact ranking's,
whether the list's top equals the exact top.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_text_top.py --data <your own copy> [--keep 2000]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

WORDS = ["research", "creative", "camp", "mentor", "current", "ago", "potteri", "adopt", "recent", "read", "kid",
         "activ", "picnic", "confer", "identity", "passion"]
NS, KIND, LIMIT = "memory:scale", "memory", 150


SEVERAL = ["creative passion", "kid read", "recent camp kid", "pursue career options", "camp mentor", "passion read",
           "potteri workshop", "adopt kid", "pride parade summer", "participate children"]


def several_words(read, captured, query: str, avgdl: float, keep: int, ms) -> dict:
    """A search of several words, exact by the lists: the rows holding an unlisted word (one within the cap) or two
    listed words or more read whole (the text index finds them: an intersection, much rarer than the words); a row
    holding one listed word alone scores its list's term (no heap), or, outside the list, at most the word's
    ``keep``-th term: the search is exact when the ``limit``-th score is above the largest of those."""
    from itertools import combinations

    from agentcontext.store import pg_text

    k1, b = pg_text.K1, pg_text.B
    (now, [(now_sql, now_params)]), (exact, [(exact_sql, exact_params)]) = captured(query), captured(query, True)
    avg, idfs, lexes = exact_params[-3], exact_params[-2], [x.strip("'") for x in exact_params[-1]]
    idf = dict(zip(lexes, idfs))
    listed = {r[0]: float(r[1]) for r in read("SELECT lexeme, min(term) FROM text_top WHERE lexeme = ANY(%s) "
                                              "GROUP BY lexeme HAVING count(*) >= %s", [lexes, keep])}
    rest = [x for x in lexes if x not in listed]
    tfs = ", ".join(f"(8 * ts_rank_cd('{pg_text.CD_WEIGHTS}', n.tsv, %s::tsquery, 0))::int" for _ in lexes)
    quoted = [pg_text.quote_lexeme(x) for x in lexes]
    whole = (f"SELECT n.rid, n.id, length(n.tsv), ARRAY[{tfs}] FROM nodes n WHERE n.tsv @@ %s::tsquery AND "
             "n.namespace = %s AND n.kind = %s AND n.retracted_at IS NULL")

    def score(dl: int, counts: list[int]) -> float:
        out = 0.0
        for f, t in zip(idfs, counts):
            if t > 0:
                out += f * t * (k1 + 1) / (t + k1 * ((1 - b) + b * dl / avg))
        return out

    finding = [pg_text.quote_lexeme(x) for x in rest]
    finding += [f"({pg_text.quote_lexeme(x)} & {pg_text.quote_lexeme(y)})" for x, y in combinations(sorted(listed), 2)]
    statements, scored = [], {}
    if finding:
        params = [*quoted, " | ".join(finding), NS, KIND]
        statements.append((whole, params))
        scored = {rid: (i, score(dl, c)) for rid, i, dl, c in read(whole, params)}
    lists = ("SELECT t.lexeme, t.rid, t.term, n.id FROM text_top t JOIN nodes n ON n.rid = t.rid "
             "WHERE t.lexeme = ANY(%s)")
    alone = 0
    for lex, rid, term, i in read(lists, [list(listed)]) if listed else []:
        if rid not in scored:  # it holds this listed word alone: its score is the word's term
            scored[rid], alone = (i, idf[lex] * term), alone + 1
    mine = [scored[r] for r in sorted(scored, key=lambda r: (-scored[r][1], r))[:LIMIT]]  # ties by rid, as SQL
    outside = max((idf[x] * listed[x] for x in listed), default=0.0)
    return {"query": query, "listed words": sorted(listed), "other words": rest,
            "rows read from the heap": len(scored) - alone, "rows scored from the lists alone": alone,
            "ms as it is": round(ms(now_sql, now_params), 2),
            "ms through the lists (the lists + the heap's rows)": round(
                (ms(lists, [list(listed)]) if listed else 0.0) + sum(ms(q, p) for q, p in statements), 2),
            "ms every row ranked (exact)": round(ms(exact_sql, exact_params), 1),
            "exact by the bound": len(mine) == LIMIT and mine[-1][1] > outside,
            "the same ids as the exact ranking": [i for i, _ in mine] == [i for i, _ in exact],
            "largest score difference": max((abs(a[1] - e[1]) for a, e in zip(mine, exact)), default=0.0),
            "as it is holds of the exact top 10": len({i for i, _ in exact[:10]} & {i for i, _ in now[:10]}) / 10}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="your own copy of a postgres_scale.py cluster")
    parser.add_argument("--keep", type=int, default=2000)
    args = parser.parse_args()
    if "pgdata-lead" in str(args.data):
        raise SystemExit("a copy of your own, not the shared cluster")
    from agentcontext.store import open_store, pg_text

    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        store = open_store(server.url("scale"))
        read, k1, b = store._read, pg_text.K1, pg_text.B
        rows, lengths = read("SELECT rows, lengths FROM text_totals WHERE namespace = %s", [NS])[0]
        avgdl, memories = float(lengths) / rows, int(rows)
        store._exec("SET work_mem = '512MB'", [])
        tf = "(SELECT sum(CASE w WHEN 'A' THEN 4 WHEN 'B' THEN 3 WHEN 'C' THEN 2 ELSE 1 END) FROM unnest(u.weights) w)"
        store._exec(
            "CREATE TEMP TABLE text_top AS SELECT lexeme, term, rid, tf, dl FROM (SELECT lexeme, rid, tf, dl, "
            f"tf * {k1 + 1} / (tf + {k1} * ({1 - b} + {b} * dl / %s::float8)) AS term, row_number() OVER (PARTITION BY "
            f"lexeme ORDER BY tf * {k1 + 1} / (tf + {k1} * ({1 - b} + {b} * dl / %s::float8)) DESC, rid) AS i "
            f"FROM (SELECT u.lexeme, n.rid, {tf}::int AS tf, length(n.tsv) AS dl FROM nodes n, unnest(n.tsv) u "
            "WHERE n.namespace = %s AND n.kind = %s AND n.retracted_at IS NULL AND u.lexeme IN (SELECT lexeme FROM "
            "text_counts WHERE namespace = %s AND rows > %s)) p) t WHERE i <= %s",
            [avgdl, avgdl, NS, KIND, NS, pg_text.MATCH_ROWS, args.keep])
        store._exec("CREATE INDEX ON text_top (lexeme, term DESC, rid)", [])
        store._exec("ANALYZE text_top", [])
        kept = read("SELECT count(*), count(DISTINCT lexeme), pg_total_relation_size('text_top') FROM text_top", [])[0]

        def ms(sql: str, params: list) -> float:
            return min(read("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, params)[0][0][0]["Execution Time"]
                       for _ in range(5))

        top = ("SELECT rid, term FROM text_top WHERE lexeme = %s ORDER BY term DESC, rid LIMIT %s")
        floor = "SELECT min(term) FROM (SELECT term FROM text_top WHERE lexeme = %s ORDER BY term DESC LIMIT %s) t"
        out = []

        def captured(query: str, exact: bool = False) -> tuple[list, list]:
            """(the search's hits, its ranking statements with their parameters); ``exact``: every row ranked."""
            asked: list = []
            seen, saved = store._read, (pg_text.MATCH_ROWS, pg_text.PREFILTER)

            def spy(sql, params=()):
                asked.append((sql, params))
                return seen(sql, params)

            store._read = spy
            if exact:
                pg_text.MATCH_ROWS = pg_text.PREFILTER = 10 ** 9
            try:
                hits = store.text_search(query, namespace=NS, kind=KIND, limit=LIMIT)
            finally:
                store._read, (pg_text.MATCH_ROWS, pg_text.PREFILTER) = seen, saved
            return hits, [(q, p) for q, p in asked if "WITH pre" in q]

        for word in WORDS:
            (lex,) = read("SELECT tsvector_to_array(to_tsvector('english', %s))", [word])[0][0] or [None]
            held = read("SELECT rows FROM text_counts WHERE lexeme = %s AND namespace = %s", [lex, NS])
            if not lex or not held or held[0][0] <= pg_text.MATCH_ROWS:
                continue
            (_, [(now_sql, now_params)]), (exact, [(exact_sql, exact_params)]) = captured(word), captured(word, True)
            idf = pg_text.idf(memories, int(held[0][0]))
            listed = read(top, [lex, LIMIT])
            ids = dict(read("SELECT rid, id FROM nodes WHERE rid = ANY(%s)", [[r for r, _ in listed]]))
            mine = [(ids[r], idf * t) for r, t in listed]
            last = read(floor, [lex, args.keep])[0][0]
            out.append({
                "word": word, "rows holding it": int(held[0][0]),
                "ms as it is (capped)": round(ms(now_sql, now_params), 2),
                "ms through the list": round(ms(top, [lex, LIMIT]), 3),
                "ms every row ranked (exact)": round(ms(exact_sql, exact_params), 1),
                "exact by the bound (limit-th score > keep-th term)": mine[-1][1] > idf * last,
                "the list's top = the exact top (ids)": [i for i, _ in mine] == [i for i, _ in exact],
                "largest score difference": max(abs(a[1] - e[1]) for a, e in zip(mine, exact)),
                "as it is holds of the exact top 10": len({i for i, _ in exact[:10]} & {i for i, _ in
                                                          store.text_search(word, namespace=NS, kind=KIND,
                                                                            limit=LIMIT)[:10]}) / 10})
        several = [several_words(read, captured, query, avgdl, args.keep, ms) for query in SEVERAL]
        figures = {
            "data": str(args.data), "memories": memories, "keep": args.keep, "limit": LIMIT,
            "note": "busy shared 2-core machine; temporary tables, nothing written",
            "lists": {"words": kept[1], "rows": kept[0], "bytes (table + index)": kept[2],
                      "bytes a memory": round(kept[2] / memories, 1)},
            "ms as it is, p50": statistics.median(x["ms as it is (capped)"] for x in out),
            "ms through the list, p50": statistics.median(x["ms through the list"] for x in out),
            "exact by the bound": f"{sum(x['exact by the bound (limit-th score > keep-th term)'] for x in out)} of "
                                  f"{len(out)}",
            "searches": out, "several words (exact by the bound: WAND over the lists)": several}
        assert all(math.isfinite(x["largest score difference"]) for x in out)
        report(f"postgres_text_top_{args.data.name}", figures)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
