"""PostgreSQL's scrub: rewrite the tables an erasure touched so their files hold no erased byte, and say honestly
when they cannot yet.

Only a table's owner (a superuser; from PostgreSQL 17 a role with MAINTAIN on it) may VACUUM it: PostgreSQL skips
any other with a warning, so the scrub asks first (``MAY_MAINTAIN``) and names the tables it could not rewrite
(status ``refused``, ``refused``, and what to grant in ``may_remain``: the receipt is incomplete).

A deleted row's bytes stay in its dead tuple until the table is rewritten. ``VACUUM FULL`` copies only the live
rows into new files, but it must keep a dead row that some transaction may still see: one whose snapshot is older
than the erasure (a long report, a backup's ``pg_dump``, an ``idle in transaction`` session, an ANALYZE of another
table running at that moment, a prepared transaction, a replica's ``hot_standby_feedback`` or a replication slot).
Such a row is copied into the new files, erased content and all. So a strict scrub first waits, up to
``wait_s``, for every transaction older than the erasure to end, then rewrites; if one still runs at the rewrite,
the status is ``held`` (not clean: the receipt is incomplete), ``held_by`` names who, and scrubbing again after it
ends (erase again: the scrub runs whether or not anything is left to erase) finishes the job.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import psycopg
from psycopg import sql as pgsql

from . import scrub as scrub_tables

# what a strict scrub cannot reach (its receipt says so)
MAY_REMAIN = (
    "WAL segments written before the erasure, until the server recycles and overwrites them (longer with "
    "wal_keep_size, replication slots or WAL archiving)",
    "base backups, WAL archives and replicas made before the erasure",
    "blocks the filesystem or the storage device freed but did not overwrite",
)
# whether the role may VACUUM (and ANALYZE) a table of the schema (None: no such table): PostgreSQL skips one it
# may not with a warning only, so a scrub that ran it would leave the erased rows' dead tuples and say it was clean
MAY_MAINTAIN = (
    "SELECT CASE WHEN current_setting('server_version_num')::int >= 170000 THEN has_table_privilege(c.oid, 'MAINTAIN') "
    "ELSE pg_has_role(c.relowner, 'USAGE') OR r.rolsuper OR d.datdba = r.oid END "
    "FROM pg_class c, pg_roles r, pg_database d "
    "WHERE c.oid = to_regclass(%s) AND r.rolname = current_user AND d.datname = current_database()")
WAIT_S = 30.0
"""How long a strict scrub waits for the transactions older than the erasure to end before it rewrites anyway."""
POLL_S = 0.1

# The next transaction id when the scrub starts: every erasure committed before it has a smaller one, so a
# transaction whose snapshot (backend_xmin) or own id (backend_xid) is older than this one may still see erased rows.
# age() counts back from one reference within a statement, so a greater age is an older id (wraparound-safe).
# An autovacuum worker that only vacuums is left out: PostgreSQL ignores a VACUUM's snapshot for the horizon
# (one that also ANALYZEs is not ignored). Other roles' sessions show their xmin without pg_read_all_stats.
_HORIZON = "SELECT xid(pg_snapshot_xmax(pg_current_snapshot()))::text"
_OLDER = """
SELECT 'session' AS kind, pid::text AS who,
       coalesce(nullif(application_name, ''), backend_type, 'another role') AS what,
       coalesce(state, 'unknown') AS state, xact_start::text AS since
  FROM pg_stat_activity
 WHERE pid <> pg_backend_pid() AND (datid IS NULL OR datname = current_database())
   AND ((backend_xmin IS NOT NULL AND age(backend_xmin) > age(%(ref)s::xid))
        OR (backend_xid IS NOT NULL AND age(backend_xid) > age(%(ref)s::xid)))
   AND NOT (backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: VACUUM %%' AND query NOT LIKE '%%ANALYZE%%')
UNION ALL
SELECT 'prepared transaction', gid, owner::text, 'prepared', prepared::text
  FROM pg_prepared_xacts
 WHERE database = current_database() AND age(transaction) > age(%(ref)s::xid)
UNION ALL
SELECT 'replication slot', slot_name::text, slot_type, CASE WHEN active THEN 'active' ELSE 'inactive' END, NULL
  FROM pg_replication_slots
 WHERE (database IS NULL OR database = current_database()) AND xmin IS NOT NULL AND age(xmin) > age(%(ref)s::xid)
"""
_FIELDS = ("kind", "who", "what", "state", "since")


def older_readers(db: Any, ref: str) -> list[dict[str, Any]]:
    """Who may still see a row deleted before transaction ``ref``: sessions, prepared transactions, slots."""
    return [dict(zip(_FIELDS, row)) for row in db.execute(_OLDER, {"ref": ref}).fetchall()]


def wait_for_readers(db: Any, ref: str, wait_s: float) -> list[dict[str, Any]]:
    """Poll until no reader older than ``ref`` is left or ``wait_s`` passes; returns those still there."""
    deadline = time.monotonic() + wait_s
    readers = older_readers(db, ref)
    while readers and time.monotonic() < deadline:
        time.sleep(POLL_S)
        readers = older_readers(db, ref)
    return readers


def wait_for_older(db: Any, wait_s: float) -> list[dict[str, Any]]:
    """``wait_for_readers`` of the transactions older than now (the next transaction id): those still there."""
    return wait_for_readers(db, db.execute(_HORIZON).fetchone()[0], wait_s)


def shown(readers: list[dict[str, Any]]) -> str:
    """The first five readers, each as kind, who, what, state and since when; how many more."""
    listed = "; ".join(f"{r['kind']} {r['who']} ({r['what']}, {r['state']}" +
                       (f", since {r['since']})" if r["since"] else ")") for r in readers[:5])
    return listed + (f" and {len(readers) - 5} more" if len(readers) > 5 else "")


def _held(readers: list[dict[str, Any]]) -> str:
    return (f"dead versions of the erased rows in the heap and index files: {len(readers)} reader(s) older than the "
            f"erasure could still see them when the tables were rewritten ({shown(readers)}); once they end, erase "
            "again (the scrub runs again) to rewrite the files without them")


def _refused(tables: Sequence[str], role: str) -> str:
    names = ", ".join(tables)
    return (f"dead versions of the erased rows in {names}, whose files were not rewritten: the role {role} may not "
            f"VACUUM them (only their owner, a superuser or, from PostgreSQL 17, a role with MAINTAIN on them); have "
            f"the owner run GRANT MAINTAIN ON {names} TO {role} (PostgreSQL 17 or later), or erase as the owner, then "
            "erase again (the scrub runs again)")


def run(db: Any, execute: Callable[[Any], Any], tables: Sequence[str] | None, strict: bool, wait_s: float,
        backend: str = "postgres") -> dict[str, Any]:
    """VACUUM (FULL when ``strict``) of ``tables`` through ``execute`` (the store's guarded statement), after
    waiting for older readers; then a CHECKPOINT so the WAL before it can be recycled. The caller holds the store's
    lock."""
    names = [t for t in (tables or scrub_tables.TABLES) if t in scrub_tables.TABLES]
    out: dict[str, Any] = {"backend": backend, "tables": names, "vacuum": "full" if strict else "plain"}
    readers: list[dict[str, Any]] = []
    refused = [n for n in names if (db.execute(MAY_MAINTAIN, (n,)).fetchone() or (True,))[0] is False]
    if strict:
        readers = wait_for_older(db, wait_s)
    for name in names:
        if name not in refused:
            execute(pgsql.SQL("VACUUM (FULL) {}" if strict else "VACUUM {}").format(pgsql.Identifier(name)))
    try:
        db.execute("CHECKPOINT")
        out["checkpoint"] = "done"
    except psycopg.Error as exc:  # needs superuser or pg_checkpoint; the server checkpoints on its own too
        reason = exc.diag.message_primary or str(exc)
        out["checkpoint"] = f"not allowed for this role ({reason}); the server's own checkpoints follow"
    out["status"] = ("refused" if refused else "held" if readers else "clean") if strict else "deferred"
    out["may_remain"] = list(MAY_REMAIN)
    if refused:
        out["refused"] = refused
        out["may_remain"].insert(0, _refused(refused, db.info.user or "<role>"))
    if readers:
        out["held_by"] = readers
        out["may_remain"].insert(0, _held(readers))
    if not strict:
        out["may_remain"].insert(0, f"dead tuples of {', '.join(names)} in the heap and index files, until "
                                    "overwritten or VACUUM FULL")
    return out
