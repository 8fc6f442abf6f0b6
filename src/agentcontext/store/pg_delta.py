"""The delta of unindexed vectors (issue 23 s1): HNSW maintenance off the write path.

Inserting a row into a pgvector HNSW index costs ~3.8 ms at 200,000 rows on the 2-core machine measured (the graph
walk that links it), about ten times the row's share of a bulk build, and was 80-90% of ``batch_store``'s time into
a large store. So a vector written into a store whose index is kept lands in the delta: the same ``vectors`` table,
flagged ``pending`` (migration 8) instead of ``searched``, and the HNSW index (partial, ``WHERE ... AND searched``)
never sees it. Its only index is ``vectors_pending`` (a small btree over the delta's rows). A row is in one of three
states: ``searched`` (in the HNSW index), ``pending`` (a node's text has it, not yet indexed) or neither (a
conversation turn's context vector, read by hash alone); never both (constraint ``vectors_one_state``).

Why a column, not a table of its own: every reader of vectors (``get_vectors``, ``similarities``, erasure's purge
and ``scrub``, export/migrate, ``count_vectors``/``info``) reads the one table by hash and needs no change, and an
erased vector leaves no copy elsewhere; the insert costs the same (heap row plus one primary-key entry, the partial
btree's entry is ~20 bytes).

``nearest`` (``pg_vectors.nearest_sql``) walks the HNSW index over the searched rows and scores the delta exactly
(every pending row of the model: an inner product over the rows ``vectors_pending`` lists), then merges the two top
``k`` by score: the delta's rows are ranked exactly, so a result is what it would be with the rows folded, but for
the index's own approximation.

``fold`` moves the delta into the index (``UPDATE ... SET searched = true, pending = false``: the HNSW insert
happens then) in chunks of ``FOLD_CHUNK`` rows, each its own transaction under the store's writer lock: a fold
killed mid-way leaves each row either folded (a committed chunk) or still pending (the chunk it was in rolls back),
so every vector stays findable exactly once. It runs when asked (``agentcontext store fold``) and by itself in a
background thread of the writing process when a commit leaves more than ``FOLD_AT`` rows pending (``Folder``):
the query cost of the delta grows with its size (every row is scored), so it is kept bounded, while no write pays
for the index. The thread ends with its process (``close`` stops it after its chunk); a short-lived writer (one CLI
command) leaves the rest of the delta to the next long-lived writer or to ``agentcontext store fold``.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..errors import StoreError
from . import pg_q8
from .pg_vectors import MAX_INDEXED_DIM, create_ann_index, has_ann_index
from .sql_part import Part

# A commit that leaves more than this many vectors pending starts a background fold. Measured at 200,000 memories
# (benchmarks/postgres_delta_query.py on the 2-core machine): a delta of 10,000 rows took nearest from 30 to 46 ms
# at the median at load 6 (~1.6 us a delta row: the bitmap scan of vectors_pending and the row's score; 78 to 137
# ms at load 15-18), and its fold 42 s (4.2 ms a vector, the HNSW inserts the writes no longer pay). So the bound is
# kept near one large batch: a 10,000-memory batch_store stays unfolded (its commit is not slowed), the next one
# starts the fold.
# Under a sustained load the fold (~260 vectors/s) cannot keep up with the writes (2,000/s): the delta then grows
# past the bound until the load pauses, and queries pay for it meanwhile; ``agentcontext store fold`` folds at once.
FOLD_AT = 10_000
FOLD_CHUNK = 500  # rows a fold transaction moves (~2 s of HNSW inserts at 200,000 rows: the writer lock is short)


def has_delta(db: Any) -> bool:
    """Whether the schema has the delta's column (migration 8): a store whose migrations stop before it (tests pin an
    older schema to build its data) writes and searches as before the delta."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'vectors' AND column_name = 'pending'").fetchone() is not None


def pending_count(db: Any, limit: int | None = None) -> int:
    """Rows in the delta (every model), counted up to ``limit`` (an index-only count of ``vectors_pending``)."""
    if limit is None:
        return db.execute("SELECT count(*) FROM vectors WHERE pending").fetchone()[0]
    return db.execute("SELECT count(*) FROM (SELECT 1 FROM vectors WHERE pending LIMIT %s) c",
                      (int(limit),)).fetchone()[0]


