"""The planner's statistics after an erasure on PostgreSQL: ANALYZE (autovacuum runs it as a table grows) keeps a
sample of each column's values in the catalog ``pg_statistic`` (its most common values and histogram bounds: a
memory's text, its conversation id, a node's key), in the database's own files. VACUUM FULL of a table rewrites
the table, not its statistics, so an erased value sampled before stays there.

``forget(store, tables)``, after the tables' VACUUM FULL: ANALYZE each (its statistics now sample the rows that
remain; the old ones become dead tuples of ``pg_statistic``), then VACUUM FULL of ``pg_statistic`` itself (its heap
and TOAST files rewritten without them) where the role may (a superuser, a role with MAINTAIN on it: PostgreSQL 17's
``pg_maintain``; before 17 the database's owner too). A role that may not is told what remains and who can clear
it. A table ANALYZE finds empty keeps its old statistics (PostgreSQL writes none from no rows): they are cleared
(``pg_clear_attribute_stats``, PostgreSQL 18), or said to remain before 18.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import pg_scrub

CATALOG = "pg_catalog.pg_statistic"
MAY_VACUUM = (
    "SELECT r.rolsuper OR CASE WHEN current_setting('server_version_num')::int >= 170000 "
    "THEN has_table_privilege('pg_catalog.pg_statistic', 'MAINTAIN') "
    "ELSE d.datdba = r.oid END FROM pg_roles r, pg_database d "
    "WHERE r.rolname = current_user AND d.datname = current_database()")


def forget(store: Any, tables: Sequence[str], wait_s: float = pg_scrub.WAIT_S) -> dict[str, Any]:
    """ANALYZE ``tables`` (of the store's schema) and rewrite ``pg_statistic``, after waiting up to ``wait_s`` for
    the transactions that may still see the old samples (VACUUM FULL keeps them for those, as for any row:
    pg_scrub.py); returns ``statistics`` (what was done), ``may_remain`` (what could not be cleared) and ``held``
    (a reader kept the old samples: the erasure is not clean, as a scrub's ``held``)."""
    import psycopg
    from psycopg import sql as pgsql

    db = store._db
    empty, refused, readers = [], [], []
    for name in tables:
        may = db.execute(pg_scrub.MAY_MAINTAIN, (name,)).fetchone()
        if may is None:  # no such table in this schema (one pinned to an older version)
            continue
        if not may[0]:
            refused.append(name)  # PostgreSQL would skip it with a warning: its old samples stay live
            continue
        db.execute(pgsql.SQL("ANALYZE {}").format(pgsql.Identifier(name)))
        if db.execute(pgsql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {})").format(pgsql.Identifier(name))
                      ).fetchone()[0]:
            empty.append(name)
    remain = []
    if empty and db.execute("SELECT current_setting('server_version_num')::int >= 180000").fetchone()[0]:
        for name in empty:  # PostgreSQL 18: the statistics of each column cleared (the table's owner may)
            db.execute("SELECT pg_clear_attribute_stats(schemaname, tablename, attname, inherited) FROM pg_stats "
                       "WHERE schemaname = current_schema() AND tablename = %s", (name,))
        empty = []
    if refused:
        remain.append(f"planner statistics of {', '.join(refused)} sampled before the erasure (pg_statistic): the "
                      "role may not ANALYZE them; their owner (or a role with MAINTAIN on them) can, then VACUUM FULL "
                      f"{CATALOG}")
    if empty:
        remain.append(f"planner statistics of {', '.join(empty)} sampled before the erasure (pg_statistic: ANALYZE "
                      "writes none for an empty table), until the table holds rows and is analyzed again")
    if db.execute(MAY_VACUUM).fetchone()[0]:
        readers = pg_scrub.wait_for_older(db, wait_s)
        db.execute(f"VACUUM (FULL) {CATALOG}")
        done = "analyzed; pg_statistic rewritten"
        if readers:
            done += f" while {len(readers)} older reader(s) ran"
            remain.append(f"planner statistics sampled before the erasure, kept in pg_statistic for reader(s) "
                          f"older than its ANALYZE ({pg_scrub.shown(readers)}); once they end, erase again to "
                          "rewrite it")
    else:
        done = "analyzed; pg_statistic not rewritten (the role may not vacuum it)"
        remain.append("the planner statistics sampled before the erasure, in pg_statistic's dead tuples, until a "
                      f"superuser (or a role with MAINTAIN on it) runs VACUUM FULL {CATALOG}")
    try:
        db.execute("CHECKPOINT")  # the old files go (as after the tables' scrub)
    except psycopg.Error:  # needs superuser or pg_checkpoint; the server checkpoints on its own too
        pass
    return {"statistics": done, "may_remain": remain, "held": bool(readers)}
