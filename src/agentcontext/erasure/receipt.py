"""``ErasureReceipt``: what each store did, what else names the entity, where copies went, what may physically
remain. Safe to persist: it holds ids, counts, paths and statuses, never erased content."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("erased", "not_found", "not_configured", "unsupported", "failed")
LEGS = ("vectors", "memory", "decisions", "mentions", "checkpoints", "audit", "graph")
FAILING = ("unsupported", "failed")
PHYSICAL_OK = ("clean", "not_configured")


@dataclass
class ErasureReceipt:
    entity_id: str
    reason: str | None
    erased_at: str
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    mentions: list[dict[str, Any]] = field(default_factory=list)
    """Records naming the entity without being part of it: memories and ``lib:`` docs (erased with
    ``erase_mentions=True``), ``pkg:`` docs (read-only: listed, never changed), decisions and graph nodes."""
    external_copies: list[dict[str, Any]] = field(default_factory=list)
    """Exports and saves the library wrote that may hold the erased records: delete them out of band."""
    physical: dict[str, Any] = field(default_factory=lambda: {"status": "not_configured"})
    """What was done to the store's files and what may still hold the bytes (``may_remain``)."""
    audit: list[dict[str, Any]] = field(default_factory=list)  # where the receipt was logged

    @property
    def complete(self) -> bool:
        return not self.incomplete_stores

    @property
    def incomplete_stores(self) -> list[str]:
        legs = [name for name in LEGS if self.stores.get(name, {}).get("status") in FAILING]
        if self.physical.get("status") not in PHYSICAL_OK:
            legs.append("physical")
        return legs

    def to_dict(self) -> dict[str, Any]:
        return {"entity_id": self.entity_id, "reason": self.reason, "erased_at": self.erased_at,
                "complete": self.complete, "incomplete_stores": self.incomplete_stores,
                "stores": {k: dict(v) for k, v in self.stores.items()},
                "mentions": [dict(m) for m in self.mentions],
                "external_copies": [dict(c) for c in self.external_copies], "physical": dict(self.physical)}