def fold(store: Any, chunk: int = FOLD_CHUNK, progress: Callable[[int, int], None] | None = None,
         stop: threading.Event | None = None) -> dict[str, Any]:
    """Move every pending vector of ``store`` (a PostgresStore) into its model's HNSW index, ``chunk`` rows a
    transaction; ``progress(done, total)`` is called inside each chunk's transaction, before its commit. ``stop``:
    an event that ends the fold between chunks. Idempotent: a fold of an empty delta moves nothing."""
    if chunk <= 0:
        raise ValueError("chunk must be a positive number of rows")
    started = time.perf_counter()
    keys = store._read("SELECT model, dim, count(*) FROM vectors WHERE pending GROUP BY model, dim ORDER BY 1, 2")
    total = sum(n for _, _, n in keys)
    done, chunks = 0, 0
    for model, dim, _ in keys:
        if 0 < dim <= MAX_INDEXED_DIM:
            with store.transaction():  # a model whose index was never made (or was lost): made over its searched rows
                if not has_ann_index(store._db, model, dim):
                    create_ann_index(store._db, model, dim)
        while not (stop is not None and stop.is_set()):
            with store.transaction():
                moved = store._exec(
                    "UPDATE vectors SET searched = true, pending = false WHERE (hash, model) IN (SELECT hash, model "
                    "FROM vectors WHERE pending AND model = %s AND dim = %s LIMIT %s)", [model, dim, int(chunk)])
                done += moved
                chunks += moved > 0
                if progress is not None and moved:
                    progress(done, max(total, done))
            if moved < chunk:
                break
    return {"folded": done, "chunks": chunks, "pending": pending_count(store._db),
            "seconds": round(time.perf_counter() - started, 3)}


def pack(store: Any, chunk: int = 10 * FOLD_CHUNK, stop: threading.Event | None = None) -> dict[str, Any]:
    """Hold the context vectors written since the last pack as int8 (``pg_q8``, migration 9), ``chunk`` rows a
    transaction (read, quantized in the client, written back; no index is walked). A changed precision changes their
    scores (by ~3e-4), so this is apart from ``fold``, whose results are the delta's."""
    started, packed = time.perf_counter(), 0
    for model, dim in (store._read(pg_q8.UNPACKED_MODELS) if store._q8 else []):
        while not (stop is not None and stop.is_set()):
            with store.transaction():
                moved = pg_q8.compact(store._db, model, dim, chunk)
            packed += moved
            if moved < chunk:
                break
    return {"packed": packed, "seconds": round(time.perf_counter() - started, 3)}


class Delta(Part):
    """PostgresStore's part in the delta (``Capability.VECTOR_DELTA``): fold now, count what is pending, start a
    background fold when a commit leaves more than the store's ``fold_at`` rows pending (its ``folder``)."""

    __slots__ = ()

    def fold(self, chunk: int = FOLD_CHUNK, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Move the delta of unindexed vectors into the HNSW indexes now (``fold``)."""
        if not self.store._delta:
            return {"folded": 0, "chunks": 0, "pending": 0, "seconds": 0.0}
        return fold(self.store, chunk, progress)

    def pack(self) -> dict[str, Any]:
        """Hold the context vectors written since as int8 now (``pack``)."""
        return pack(self.store)

    def pending_vectors(self) -> int:
        """Vectors in the delta: written, scored exactly by ``nearest``, not in an HNSW index yet."""
        if not self.store._delta:
            return 0
        return self._read("SELECT count(*) FROM vectors WHERE pending")[0][0]

    def grew(self) -> None:
        """After a commit that put rows into the delta: fold in the background past the bound."""
        store = self.store
        if store.fold_at is not None and not store.folder.running and \
                pending_count(self._db, store.fold_at + 1) > store.fold_at:
            store.folder.start()


class Folder:
    """The background fold of one store: a daemon thread with a connection of its own (``opener()`` gives a new
    store on the same URL) that folds the whole delta, then ends. ``start`` is a no-op while one runs; ``stop``
    ends it after its current chunk (that chunk commits or rolls back whole)."""

    def __init__(self, opener: Callable[[], Any]) -> None:
        self._opener = opener
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.last: dict[str, Any] | None = None  # the last fold's receipt, or {"error": ...}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        if self.running:
            return False
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="agentcontext-fold", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        try:
            store = self._opener()
        except StoreError as exc:
            self.last = {"error": str(exc)}
            return
        try:
            self.last = fold(store, stop=self._stop)
            self.last.update(pack(store, stop=self._stop))  # then the context vectors written meanwhile, as int8
        except StoreError as exc:  # the writer lock held too long by a load, a lost server: the next commit retries
            self.last = {"error": str(exc)}
        finally:
            store.close()

    def stop(self, wait: float | None = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
