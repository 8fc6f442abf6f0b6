"""Store backends and ``open_store(url)``: the protocol is ``base.Store``, the shared SQL ``sql_base.SQLStore``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import SHARDS_SCHEME, replica_settings, shard_replica_settings
from ..errors import NotFoundError, ValidationError
from .base import COPY_TABLES, Capability, Store, VectorDelta, VectorSearch
from .sqlite import SQLiteStore

__all__ = ["COPY_TABLES", "Capability", "Store", "SQLiteStore", "VectorDelta", "VectorSearch", "open_store",
           "require_existing"]


def open_store(url: str | Path, replicas: str | Sequence[str] | Mapping[str, Any] | None = None,
               max_lag: float | None = None,
               max_lag_bytes: int | None = None, shards: str | Mapping[str, str] | None = None) -> Store:
    """Open ``sqlite:///path``, a plain file path, ``postgresql://...`` (upgrading an older schema), or tenants on
    several PostgreSQL servers: ``shards:a=postgresql://...,b=postgresql://...`` (``store/pg_shards.py``; the
    ``shards`` argument, ``NAME=URL,...`` or a mapping, gives them instead of ``url``).

    ``replicas``: URLs (a list, or comma-separated) of read replicas of a PostgreSQL primary; reads go to one that
    has replayed this store's writes (``store/pg_replicas.py``), unless it lags more than ``max_lag`` seconds
    (default 5) or ``max_lag_bytes`` of WAL. None: ``AGENTCONTEXT_REPLICA_URLS`` (and ``AGENTCONTEXT_REPLICA_MAX_LAG``,
    ``..._MAX_LAG_BYTES``) when ``url`` is the one ``AGENTCONTEXT_URL`` names; ``[]``: none."""
    text = str(url)
    if shards is not None or text.startswith(SHARDS_SCHEME):
        if replicas is None:
            replicas, max_lag, max_lag_bytes = shard_replica_settings(max_lag, max_lag_bytes)
        if replicas and not isinstance(replicas, Mapping) and not (isinstance(replicas, str) and "=" in replicas):
            raise ValidationError("read replicas of shards are named by shard: give them as SHARD=URL|URL,... "
                                  "(AGENTCONTEXT_SHARD_REPLICA_URLS=\"b=postgresql://replica-of-b/db\") or a "
                                  "{shard: [url, ...]} mapping, not a plain list", url=text)
        from .pg_shards import ShardedStore  # optional extra

        return ShardedStore(shards if shards is not None else text[len(SHARDS_SCHEME):], replicas=replicas or None,
                            max_lag=max_lag, max_lag_bytes=max_lag_bytes)
    if replicas is None:
        replicas, env_lag, env_bytes = replica_settings(text)
        max_lag = env_lag if max_lag is None else max_lag
        max_lag_bytes = env_bytes if max_lag_bytes is None else max_lag_bytes
    if replicas and not text.startswith(("postgresql://", "postgres://")):
        raise ValidationError(f"read replicas need a PostgreSQL primary, but the store URL is {text!r}; set the "
                              "store URL (AGENTCONTEXT_URL) to the primary's postgresql://... URL, or give no "
                              "replicas (unset AGENTCONTEXT_REPLICA_URLS)", url=text)
    if replicas:
        from .pg_replicas import DEFAULT_MAX_LAG, ReplicatedPostgresStore, replica_urls  # optional extra

        urls = replica_urls(replicas)
        if urls:
            return ReplicatedPostgresStore(text, urls, DEFAULT_MAX_LAG if max_lag is None else max_lag,
                                           max_lag_bytes)
    if text.startswith("sqlite:///"):
        return SQLiteStore(text[len("sqlite:///"):])  # sqlite:////abs/path or sqlite:///relative/path
    if text.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore  # optional extra

        return PostgresStore(text)
    if "://" in text:
        raise ValidationError(f"unknown store URL {text!r}; use sqlite:///path or postgresql://...", url=text)
    return SQLiteStore(text)


def require_existing(url: str | Path) -> None:
    """Raise ``NotFoundError`` unless a store already exists at ``url`` (a SQLite file, or a PostgreSQL schema that
    holds our tables); checks without opening, so a store that is missing is never created."""
    text = str(url)
    if text.startswith(SHARDS_SCHEME):
        return  # a sharded store's directory shard is made when it is opened
    if text.startswith(("postgresql://", "postgres://")):
        from .pg_sql import redact
        from .postgres import schema_exists  # optional extra

        if not schema_exists(text):
            safe = redact(text)
            raise NotFoundError(f"the store {safe} does not exist (no agentcontext tables in that database and "
                                "schema); check the URL and its ?schema=", url=safe)
        return
    if "://" in text and not text.startswith("sqlite:///"):
        return  # open_store names what is wrong with the URL
    path = Path(text[len("sqlite:///"):] if text.startswith("sqlite:///") else text)
    if not path.is_file():
        raise NotFoundError(f"the store {path} does not exist; check the path (a new store is made only as a "
                            "destination)", url=text)
