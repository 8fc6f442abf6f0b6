"""A live index persisted beside the store: its rows saved to one index file (``engine/snapshot.py``) and mapped
back by a new process, which then catches up from the change log (``engine/live.follow``) instead of rebuilding.

``save_rows`` writes a ``LiveIndex`` (every column, its ids, labels, dead count, pending ids) plus any blobs the
owner adds; ``load_rows`` maps it back when the file passes every check of ``engine/snapshot.py`` and its arrays
fit the columns asked for (anything else: None, the caller rebuilds). ``persisted(files, kind, name, feed)`` is
the ``refresh`` a ``Workspace.live`` entry needs for an index fed by a ``Feed`` over a ``LiveIndex`` (the
decision index, each pack's vectors): map the file on first use, follow the store, save after a rebuild, after
rows were dropped (a deleted item's vector leaves the file at the next use) and once the rows run ``SAVE_LAG``
changes ahead of the file; an index whose file was scrubbed under it (an
erasure, ``IndexFiles.scrub``) is dropped and built anew.

A save is skipped while a purge, retraction or vector delete the rows have not seen is in the log (the next
refresh replays or rebuilds, then saves), so a file never holds rows the store has purged at its counter.
Saves run on a thread of their own (``BACKGROUND``, ``IndexFiles.save_later``), so the query that rebuilt or
caught up the rows does not pay for writing them (at 1,000,000 memories a 1.75 GB write and fsync): what they
write is taken under the caller's lock (``frozen``), and a scrub meanwhile (an erasure) abandons the save.
"""
from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AgentContextError
from .live import ALIVE, VECTORS, Column, Feed, LiveIndex, follow
from .snapshot import IndexFiles, Snapshot

SAVE_LAG = 1000  # save the file again once the rows are this many changes ahead of it
BACKGROUND = True  # saves run on a thread of their own, off the query path (False: inside the refresh, as before)
PENDING_SCAN = 5000  # changes a page when a save looks past the rows' counter for an unseen purge
UNSEEN_PURGES = ("node.purge", "node.retract", "vectors.delete")
log = logging.getLogger(__name__)


def purge_pending(files: IndexFiles, counter: int) -> bool:
    """True when the change log after ``counter`` holds a purge, retraction or vector delete (read to its end,
    ``PENDING_SCAN`` changes a page: a purge behind a big batch counts too)."""
    while True:
        page = files.store.changes_since(counter, limit=PENDING_SCAN)
        if any(ch.op in UNSEEN_PURGES for ch in page):
            return True
        if len(page) < PENDING_SCAN:
            return False
        counter = page[-1].seq


def frozen(rows: LiveIndex) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``rows.export()`` that later changes to the rows cannot reach: the ids, labels and small columns are
    copied, the float32 planes are not (too big). A float row changed after this is changed by a change after
    the rows' counter, which whoever maps the file replays, so a half-written row never outlives a catch-up."""
    arrays, meta = rows.export()
    arrays = {k: a if a.dtype == np.float32 else a.copy() for k, a in arrays.items()}
    meta = {**meta, "ids": list(meta["ids"]), "labels": {k: list(v) for k, v in meta["labels"].items()}}
    return arrays, meta


def save_job(files: IndexFiles, kind: str, name: str, model: str, rows: LiveIndex,
             blobs: Callable[[], Mapping[str, bytes]] | None = None) -> Callable[[], bool]:
    """A save of ``rows`` as they are now, to run now or on a thread (``IndexFiles.save_later``): it writes
    nothing while a purge the rows have not seen is in the log (checked before writing and again before the
    rename), nor after a scrub since now; ``blobs()`` (built when it runs) adds the owner's sections."""
    counter, generation = rows.counter, files.generation
    arrays, meta = frozen(rows)

    def unseen_purge() -> bool:
        return purge_pending(files, counter)

    def run() -> bool:
        if unseen_purge():
            return False
        sections = {"meta": json.dumps(meta).encode(), **(blobs() if blobs is not None else {})}
        if files.save(kind, name, model, counter, arrays, sections, generation=generation,
                      keep=lambda: not unseen_purge()) is None:
            return False
        rows.saved = max(rows.saved, counter)
        return True

    return run


def save_rows(files: IndexFiles, kind: str, name: str, model: str, rows: LiveIndex,
              blobs: Mapping[str, bytes] | None = None) -> bool:
    """Write ``rows`` (and ``blobs``) to the index file now, unless a purge they have not seen is pending; True
    when written (``rows.saved`` is then their counter)."""
    return save_job(files, kind, name, model, rows, (lambda: blobs) if blobs else None)()


def schedule(files: IndexFiles, name: str, job: Callable[[], Callable[[], bool]]) -> bool:
    """Prepare a save (``job()``, under the caller's lock) and run it on its thread (``BACKGROUND``) or now;
    False (nothing done) while a save of ``name`` still runs: the caller tries again at its next refresh."""
    if files.busy(name):
        return False
    run = job()
    if BACKGROUND:
        return files.save_later(name, lambda: _logged(name, run))
    _logged(name, run)
    return True


def _logged(name: str, run: Callable[[], bool]) -> None:
    try:
        run()
    except (OSError, ValueError, sqlite3.Error, AgentContextError) as exc:  # the rows still serve; a next one rebuilds
        log.warning("could not save the index file for %s: %s", name, exc)


def load_rows(files: IndexFiles, kind: str, name: str, model: str, columns: Mapping[str, Column],
              optional: Callable[[int], Mapping[str, Column]] | None = None) -> tuple[LiveIndex, Snapshot] | None:
    """The rows held in the index file and the mapped file, or None when there is none that passes every check
    and fits ``columns`` (plus those of ``optional(dimension)`` the file holds)."""
    snap = files.load(kind, name, model)
    if snap is None:
        return None
    try:
        meta = snap.json("meta")
        wanted = dict(columns)
        if optional is not None:
            wanted.update({k: c for k, c in optional(int(meta["dimension"])).items() if snap.has(k)})
        arrays: dict[str, np.ndarray] = {n: snap.array(n) for n in (VECTORS, ALIVE, *wanted)}
        rows = LiveIndex.restore(wanted, arrays, meta, snap.counter)
    except (KeyError, ValueError, TypeError) as exc:  # passed the checks yet does not fit: rebuild
        log.warning("ignoring the index file %s: %s", snap.path, exc)
        return None
    rows.source, rows.saved = snap, snap.counter
    return rows, snap


def persisted(files: IndexFiles, kind: str, name: str, model: str, feed: Feed[Any],
              columns: Mapping[str, Column] | None = None) -> Callable[[LiveIndex | None], LiveIndex]:
    """``refresh`` for ``Workspace.live(name, refresh)``: the held rows (or those mapped from the file) caught up
    from the change log, saved after a rebuild or once ``SAVE_LAG`` changes ahead of the file."""
    def refresh(current: LiveIndex | None) -> LiveIndex:
        if current is not None and not current.intact():
            current = None  # the file under it was scrubbed (an erasure): nothing of it is trusted
        if current is None and files.enabled:
            loaded = load_rows(files, kind, name, model, columns or {})
            current = loaded[0] if loaded else None
        dead = current.dead if current is not None else 0
        fresh = follow(current, files.store, feed)
        if fresh is not current or fresh.dead > dead:  # rebuilt, or rows of deleted items the file should lose
            fresh.due = True
        behind = fresh.counter - fresh.saved >= SAVE_LAG
        if files.enabled and len(fresh) and (fresh.due or behind):
            if schedule(files, name, lambda: save_job(files, kind, name, model, fresh)):
                fresh.due = False
        return fresh

    return refresh
