"""A new connection's first search, run at open in the background, so a process's first query does not pay it.

A new server backend pays for its first statements beyond what they cost afterwards: it maps each shared buffer it
touches for the first time (at 1,000,000 memories ~5,000 minor page faults, ~25-40 ms of backend CPU for a first
retrieve whose pages are all in the buffers already), fills its catalog caches and the text search configuration;
the client pays the first call of each code path (psycopg's adapters for the types a search sends and reads, our
query builders). ``WarmUp`` runs the store's own search calls once on the store's connection, with a sample of the
store's data (a memory of its most common namespace: its vector, its two longest words, its neighbours), in a daemon
thread, each step under the store's lock: the process meanwhile loads its embedding model (half a second and more),
so on a machine with a core to spare the warm-up costs a new process no time from its start (on a busy one its
backend's CPU is taken from the model's load beside it: docs/POSTGRES_SCALE.md). A call of the store from another
thread never runs beside a search step: it waits for the step in flight (tens of milliseconds at 1,000,000); once
a search or a write has been asked (the first query, or a command that only writes), the warm-up stops (``Gate``:
the store's lock, told by those calls; the report says where it yielded). Only stores whose search indexes are large
enough to be prewarmed (``pg_prewarm.MIN_BLOCKS``) are warmed: a small one's first query is fast anyway. After the
search's steps (all there is to do on a warm server) the same thread loads the search indexes a probe finds cold into
the server's buffers, a chunk a step (``pg_prewarm.probe`` / ``load``: on a server just started, what the first query
would otherwise read block by block from the OS cache; the open itself loads nothing), on a connection of its own
opened for the load and closed after it, so no call of the store waits for a load step (the first search stops the
load after the step in flight, which runs on beside it; where that connection cannot be opened, the load runs on the
store's, a step under its lock); a refusal there (a role that may not use ``pg_prewarm``) is reported in
``store.prewarmed.failed`` and ends only the load.

It reads only (a replica or a read-only role is warmed the same way) and changes nothing a query returns. A step that
fails (the role may not read a table, the connection broke) never fails the open: ``WarmUpReport.failed`` names the
step and the error, and the next call of the store reconnects as usual (``PostgresStore._guard``). ``close`` stops
a warm-up still running (the statement in flight is cancelled) before the connection closes.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql as pgsql

from ..errors import AgentContextError
from . import pg_hash, pg_prewarm

# the calls the memory search makes (memory/server_search.py), with smaller pools: what a new backend pays once (its
# catalogs, the text statistics, the shared pages every search walks: the HNSW graph's upper layers, the indexes'
# inner pages) is the same, the rows of the sample's neighbourhood serve no other query (at the search's pools of
# 100 / 150 the warm-up cost twice as much, ~1.2 s at load 10)
POOL, TEXT_POOL, LARGE = 40, 40, 20000  # LARGE: the size check's (engine/fusion.py COMMON_MIN_DOCS)
FIELDS = ("prev", "pair_hash", "created_at", "conversation_id", "user_id")  # the props its linked reads bring
WORDS = 2  # the longest words of the sample's text are searched (rarer: fewer rows ranked)
_WORD = re.compile(r"[^\W\d_]{4,}")


@dataclass
class WarmUpReport:
    """What the warm-up did: each step's milliseconds, the backend it warmed, why it did not run, or the step that
    failed and its error; ``started`` / ``ended``: ``time.perf_counter()`` when it began and ended, ``client_cpu_ms``
    the CPU time its thread took in this process, ``waited_ms`` how long the search or write it yielded to waited
    for the step in flight. ``wait`` blocks until it has ended (at once when it never
    started)."""

    steps: dict[str, float] = field(default_factory=dict)
    started: float | None = None
    ended: float | None = None
    client_cpu_ms: float | None = None
    skipped: str | None = None
    failed: str | None = None
    backend_pid: int | None = None
    waited_ms: float | None = None  # how long the call that made it yield waited for the step in flight
    loader: str | None = None  # the connection the indexes were loaded on (pg_prewarm.py), or why the store's
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)


class Gate:
    """The store's lock (re-entrant, as ``SQLStore``'s), through which a search or a write tells a warm-up that the
    store is wanted (``want``, from any thread but the warm-up's own); other reads (a workspace reading its settings
    while its model loads) take their turn between two steps."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.warmer: int | None = None
        self.wanted = False
        self.wanted_at: float | None = None  # ``time.perf_counter()`` of the first call that wanted the store

    def want(self) -> None:
        if self.warmer is not None and threading.get_ident() != self.warmer:
            if not self.wanted:
                self.wanted_at = time.perf_counter()
            self.wanted = True

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()


