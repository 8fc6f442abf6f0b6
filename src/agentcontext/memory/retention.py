"""Retention and the LRU cap of one memory namespace: which memories go, and the record of what went.

Retention compares a memory's ``created_at`` with now; the cap evicts never-touched memories oldest
first, then the least recently used ones (stores, reads and retrievals in this process count as use).
What goes is counted in a store record (``AgentMemory.stats()['evicted']``). ``AgentMemory`` holds
one ``Retention`` and gives it the function that deletes memories.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Sequence

from ..model import utcnow
from ..store.base import Store
from .records import KIND, time_key

EVICTIONS = "memory.evictions"
SWEEP_SECONDS = 30.0  # reads sweep expired memories at most this often (writes always sweep)
PAGE = 500


class Retention:
    """Expiry after ``days`` and eviction above ``max_size`` in ``namespace``; ``purge(ids, reason)`` deletes."""

    def __init__(self, store: Store, namespace: str, days: int | None, max_size: int | None,
                 purge: Callable[[Sequence[str], str], Any], actor: str = "") -> None:
        self.store = store
        self.namespace = namespace
        self.days = days
        self.max_size = max_size
        self.purge = purge
        self.actor = actor
        self._access: dict[str, int] = {}
        self._tick = 0
        self._swept = 0.0
        self._count_estimate: int | None = None
        self._writes_since_count = 0
        self._lock = threading.RLock()

    # --- use -------------------------------------------------------------------------------
    def touch(self, ids: Iterable[str]) -> None:
        """Count ``ids`` as used now (the LRU order)."""
        with self._lock:
            for mid in ids:
                self._tick += 1
                self._access[mid] = self._tick

    def forgotten(self, ids: Iterable[str]) -> None:
        """``ids`` were deleted: drop them from the LRU order and count again at the next write."""
        self._count_estimate = None
        with self._lock:
            for mid in ids:
                self._access.pop(mid, None)

    # --- the record of evictions -----------------------------------------------------------
    def evictions(self) -> dict[str, Any]:
        rec = self.store.get_record(EVICTIONS, self.namespace) or {}
        return {"expired": int(rec.get("expired", 0)), "lru": int(rec.get("lru", 0)),
                "recent": list(rec.get("recent", []))}

    def _record(self, reason: str, ids: list[str]) -> None:
        if not ids:
            return
        rec = self.store.get_record(EVICTIONS, self.namespace) or {"expired": 0, "lru": 0, "recent": []}
        rec[reason] = int(rec.get(reason, 0)) + len(ids)
        rec["recent"] = ([{"id": i, "reason": reason, "at": utcnow()} for i in ids] + list(rec.get("recent", [])))[:50]
        self.store.put_record(EVICTIONS, self.namespace, rec, actor=self.actor)

    # --- expiry and the cap ----------------------------------------------------------------
    def sweep_due(self) -> bool:
        """Whether a read should sweep expired memories (at most every SWEEP_SECONDS)."""
        return self.days is not None and time.monotonic() - self._swept > SWEEP_SECONDS

    def expire(self) -> int:
        """Delete memories created more than ``days`` ago (oldest keys first); returns how many."""
        if self.days is None:
            return 0
        self._swept = time.monotonic()
        cutoff = time_key((datetime.now(timezone.utc) - timedelta(days=self.days)).isoformat())
        find = self.store.find_nodes
        oldest = find(namespace=self.namespace, kind=KIND, order="key", with_content=False, limit=1)
        if not oldest or oldest[0].key >= cutoff:
            return 0
        old: list[str] = []
        while True:
            page = find(namespace=self.namespace, kind=KIND, order="key", with_content=False, offset=len(old),
                        limit=PAGE)
            expired = [n.id for n in page if n.key < cutoff]
            old += expired
            if len(expired) < len(page) or len(page) < PAGE:
                break
        if old:
            self.purge(old, f"retention {self.days} days")
            self._record("expired", old)
        return len(old)

    def enforce(self, added: int = 0) -> None:
        """After writing ``added`` memories: expire by retention, then evict the least recently used above the cap."""
        self.expire()
        if self.max_size is None:
            return
        # An exact COUNT costs O(n); keep an estimate and count for real near the cap or every 1000 writes.
        if (self._count_estimate is None or self._writes_since_count >= 1000
                or self._count_estimate + added >= 0.9 * self.max_size):
            self._count_estimate = self.store.count_nodes(namespace=self.namespace, kind=KIND)
            self._writes_since_count = 0
        else:
            self._count_estimate += added
            self._writes_since_count += 1
        excess = self._count_estimate - self.max_size
        if excess <= 0:
            return
        with self._lock:
            accessed = dict(self._access)
        # Least recently used first: never-touched (oldest first), then by last access in this process.
        pool = self.store.find_nodes(namespace=self.namespace, kind=KIND, order="key", with_content=False,
                                     limit=excess + len(accessed))
        untouched = [n.id for n in pool if n.id not in accessed]
        victims = untouched[:excess]
        if len(victims) < excess:
            victims += sorted(accessed, key=accessed.__getitem__)[: excess - len(victims)]
        self.purge(victims, "lru eviction")
        self._record("lru", victims)
        self._count_estimate = None
