"""A workspace: one store of record, the embedder, and the one cache API for what is derived from the store.

Every derived structure (a vector index, an adjacency, a pack view, analytics, query embeddings) is
cached through these methods and nowhere else (no module-level caches, no ``__dict__`` tricks):

- ``cached(name, build)``: a value bound to the store's change counter; rebuilt by ``build()`` on the
  first use after the counter moves; ``cached(name, build, namespace=ns)`` keeps a structure of one
  namespace's nodes and edges while only other namespaces change. ``peek(name)`` returns it only while fresh.
- ``live(name, refresh)``: a live object that follows the change log (a vector index catching up from
  ``store.changes_since``). ``refresh(current)`` gets the held object (None the first time) and returns
  it brought up to date, caught up in place or rebuilt; calls for one name are serialised.
- ``held(name, create)``: an object kept for the workspace's lifetime that does not depend on the
  counter (a cache keyed by content hash, a bounded LRU of query embeddings).
- ``embed_query(text)``: a query's embedding, from a bounded LRU (queries are never written to the store).
- ``drop_caches(prefix)``: forget derived structures (the next use rebuilds them, as a new process would):
  the index files persisted beside the store (``index_files``, ``engine/snapshot.py``) are zeroed and removed too.

Names are namespaced by their owner (``"memory:<namespace>"``, ``"graph[...]:csr"``, ``"pack:..."``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from .config import OWNER, resolve_store_url
from .embed.base import MINILM, Embedder, default_embedder
from .embed.choice import choose, recorded_model
from .embed.models import QueryEmbedder, load_model, spec_of
from .engine.snapshot import IndexFiles
from .store import SQLiteStore, Store, open_store

T = TypeVar("T")
QUERY_VECTORS = 512  # distinct query embeddings remembered per workspace
INDEX_FOLDER = "indexes"  # beside the store file: derived indexes persisted for the next process
NAMESPACE_SCAN = 5000  # cached(namespace=) reads at most this many changes to see whether one namespace was touched
_PLACED_OPS = ("node.put", "node.retract", "node.purge", "edges.put")  # the log names their one namespace


class Workspace:
    """Holds the store and lazily the embedder. Services take a Workspace, never a path."""

    def __init__(self, store: Store, embedder: Embedder | None = None, owner: str = OWNER,
                 embedding_model: str | None = None) -> None:
        """``embedding_model``: a registered model's name (embed/models.py), loaded when first needed; an
        ``embedder`` passed in wins. ``open``/``in_memory`` choose it from the store's record (embed/choice.py)."""
        self.store = store
        self._embedder = embedder
        self._model = spec_of(embedding_model).name if embedding_model and embedder is None else None
        self._model_known = embedder is not None or embedding_model is not None  # else: the store's record, read once
        self.owner = owner
        self._caches: dict[str, tuple[int, Any]] = {}
        self._live: dict[str, Any] = {}
        self._live_locks: dict[str, threading.RLock] = {}
        self._held: dict[str, Any] = {}
        self._queries: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.RLock()
        on_disk = isinstance(store, SQLiteStore) and not store.in_memory
        self.index_files = IndexFiles(store.path.parent / INDEX_FOLDER if on_disk else None, store)

    @classmethod
    def open(cls, home: str | Path | None = None, url: str | None = None, create: bool = False,
             embedder: Embedder | None = None, *, replicas: str | Sequence[str] | None = None,
             max_lag: float | None = None, max_lag_bytes: int | None = None,
             shards: str | dict[str, str] | None = None, embedding_model: str | None = None) -> "Workspace":
        """The workspace at ``url`` (or found from ``home``, the environment, the current folder); ``replicas``,
        ``max_lag``, ``max_lag_bytes``: read replicas of a PostgreSQL primary; ``shards``: tenants on several
        PostgreSQL servers, ``NAME=URL,...`` or a mapping (``store.open_store``); ``embedding_model``: a registered
        model (embed/models.py); the workspace keeps the one it was built with (embed/choice.py: another is refused,
        ``embed.choice.move_model`` moves it)."""
        if shards is not None:
            return cls._chosen(open_store("", replicas, max_lag, max_lag_bytes, shards=shards), embedder,
                               embedding_model)
        store = open_store(url or resolve_store_url(home, create=create), replicas, max_lag, max_lag_bytes)
        return cls._chosen(store, embedder, embedding_model)

    @classmethod
    def in_memory(cls, embedder: Embedder | None = None, embedding_model: str | None = None) -> "Workspace":
        """A workspace that keeps nothing on disk."""
        return cls._chosen(SQLiteStore(":memory:"), embedder, embedding_model)

    @classmethod
    def _chosen(cls, store: Store, embedder: Embedder | None, embedding_model: str | None) -> "Workspace":
        if embedder is not None:
            return cls(store, embedder)
        try:
            ws = cls(store, None, embedding_model=choose(store, embedding_model))
            ws._model_known = True
            return ws
        except BaseException:
            store.close()
            raise

    @property
    def model_name(self) -> str:
        """The embedding model's name (vectors are keyed by it), without loading the model."""
        if self._embedder is not None:
            return self._embedder.name
        if not self._model_known:  # made on a store directly (Workspace(store)): the model the store records
            recorded = recorded_model(self.store)
            self._model = None if recorded in (None, MINILM) else recorded
            self._model_known = True
        return self._model or MINILM

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self.model_name  # noqa: B018 - resolves the recorded model
            self._embedder = load_model(self._model) if self._model else default_embedder()  # type: ignore[assignment]
        return self._embedder  # type: ignore[return-value]

    def use_embedder(self, embedder: Embedder | None, model: str | None = None) -> None:
        """Switch to ``embedder`` (or the registered ``model``, or the default): derived structures are dropped."""
        self._embedder, self._model = embedder, (spec_of(model).name if model and embedder is None else None)
        self._model_known = True
        self.drop_caches()

    def cached(self, name: str, build: Callable[[], T], namespace: str | None = None) -> T:
        """A derived structure rebuilt whenever the store's change counter moves.

        With ``namespace``, for a structure built only from the nodes and edges of that namespace (a pack's
        view): it is kept while the change log since it was built names only other namespaces' nodes and
        edges, vectors or records, so storing a memory does not rebuild a 100,000-doc pack's view. Any change
        the log does not place in a namespace (a retraction of edges, tombstones, a history purge), a counter
        gone backwards or more than ``NAMESPACE_SCAN`` changes rebuild it."""
        counter = self.store.change_counter()
        with self._lock:
            hit = self._caches.get(name)
        if hit and (hit[0] == counter or (namespace is not None and self._elsewhere(namespace, hit[0], counter))):
            with self._lock:
                self._caches[name] = (counter, hit[1])
            return hit[1]
        value = build()
        with self._lock:
            self._caches[name] = (counter, value)
        return value

    def _elsewhere(self, namespace: str, since: int, counter: int) -> bool:
        """True when every change after ``since`` (up to ``counter``) is known to leave ``namespace``'s nodes and
        edges as they were."""
        if not since < counter <= since + NAMESPACE_SCAN:
            return False
        for change in self.store.changes_since(since, limit=NAMESPACE_SCAN):
            if change.seq > counter:
                break
            if change.op.startswith(("vectors.", "record.")):
                continue
            if change.op in _PLACED_OPS and change.namespace and change.namespace != namespace:
                continue
            return False
        return True

    def peek(self, name: str) -> Any:
        """The cached value if it is still fresh (the change counter has not moved since it was built), else None."""
        counter = self.store.change_counter()
        with self._lock:
            hit = self._caches.get(name)
        return hit[1] if hit and hit[0] == counter else None

    def live(self, name: str, refresh: Callable[[T | None], T]) -> T:
        """A live object following the change log: ``refresh(current)`` returns it up to date (see the module doc)."""
        with self._lock:
            lock = self._live_locks.setdefault(name, threading.RLock())
        with lock:
            value = refresh(self._live.get(name))
            self._live[name] = value
            return value

    def held(self, name: str, create: Callable[[], T]) -> T:
        """An object kept for this workspace's lifetime, created on first use."""
        with self._lock:
            value = self._held.get(name)
            if value is None:
                value = self._held[name] = create()
            return value

    def embed_query(self, text: str) -> Any:
        """The embedding of a query text, remembered for the last ``QUERY_VECTORS`` distinct queries."""
        key = (self.model_name, text)
        with self._lock:
            vec = self._queries.get(key)
            if vec is not None:
                self._queries.move_to_end(key)
                return vec
        embedder = self.embedder  # a model that embeds queries apart (e5's "query: " prefix) says so: QueryEmbedder
        vec = embedder.embed_query(text) if isinstance(embedder, QueryEmbedder) else embedder.embed([text])[0]
        with self._lock:
            self._queries[key] = vec
            while len(self._queries) > QUERY_VECTORS:
                self._queries.popitem(last=False)
        return vec

    def drop_caches(self, prefix: str = "") -> None:
        """Forget every derived structure whose name starts with ``prefix`` (all of them by default)."""
        with self._lock:
            for table in (self._caches, self._live, self._held):
                for name in [n for n in table if n.startswith(prefix)]:
                    del table[name]
            if not prefix:
                self._queries.clear()
        self.index_files.scrub(prefix)  # outside the lock: it waits for the indexes folder's lock (engine/snapshot.py)

    def close(self) -> None:
        """Close the store once the index files being saved on their threads are written."""
        self.index_files.wait()
        self.store.close()
