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
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Mapping

import numpy as np

from .live import ALIVE, VECTORS, Column, Feed, LiveIndex, follow
from .snapshot import IndexFiles, Snapshot

SAVE_LAG = 1000  # save the file again once the rows are this many changes ahead of it
PENDING_SCAN = 5000  # how far past the rows' counter a save looks for an unseen purge
UNSEEN_PURGES = ("node.purge", "node.retract", "vectors.delete")
log = logging.getLogger(__name__)


def purge_pending(files: IndexFiles, counter: int) -> bool:
    """True when the change log after ``counter`` holds a purge, retraction or vector delete."""
    return any(ch.op in UNSEEN_PURGES for ch in files.store.changes_since(counter, limit=PENDING_SCAN))


def save_rows(files: IndexFiles, kind: str, name: str, model: str, rows: LiveIndex,
              blobs: Mapping[str, bytes] | None = None) -> bool:
    """Write ``rows`` (and ``blobs``) to the index file unless a purge they have not seen is pending; True when
    written (``rows.saved`` is then their counter)."""
    if purge_pending(files, rows.counter):
        return False
    arrays, meta = rows.export()
    if files.save(kind, name, model, rows.counter, arrays, {"meta": json.dumps(meta).encode(), **(blobs or {})}
                  ) is None:
        return False
    rows.saved = rows.counter
    return True


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
        dropped = fresh is current and fresh.dead > dead  # rows of deleted items: the file should not keep them
        behind = fresh.counter - fresh.saved >= SAVE_LAG
        if files.enabled and len(fresh) and (fresh is not current or dropped or behind):
            try:
                save_rows(files, kind, name, model, fresh)
            except OSError as exc:  # the rows still serve this process; the next one rebuilds
                log.warning("could not save the index file for %s: %s", name, exc)
        return fresh

    return refresh