class WarmUp:
    """The store's search calls run once on its connection, in a thread, step by step under the store's lock; it
    stops before its next step once another thread has asked for the store (module doc)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.report = WarmUpReport()
        self._stop = threading.Event()
        self._running = False
        self._thread: threading.Thread | None = None
        self._step = "sample"
        self._taken: threading.Event | None = None
        self._db: psycopg.Connection | None = None  # the load's own connection while it runs (``_loader``)
        self.plan: tuple[pg_prewarm.PrewarmReport, list[tuple[str, int]]] | None = None  # set by ``_warm``: load

    def skip(self, reason: str) -> WarmUpReport:
        self.report.skipped = reason
        self.report.done.set()
        return self.report

    def start(self) -> WarmUpReport:
        """Start the warm-up in a daemon thread; its first step holds the store's lock before this returns, so a
        call of the store made after the open waits for that step at most."""
        taken = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(taken,), name="agentcontext-pg-warmup", daemon=True)
        self._thread.start()
        taken.wait()
        return self.report

    def stop(self, timeout: float = 5.0) -> None:
        """End a warm-up still running: no further step starts, the statement in flight is cancelled."""
        self._stop.set()
        if self._thread is None or not self._thread.is_alive():
            return
        if self._running:
            try:
                (self._db or self.store._db).cancel_safe(timeout=timeout)
            except (psycopg.Error, AttributeError):  # a connection already closed, or a psycopg before cancel_safe
                pass
        self._thread.join(timeout)

    def _run(self, taken: threading.Event) -> None:
        store, report = self.store, self.report
        gate = store._lock
        gate.wanted, gate.warmer = False, threading.get_ident()
        report.started, cpu = time.perf_counter(), time.thread_time()
        try:
            self._taken = taken
            self._search()
            if self.plan is not None:  # after the search's steps: on a warm server they are all there is to do
                self._prewarm(*self.plan)
        except _Stopped as stopped:
            report.failed = str(stopped)
        except (psycopg.Error, AgentContextError) as exc:  # reported, never raised: the open has returned
            report.failed = f"{self._step}: {type(exc).__name__}: {str(exc).strip()}"
            if self._stop.is_set():
                report.failed = f"stopped by close during {self._step}"
        finally:
            gate.warmer = None
            self._running = False
            report.ended = time.perf_counter()
            report.client_cpu_ms = round((time.thread_time() - cpu) * 1000, 1)
            taken.set()
            report.done.set()

    def _timed(self, name: str, fn: Any) -> Any:
        """One step under the store's lock, unless ``close`` or another call asked for the store first (the first
        step always runs: ``start`` returns once it holds the lock)."""
        gate = self.store._lock
        with gate:
            if self._taken is not None and not self._taken.is_set():
                self._taken.set()
            elif self._stop.is_set():
                raise _Stopped(f"stopped by close before {name}")
            elif gate.wanted:
                if gate.wanted_at is not None:  # how long that call waited for the step in flight
                    self.report.waited_ms = round((time.perf_counter() - gate.wanted_at) * 1000, 1)
                raise _Stopped(f"yielded to the store's first search or write before {name}")
            return self._time_step(name, fn)

    def _time_step(self, name: str, fn: Any) -> Any:
        """Run one step, its time added to ``report.steps[name]`` (a name's chunks sum)."""
        self._step, self._running = name, True
        t = time.perf_counter()
        try:
            out = fn()
        finally:
            self._running = False
        self.report.steps[name] = round(self.report.steps.get(name, 0.0) + (time.perf_counter() - t) * 1000, 1)
        return out

    def _prewarm(self, report: pg_prewarm.PrewarmReport, found: list[tuple[str, int]]) -> None:
        """The cold search indexes loaded into the server's buffers (pg_prewarm.py): a probe (on the store's
        connection, a step under its lock), then, when any is cold, a chunk a step (``load <index>`` sums an index's)
        on a connection of the warm-up's own (``_loader``), so neither a search nor another read waits for a step:
        the steps stop once a search or a write has been asked; where that connection cannot be opened, on the
        store's, step by step under its lock as the search's steps. A refusal by the server (the role may not use the
        extension) is named in ``report.failed`` and the search steps go on."""
        main = self.store._db
        self.report.backend_pid = main.info.backend_pid
        loader = None
        try:
            plan = self._timed("prewarm", lambda: pg_prewarm.probe(main, report, found))  # a ms on a warm server
            if plan is None or not (plan.load or plan.prefetch):
                return  # nothing cold: no connection opened for the load
            loader = self._loader()
            db = loader if loader is not None else main
            step = self._timed if loader is None else self._beside
            for chunk in pg_prewarm.chunks(plan):
                step(f"load {chunk[1]}", lambda c=chunk: pg_prewarm.load(db, plan, *c, report))
        except psycopg.Error as exc:
            if self._stop.is_set():
                raise
            report.failed = f"{self._step}: {type(exc).__name__}: {str(exc).strip()}"
        finally:
            if loader is not None:
                self._db = None
                loader.close()

    def _loader(self) -> psycopg.Connection | None:
        """A connection of its own for the load (the store's conninfo, role and schema), or None when it cannot be
        opened (``report.loader`` says why: the load then runs on the store's connection)."""
        store = self.store
        try:
            db = psycopg.connect(store._conninfo, autocommit=True,
                                 connect_timeout=int(store.CONNECT_TIMEOUT or store._timeout))
            if store.schema:
                db.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(store.schema)))
        except psycopg.Error as exc:
            self.report.loader = f"the store's connection ({type(exc).__name__}: {str(exc).strip()})"
            return None
        self.report.loader = f"its own (backend {db.info.backend_pid})"
        self._db = db
        return db

    def _beside(self, name: str, fn: Any) -> Any:
        """One load step on the warm-up's own connection: no lock taken; none once ``close`` or a search or a write
        asked for the store (it did not wait for the step: ``waited_ms`` 0)."""
        gate = self.store._lock
        if self._stop.is_set():
            raise _Stopped(f"stopped by close before {name}")
        if gate.wanted:
            self.report.waited_ms = 0.0
            raise _Stopped(f"yielded to the store's first search or write before {name}")
        return self._time_step(name, fn)

    def _search(self) -> None:
        store = self.store
        self.report.backend_pid = store._db.info.backend_pid
        found = self._timed("sample", lambda: sample(store))
        if found is None:
            self.report.skipped = "no node with a vector to search with"
            return
        namespace, kind, model, vector, text = found
        near = self._timed("nearest", lambda: store.nearest(vector, model, POOL, namespace=namespace, kind=kind))
        words = " ".join(sorted(dict.fromkeys(w.lower() for w in _WORD.findall(text or "")), key=len)[-WORDS:])
        hits = self._timed("text", lambda: store.text_search(words, namespace=namespace, kind=kind,
                                                             limit=TEXT_POOL)) if words else []
        if words:
            self._timed("term_counts", lambda: store.term_counts(words, namespace=namespace))
        self._timed("size", lambda: store.holds_at_least(LARGE, namespace, kind))
        ids = list(dict.fromkeys([i for i, _ in near] + [i for i, _ in hits]))
        named, followers = self._timed("linked", lambda: store.nodes_linked(ids, "prev", namespace, kind,
                                                                            fields=FIELDS, content=True))
        self._timed("naming", lambda: store.nodes_naming("prev", ids[:20], namespace=namespace, kind=kind))
        hashes = [h for n in [*named.values(), *followers] for h in (n.embed_hash, (n.props or {}).get("pair_hash"))
                  if isinstance(h, str) and h]
        self._timed("similarities", lambda: store.similarities(vector, model, hashes))
        self._timed("nodes", lambda: store.get_nodes(ids[:30]))


class _Stopped(Exception):
    """``close``, or another call of the store, came before the warm-up's next step."""


def sample(store: Any) -> tuple[str, str, str, Any, str] | None:
    """(namespace, kind, model, vector, text) of one searchable node of the store's most common namespace (the
    planner's statistics name it; any namespace when they do not), or None when no node has a searchable vector."""
    row = store._read(
        f"SELECT n.namespace, n.kind, v.model, n.embed_hash, left(n.content, 400) FROM nodes n JOIN vectors v ON "
        f"{store.VECTOR_JOIN} WHERE n.retracted_at IS NULL AND n.namespace = coalesce(("
        "SELECT (s.most_common_vals::text::text[])[1] FROM pg_stats s WHERE s.schemaname = current_schema() AND "
        "s.tablename = 'nodes' AND s.attname = 'namespace'), n.namespace) LIMIT 1", [])
    if not row:
        return None
    namespace, kind, model, embed_hash, text = row[0]
    embed_hash = pg_hash.text(embed_hash)  # bytes from migration 13 (the nodes' hashes as bytes)
    vector = store.get_vectors([embed_hash], model).get(embed_hash)
    return None if vector is None else (namespace, kind, model, vector, text)
