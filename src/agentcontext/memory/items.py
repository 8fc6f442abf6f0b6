"""Checks of a batch's items (``AgentMemory.batch_store``): one bad item refuses the whole batch, named by its
position (and its id when the caller chose one), before anything of the batch is written."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ValidationError


def item_name(seq: int, item: dict[str, Any]) -> str:
    """How an error names an item of a batch: its position, and its id when the caller chose one."""
    return f"memory {seq}" + (f" (id {str(item['id'])[:80]!r})" if item.get("id") else "")


def supplied_in_full(item: dict[str, Any]) -> bool:
    """Whether an item brings every vector it may need (its own, and its context vector if it has a conversation)."""
    return item.get("vector", item.get("embedding")) is not None and (
        item.get("conversation_id") is None or item.get("context_vector") is not None)


def refuse_not_finite(items: list[dict[str, Any]], supplied: dict[str, np.ndarray]) -> None:
    """ValidationError naming the first item whose vector or context vector holds NaN or infinity (the vectors
    ``supplied``, all of one shape, are checked at once, as one matrix)."""
    if not supplied or np.isfinite(np.stack(list(supplied.values()))).all():
        return
    for seq, item in enumerate(items):
        for name in ("vector", "embedding", "context_vector"):
            value = item.get(name)
            if value is not None and not np.isfinite(np.asarray(value, dtype=np.float32)).all():
                raise ValidationError(f"{item_name(seq, item)}: {name} holds NaN or infinity; only finite values can "
                                      "be stored; nothing of this batch was stored", index=seq, field=name)
