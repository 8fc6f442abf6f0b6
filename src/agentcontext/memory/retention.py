"""Retention and the LRU cap: which memories go, and the record of what went (``stats()['evicted']``).

Retention compares a memory's ``created_at`` with now; the cap evicts never-touched memories oldest
first, then the least recently used ones (stores, reads and retrievals in this process count as use).
"""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ..model import utcnow
from .records import KIND, time_key

if TYPE_CHECKING:
    from .service import AgentMemory

EVICTIONS = "memory.evictions"


def record_evictions(mem: "AgentMemory", reason: str, ids: list[str]) -> None:
    if not ids:
        return
    rec = mem.db.get_record(EVICTIONS, mem.namespace) or {"expired": 0, "lru": 0, "recent": []}
    rec[reason] = int(rec.get(reason, 0)) + len(ids)
    rec["recent"] = ([{"id": i, "reason": reason, "at": utcnow()} for i in ids] + list(rec.get("recent", [])))[:50]
    mem.db.put_record(EVICTIONS, mem.namespace, rec, actor=mem.actor)


def expire(mem: "AgentMemory") -> int:
    """Delete memories created more than ``retention_days`` ago (oldest keys first)."""
    if mem.retention_days is None:
        return 0
    mem._swept = time.monotonic()
    cutoff = time_key((datetime.now(timezone.utc) - timedelta(days=mem.retention_days)).isoformat())
    oldest = mem.db.find_nodes(namespace=mem.namespace, kind=KIND, order="key", with_content=False, limit=1)
    if not oldest or oldest[0].key >= cutoff:
        return 0
    old: list[str] = []
    while True:
        page = mem.db.find_nodes(namespace=mem.namespace, kind=KIND, order="key", with_content=False,
                                 offset=len(old), limit=500)
        expired = [n.id for n in page if n.key < cutoff]
        old += expired
        if len(expired) < len(page) or len(page) < 500:
            break
    if old:
        mem._purge(old, f"retention {mem.retention_days} days")
        record_evictions(mem, "expired", old)
    return len(old)


def enforce_limits(mem: "AgentMemory", added: int = 0) -> None:
    """Expire by retention, then evict least-recently-used memories above the cap."""
    expire(mem)
    if mem.max_memory_size is None:
        return
    # An exact COUNT costs O(n); keep an estimate and count for real near the cap or every 1000 writes.
    if (mem._count_estimate is None or mem._writes_since_count >= 1000
            or mem._count_estimate + added >= 0.9 * mem.max_memory_size):
        mem._count_estimate = mem.count()
        mem._writes_since_count = 0
    else:
        mem._count_estimate += added
        mem._writes_since_count += 1
    excess = mem._count_estimate - mem.max_memory_size
    if excess <= 0:
        return
    with mem._lock:
        accessed = dict(mem._access)
    # Least recently used first: never-touched (oldest first), then by last access in this process.
    pool = mem.db.find_nodes(namespace=mem.namespace, kind=KIND, order="key", with_content=False,
                             limit=excess + len(accessed))
    untouched = [n.id for n in pool if n.id not in accessed]
    victims = untouched[:excess]
    if len(victims) < excess:
        victims += sorted(accessed, key=accessed.__getitem__)[: excess - len(victims)]
    mem._purge(victims, "lru eviction")
    record_evictions(mem, "lru", victims)
    mem._count_estimate = None
