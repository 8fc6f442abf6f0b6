"""Store backends and ``open_store(url)``: the protocol is ``base.Store``, the shared SQL ``sql_base.SQLStore``."""
from __future__ import annotations

from pathlib import Path

from ..errors import ValidationError
from .base import COPY_TABLES, Capability, Store, VectorSearch
from .sqlite import SQLiteStore

__all__ = ["COPY_TABLES", "Capability", "Store", "SQLiteStore", "VectorSearch", "open_store"]


def open_store(url: str | Path) -> Store:
    """Open ``sqlite:///path``, a plain file path, or ``postgresql://...`` (upgrading an older schema)."""
    text = str(url)
    if text.startswith("sqlite:///"):
        return SQLiteStore(text[len("sqlite:///"):])  # sqlite:////abs/path or sqlite:///relative/path
    if text.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore  # optional extra

        return PostgresStore(text)
    if "://" in text:
        raise ValidationError(f"unknown store URL {text!r}; use sqlite:///path or postgresql://...", url=text)
    return SQLiteStore(text)
