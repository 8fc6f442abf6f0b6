"""A new connection's first search, run at open in the background, so a process's first query does not pay it.

A new server backend pays for its first statements beyond what they cost afterwards: it maps each shared buffer it
touches for the first time (at 1,000,000 memories ~5,000 minor page faults, ~25-40 ms of backend CPU for a first
retrieve whose pages are all in the buffers already), fills its catalog caches and the text search configuration;
the client pays the first call of each code path (psycopg's adapters for the types a search sends and reads, our
query builders). ``WarmUp`` runs the store's own search calls once on the store's connection, with a sample of the
store's data (a memory of its most common namespace: its vector, a few of its words, its neighbours), in a daemon
thread that holds the store's lock while it runs: the process meanwhile loads its embedding model (half a second
and more), so the warm-up costs a new process no time from its start, and a first query asked before it ends waits
for it (never runs beside it). Only stores whose search indexes are large enough to be prewarmed
(``pg_prewarm.MIN_BLOCKS``) are warmed: a small one's first query is fast anyway.

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

from ..errors import AgentContextError

# what the memory search asks (memory/server_search.py): pools of this size, the props its linked reads bring
POOL, TEXT_POOL, LARGE = 100, 150, 20000
FIELDS = ("prev", "pair_hash", "created_at", "conversation_id", "user_id")
WORDS = 4  # words of the sample's text searched
_WORD = re.compile(r"[^\W\d_]{4,}")


@dataclass
class WarmUpReport:
    """What the warm-up did: each step's milliseconds, the backend it warmed, why it did not run, or the step that
    failed and its error. ``wait`` blocks until it has ended (at once when it never started)."""

    steps: dict[str, float] = field(default_factory=dict)
    skipped: str | None = None
    failed: str | None = None
    backend_pid: int | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)


class WarmUp:
    """The store's search calls run once on its connection, in a thread (module doc)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.report = WarmUpReport()
        self._stop = threading.Event()
        self._running = False
        self._thread: threading.Thread | None = None

    def skip(self, reason: str) -> WarmUpReport:
        self.report.skipped = reason
        self.report.done.set()
        return self.report

    def start(self) -> WarmUpReport:
        """Start the warm-up in a daemon thread; the store's lock is taken before this returns, so any call of the
        store made after the open runs after the warm-up."""
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
                self.store._db.cancel_safe(timeout=timeout)
            except (psycopg.Error, AttributeError):  # a connection already closed, or a psycopg before cancel_safe
                pass
        self._thread.join(timeout)

    def _run(self, taken: threading.Event) -> None:
        store, report = self.store, self.report
        try:
            with store._lock:
                taken.set()
                self._running = True
                report.backend_pid = store._db.info.backend_pid
                self._steps()
        except (psycopg.Error, AgentContextError) as exc:  # reported, never raised: the open has returned
            report.failed = f"{self._step}: {type(exc).__name__}: {str(exc).strip()}"
            if self._stop.is_set():
                report.failed = f"stopped by close during {self._step}"
        finally:
            self._running = False
            taken.set()
            report.done.set()

    _step = "sample"

    def _timed(self, name: str, fn: Any) -> Any:
        if self._stop.is_set():
            raise _Stopped()
        self._step = name
        t = time.perf_counter()
        out = fn()
        self.report.steps[name] = round((time.perf_counter() - t) * 1000, 1)
        return out

    def _steps(self) -> None:
        try:
            self._search()
        except _Stopped:
            self.report.failed = f"stopped by close before {self._step}"

    def _search(self) -> None:
        store = self.store
        found = self._timed("sample", lambda: sample(store))
        if found is None:
            self.report.skipped = "no node with a vector to search with"
            return
        namespace, kind, model, vector, text = found
        near = self._timed("nearest", lambda: store.nearest(vector, model, POOL, namespace=namespace, kind=kind))
        words = " ".join(dict.fromkeys(w.lower() for w in _WORD.findall(text or "")))
        words = " ".join(words.split()[:WORDS])
        hits = self._timed("text", lambda: store.text_search(words, namespace=namespace, kind=kind,
                                                             limit=TEXT_POOL)) if words else []
        if words:
            self._timed("term_counts", lambda: store.term_counts(words, namespace=namespace))
        self._timed("size", lambda: store.holds_at_least(LARGE, namespace, kind))
        ids = list(dict.fromkeys([i for i, _ in near] + [i for i, _ in hits]))
        named, followers = self._timed("linked", lambda: store.nodes_linked(ids, "prev", namespace, kind,
                                                                            fields=FIELDS))
        self._timed("naming", lambda: store.nodes_naming("prev", ids[:20], namespace=namespace, kind=kind))
        hashes = [h for n in [*named.values(), *followers] for h in (n.embed_hash, (n.props or {}).get("pair_hash"))
                  if isinstance(h, str) and h]
        self._timed("similarities", lambda: store.similarities(vector, model, hashes))
        self._timed("nodes", lambda: store.get_nodes(ids[:30]))


class _Stopped(Exception):
    """``close`` asked the warm-up to stop between two steps."""


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
    vector = store.get_vectors([embed_hash], model).get(embed_hash)
    return None if vector is None else (namespace, kind, model, vector, text)
