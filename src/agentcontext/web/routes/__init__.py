"""The console's pages, one module per group: packs, docs, memory, decisions, audit."""
from __future__ import annotations

from typing import Any, Mapping

from ...errors import ValidationError


def int_param(params: Mapping[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    """An optional integer query or form field within [low, high]; a malformed one is a ValidationError."""
    raw = params.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValidationError(f"{name} must be a whole number, got {str(raw)[:40]!r}") from None
    if not low <= value <= high:
        raise ValidationError(f"{name} must be from {low} to {high}, got {value}")
    return value


def text_param(params: Mapping[str, Any], name: str) -> str | None:
    raw = params.get(name)
    text = str(raw).strip() if raw is not None else ""
    return text or None
