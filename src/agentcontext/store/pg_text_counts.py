"""BM25's counts in PostgreSQL, exact at the cost of a lookup (issue 23 s3, migration 14).

``text_counts`` holds, per lexeme and namespace, the live rows of ``nodes`` whose ``tsv`` holds it; ``text_totals``
per namespace its live rows and their lexemes added up (``N`` and ``avgdl``). Three statement-level triggers on
``nodes`` (insert, update, delete; each reads its transition tables: set-based, one statement a write statement)
keep them in the write's own transaction, whatever path writes: the row path, a bulk load's upserts, a retraction,
an erasure's delete, a reindex, an import. A write adds each lexeme's change once (``ON CONFLICT DO UPDATE``) and
deletes the rows it brought to 0: a lexeme no live row holds any more leaves the table (an erased memory's own
words: its dead row versions go with the strict erasure's VACUUM FULL, ``scrub.CONTENT_TABLES``).

Writers of one store already hold its writer lock for the whole transaction (``postgres.py``: an advisory lock per
schema), so the counts' row locks never make one writer wait for another that the lock would not.

Before, ``N`` and ``avgdl`` came from a sample and a common lexeme's count from the planner's statistics (an ANALYZE
sample): two stores of the same memories ranked differently (their top 10s agreed on 0.725 of the questions at
1,000,000 memories). Now one statement reads every count a search ranks with (``COUNTS``).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

Read = Callable[[str, Sequence[Any]], list[tuple]]

TABLES = (
    'CREATE TABLE IF NOT EXISTS text_counts (lexeme TEXT COLLATE "C" NOT NULL, namespace TEXT COLLATE "C" NOT NULL, '
    "rows BIGINT NOT NULL, PRIMARY KEY (lexeme, namespace))",
    'CREATE TABLE IF NOT EXISTS text_totals (namespace TEXT COLLATE "C" PRIMARY KEY, rows BIGINT NOT NULL, '
    "lengths BIGINT NOT NULL)",
)

# the changed rows of one write statement as (namespace, tsv, +1 or -1), by event (its transition tables)
_CHANGED = {
    "INSERT": "SELECT namespace, tsv, 1 AS sign FROM new_rows WHERE retracted_at IS NULL",
    "DELETE": "SELECT namespace, tsv, -1 AS sign FROM old_rows WHERE retracted_at IS NULL",
    "UPDATE": ("SELECT o.namespace, o.tsv, -1 AS sign FROM old_rows o JOIN new_rows n ON n.rid = o.rid "
               "WHERE o.retracted_at IS NULL AND (n.retracted_at IS NOT NULL OR n.namespace <> o.namespace "
               "OR n.tsv <> o.tsv) "
               "UNION ALL SELECT n.namespace, n.tsv, 1 FROM old_rows o JOIN new_rows n ON n.rid = o.rid "
               "WHERE n.retracted_at IS NULL AND (o.retracted_at IS NOT NULL OR n.namespace <> o.namespace "
               "OR n.tsv <> o.tsv)"),
}


def _function(event: str) -> str:
    changed = _CHANGED[event]
    return f"""CREATE OR REPLACE FUNCTION actx_text_counts_{event.lower()}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO text_totals AS t (namespace, rows, lengths)
    SELECT namespace, sum(sign), sum(sign * length(tsv)) FROM ({changed}) d GROUP BY namespace
    ON CONFLICT (namespace) DO UPDATE SET rows = t.rows + excluded.rows, lengths = t.lengths + excluded.lengths;
  INSERT INTO text_counts AS c (lexeme, namespace, rows)
    SELECT lex, namespace, sum(sign) FROM ({changed}) d, unnest(tsvector_to_array(d.tsv)) lex
    GROUP BY lex, namespace HAVING sum(sign) <> 0 ORDER BY lex, namespace
    ON CONFLICT (lexeme, namespace) DO UPDATE SET rows = c.rows + excluded.rows;
  DELETE FROM text_counts c WHERE c.rows <= 0 AND (c.lexeme, c.namespace) IN (
    SELECT lex, namespace FROM ({changed}) d, unnest(tsvector_to_array(d.tsv)) lex WHERE sign < 0);
  DELETE FROM text_totals t WHERE t.rows <= 0 AND t.namespace IN (
    SELECT namespace FROM ({changed}) d WHERE sign < 0);
  RETURN NULL;
