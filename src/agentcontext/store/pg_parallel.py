"""Reads ahead on a second connection: a PostgreSQL retrieve's independent stages at the same time (issue 23 s3).

The store holds one connection under a lock, and a read on it keeps the client waiting while the server works (on a
2-core machine the other core idles). ``ReadAhead`` gives the store a second connection, opened lazily on a worker
thread of its own the first time a read is started ahead (``PostgresStore.read_ahead``), so the ranking can ask the
dense pool while the text search runs (memory/server_gather.py). The second connection is a store of its own on the
same conninfo, schema and role (``opener``, as the background fold opens one): it sees what is committed, so only reads
outside a transaction go there; inside ``store.transaction()`` a read started ahead runs on the main connection when
its answer is asked (it must see the transaction's writes). It closes with the store. A failure there reaches the
caller as a ``StoreError`` when the answer is asked, never a hang: the worker runs one read at a time and the
connection has the store's timeouts.
"""
from __future__ import annotations

import threading
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any, Callable

from ..errors import AgentContextError, StoreError


def read_ahead(store: Any, read: Callable[[Any], Any]) -> Pending:
    """Start ``read(store)`` (reads only) on ``store``'s second connection (``store._ahead``) and go on; its answer
    comes from ``result()``. Inside a transaction (whose writes it must see), or where reads do not leave the main
    connection (``store.READ_AHEAD`` false), ``read(store)`` runs on the main connection when ``result()`` asks."""
    if store._depth or not store.READ_AHEAD:
        return Pending(later=lambda: read(store))
    return store._ahead.start(read)


class Pending:
    """A read's answer, asked with ``result()``: from the worker (a future), or read then on the main connection."""

    def __init__(self, future: Future | None = None, later: Callable[[], Any] | None = None, url: str = "") -> None:
        self._future, self._later, self._url = future, later, url

    def running(self) -> bool:
        """Whether the read is still in flight (queued or running) on the second connection: False once answered, and
        for a read that runs on the main connection when ``result()`` asks."""
        return self._future is not None and not self._future.done()

    def result(self) -> Any:
        if self._future is None:
            assert self._later is not None
            return self._later()
        try:
            return self._future.result()
        except CancelledError as exc:  # queued behind a read when the store closed
            raise StoreError(f"the store at {self._url} was closed before this read ran; open it again to read",
                             url=self._url) from exc


class ReadAhead:
    """A second connection (``opener()`` opens a store on it) and the one worker thread that reads on it."""

    def __init__(self, opener: Callable[[bool], Any], url: str) -> None:
        self._opener, self._url = opener, url
        self._store: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def opened(self) -> bool:
        """Whether the second connection is open (tests; it opens on the first read started ahead)."""
        return self._store is not None and not self._store._closed

    def start(self, read: Callable[[Any], Any], warm_up: bool = False) -> Pending:
        """Start ``read(store)`` on the second connection's store (opened first if need be; ``warm_up``: with its
        first search run in the background, pg_warmup.py)."""
        with self._lock:
            if self._closed:
                raise StoreError(f"the store at {self._url} is closed; open it again to read", url=self._url)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="agentcontext-read-ahead")
            return Pending(self._pool.submit(self._run, read, warm_up), url=self._url)

    def open_soon(self) -> None:
        """Open the second connection now, in the background, its backend warmed like the main one (a store whose
        main connection warms up: so a process's first query does not wait for either)."""
        self.start(lambda store: None, warm_up=True)

    def _run(self, read: Callable[[Any], Any], warm_up: bool = False) -> Any:
        try:
            if self._store is None:
                self._store = self._opener(warm_up)
            return read(self._store)
        except AgentContextError:
            raise
        except Exception as exc:  # psycopg's errors (a lost server, a statement refused) as ours, with what to do
            raise StoreError(f"a read on the store's second connection failed: {exc}; check that the server at "
                             f"{self._url} runs, then ask again", url=self._url) from exc

    def close(self) -> None:
        """Close the second connection once its current read ends (reads queued behind it are dropped)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if self._store is not None:
            self._store.close()
