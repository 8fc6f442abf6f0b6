"""A workspace: one store of record, the embedder, and the caches derived from the store."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

from .config import OWNER, resolve_store_url
from .embed.base import MINILM, Embedder, default_embedder
from .store import SQLiteStore, Store, open_store

T = TypeVar("T")


class Workspace:
    """Holds the store and lazily the embedder. Services take a Workspace, never a path."""

    def __init__(self, store: Store, embedder: Embedder | None = None, owner: str = OWNER) -> None:
        self.store = store
        self._embedder = embedder
        self.owner = owner
        self._caches: dict[str, tuple[int, Any]] = {}
        self._lock = threading.RLock()

    @classmethod
    def open(cls, home: str | Path | None = None, url: str | None = None, create: bool = False,
             embedder: Embedder | None = None) -> "Workspace":
        return cls(open_store(url or resolve_store_url(home, create=create)), embedder)

    @classmethod
    def in_memory(cls, embedder: Embedder | None = None) -> "Workspace":
        """A workspace that keeps nothing on disk."""
        return cls(SQLiteStore(":memory:"), embedder)

    @property
    def model_name(self) -> str:
        """The embedding model's name (vectors are keyed by it), without loading the model."""
        return self._embedder.name if self._embedder is not None else MINILM

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def cached(self, name: str, build: Callable[[], T]) -> T:
        """A derived structure rebuilt whenever the store's change counter moves."""
        counter = self.store.change_counter()
        with self._lock:
            hit = self._caches.get(name)
            if hit and hit[0] == counter:
                return hit[1]
        value = build()
        with self._lock:
            self._caches[name] = (counter, value)
        return value

    def peek(self, name: str) -> Any:
        """The cached value if it is still fresh (the change counter has not moved since it was built), else None."""
        counter = self.store.change_counter()
        with self._lock:
            hit = self._caches.get(name)
        return hit[1] if hit and hit[0] == counter else None

    def close(self) -> None:
        self.store.close()