END $f$"""


EVENTS = ("INSERT", "UPDATE", "DELETE")
TRIGGERS = tuple(
    f"CREATE OR REPLACE TRIGGER actx_text_counts_{e.lower()} AFTER {e} ON nodes REFERENCING "
    f"{'NEW TABLE AS new_rows' if e != 'DELETE' else ''}{' ' if e == 'UPDATE' else ''}"
    f"{'OLD TABLE AS old_rows' if e != 'INSERT' else ''} FOR EACH STATEMENT "
    f"EXECUTE FUNCTION actx_text_counts_{e.lower()}()" for e in EVENTS)

# the counts as the live rows hold them now (the migration fills the tables with them)
FILL = (
    "INSERT INTO text_counts (lexeme, namespace, rows) SELECT lex, namespace, count(*) FROM nodes, "
    "unnest(tsvector_to_array(tsv)) lex WHERE retracted_at IS NULL GROUP BY lex, namespace",
    "INSERT INTO text_totals (namespace, rows, lengths) SELECT namespace, count(*), sum(length(tsv)) FROM nodes "
    "WHERE retracted_at IS NULL GROUP BY namespace",
)


def install(db) -> None:
    """The tables, their triggers and their rows from the live rows of ``nodes`` (migration 14: one pass over the
    rows' tsvectors; ``work_mem`` raised for the aggregate)."""
    for statement in TABLES:
        db.execute(statement)
    for event in EVENTS:
        db.execute(_function(event))
    for statement in TRIGGERS:
        db.execute(statement)
    db.execute("SET LOCAL work_mem = '256MB'")
    db.execute("TRUNCATE text_counts, text_totals")
    for statement in FILL:
        db.execute(statement)
    db.execute("ANALYZE text_counts")
    db.execute("ANALYZE text_totals")


def suspend(db) -> bool:
    """For a bulk load into an empty ``nodes`` (``Store.import_rows``: a store copied whole, the 1,000,000-memory
    build): the counts' triggers disabled for the rest of the load's transaction, so no batch pays for its counts
    (an aggregate and an upsert of its lexemes a statement); ``resume`` counts the rows once at the end, in the same
    transaction. Whether it did (nothing when the store has no counts or ``nodes`` holds a row). The ALTER is
    transactional: a load rolled back or killed leaves the triggers as they were, and no count of its rows."""
    if not installed(db) or db.execute("SELECT EXISTS (SELECT 1 FROM nodes)").fetchone()[0]:
        return False
    db.execute("ALTER TABLE nodes " + ", ".join(f"DISABLE TRIGGER actx_text_counts_{e.lower()}" for e in EVENTS))
    return True


def resume(db) -> None:
    """After a load ``suspend`` let in: the triggers enabled again and the counts made from the live rows, one pass
    over their tsvectors (``FILL``; ``nodes`` was empty before the load, so every count is the rows' own: what the
    triggers would have kept, exactly)."""
    db.execute("ALTER TABLE nodes " + ", ".join(f"ENABLE TRIGGER actx_text_counts_{e.lower()}" for e in EVENTS))
    db.execute("SELECT set_config('work_mem', greatest(pg_size_bytes(current_setting('work_mem')), "
               "pg_size_bytes('256MB')) / 1024 || 'kB', true)")
    db.execute("DELETE FROM text_counts")
    db.execute("DELETE FROM text_totals")
    for statement in FILL:
        db.execute(statement)
    db.execute("ANALYZE text_counts")


# (term, lexeme, rows holding it) per query term's lexeme, in the terms' order, then (NULL, NULL, rows) and
# (NULL, '', lexemes of those rows added up): every count BM25 ranks with, in one statement. {scope}: the
# namespaces (``namespace = ANY(%s)``) or none (every namespace).
COUNTS = """
WITH w AS (SELECT w.term, w.i, lex FROM unnest(%s::text[]) WITH ORDINALITY w(term, i),
           unnest(tsvector_to_array(to_tsvector('english', w.term))) lex)
SELECT w.term, w.lex, (SELECT coalesce(sum(c.rows), 0)::bigint FROM text_counts c WHERE c.lexeme = w.lex{scope}) FROM w
UNION ALL (SELECT NULL, NULL, coalesce(sum(t.rows), 0)::bigint FROM text_totals t WHERE true{scope})
UNION ALL (SELECT NULL, '', coalesce(sum(t.lengths), 0)::bigint FROM text_totals t WHERE true{scope})
"""
SCOPE = " AND namespace = ANY(%s)"
STEP = 14  # the migration that adds the tables
# the same counted from the live rows themselves: a store kept at a schema before ``STEP`` (upgrade tests)
FROM_ROWS = """
WITH w AS (SELECT w.term, w.i, lex FROM unnest(%s::text[]) WITH ORDINALITY w(term, i),
           unnest(tsvector_to_array(to_tsvector('english', w.term))) lex)
SELECT w.term, w.lex, (SELECT count(*) FROM nodes WHERE retracted_at IS NULL
                       AND tsv @@ quote_literal(w.lex)::tsquery{scope}) FROM w
UNION ALL (SELECT NULL, NULL, count(*) FROM nodes WHERE retracted_at IS NULL{scope})
UNION ALL (SELECT NULL, '', coalesce(sum(length(tsv)), 0)::bigint FROM nodes WHERE retracted_at IS NULL{scope})
"""


def counts(read: Read, terms: list[str], scope: Sequence[str] | None, kept: bool = True
           ) -> tuple[int, float, list[tuple[str, str, int]]]:
    """(live rows, their average lexemes, (term, lexeme, rows holding it) per term's lexeme in the terms' order) in
    the namespaces ``scope`` (None: every one), exact; ``kept``: read from the tables (else from the rows: a store
    at a schema before ``STEP``)."""
    sql = COUNTS if kept else FROM_ROWS
    if scope is None:
        found = read(sql.format(scope=""), [terms])
    else:
        names = list(scope)
        found = read(sql.format(scope=SCOPE), [terms, names, names, names])
    (rows,), (lengths,) = [r[2:] for r in found[-2:]]
    return int(rows), (float(lengths) / rows if rows else 0.0), [(t, x, int(n)) for t, x, n in found[:-2]]


def installed(db) -> bool:
    return bool(db.execute("SELECT to_regclass('text_counts') IS NOT NULL").fetchone()[0])


COUNTS_SECONDS = 1.0  # a store's counts read are used again this long (the searches of one retrieve ask the same
# words three to five times: text_search, again without the names asked, ids=, term_counts), never inside a
# transaction, and forgotten at each of its commits and rollbacks; another process's commit shows within this long
KEPT_TERMS = 512


class Recent:
    """The counts one store (and its second connection) read last, per namespaces searched: exact as of their
    read, used again for ``COUNTS_SECONDS`` when they hold every word asked (one statement fewer a search)."""

    def __init__(self) -> None:
        self._by_scope: dict[tuple[str, ...] | None, tuple[float, int, float, dict[str, list]]] = {}

    def clear(self) -> None:
        self._by_scope = {}

    def get(self, read: Read, terms: list[str], scope: Sequence[str] | None, kept: bool = True,
            fresh: bool = False) -> tuple[int, float, list[tuple[str, str, int]]]:
        """``counts``, from what was read less than ``COUNTS_SECONDS`` ago when it holds every term (``fresh``:
        read them now, as inside a transaction)."""
        key = None if scope is None else tuple(scope)
        now, held = time.monotonic(), self._by_scope.get(key)
        if held is not None and now - held[0] > COUNTS_SECONDS:
            held = None
        if held is not None and not fresh and all(t in held[3] for t in terms):
            return held[1], held[2], [row for t in terms for row in held[3][t]]
        rows, avgdl, found = counts(read, terms, scope, kept)
        if fresh:
            return rows, avgdl, found
        by_term: dict[str, list] = {t: [] for t in terms}  # a stopword (no lexeme) is remembered too
        for row in found:
            if row not in by_term[row[0]]:
                by_term[row[0]].append(row)
        if held is not None and held[1:3] == (rows, avgdl) and len(held[3]) + len(by_term) <= KEPT_TERMS:
            by_term = {**held[3], **by_term}  # the same state of the rows, as far as N and avgdl tell: merged
            now = held[0]
        if len(self._by_scope) >= KEPT_TERMS:
            self._by_scope = {}
        self._by_scope = {**self._by_scope, key: (now, rows, avgdl, by_term)}
        return rows, avgdl, found
