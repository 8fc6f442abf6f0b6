"""Where the workspace lives: explicit home (``--home``) > ``AGENTCONTEXT_URL`` > ``AGENTCONTEXT_HOME`` > the
nearest ``.agentcontext/`` found upward from the current directory. ``AGENTCONTEXT_REPLICA_URLS`` (comma-separated)
names read replicas of the PostgreSQL primary ``AGENTCONTEXT_URL`` names (``store/pg_replicas.py``), with
``AGENTCONTEXT_REPLICA_MAX_LAG`` (seconds) and ``AGENTCONTEXT_REPLICA_MAX_LAG_BYTES`` bounding their lag.
``AGENTCONTEXT_SHARD_URLS`` (``NAME=URL,...``), when ``AGENTCONTEXT_URL`` is unset, names the PostgreSQL servers
tenants are sharded over (``store/pg_shards.py``): the store URL is then ``shards:`` followed by that list."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import NotFoundError, ValidationError

HOME_DIR = ".agentcontext"
STORE_FILE = "store.db"
OWNER = "owner"


def find_home(start: str | Path | None = None) -> Path | None:
    """The nearest ``.agentcontext/`` folder at or above ``start`` (like git), or None."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / HOME_DIR
        if candidate.is_dir():
            return candidate
    return None


SHARDS_SCHEME = "shards:"  # a store URL naming several PostgreSQL shards: shards:a=postgresql://...,b=...


def resolve_store_url(home: str | Path | None = None, create: bool = False) -> str:
    """The store URL to open, following the precedence above; ``create`` makes a home in the cwd."""
    url = os.environ.get("AGENTCONTEXT_URL")
    if url and home is None:
        return url
    if os.environ.get("AGENTCONTEXT_SHARD_URLS", "").strip() and home is None:
        return SHARDS_SCHEME + os.environ["AGENTCONTEXT_SHARD_URLS"].strip()
    chosen = Path(home) if home else (Path(os.environ["AGENTCONTEXT_HOME"]) if os.environ.get("AGENTCONTEXT_HOME")
                                      else find_home())
    if chosen is None:
        if not create:
            raise NotFoundError("no agentcontext workspace here or above; run `agentcontext init` or set "
                                "AGENTCONTEXT_HOME", cwd=str(Path.cwd()))
        chosen = Path.cwd() / HOME_DIR
    if create:
        chosen.mkdir(parents=True, exist_ok=True)
    elif not chosen.is_dir():
        raise NotFoundError(f"workspace folder {chosen} does not exist; run `agentcontext init` there",
                            home=str(chosen))
    return f"sqlite:///{(chosen / STORE_FILE).resolve()}"


def replica_settings(url: str) -> tuple[str | None, float | None, int | None]:
    """(``AGENTCONTEXT_REPLICA_URLS``, max lag in seconds, in bytes) from the environment when ``url`` is the
    primary ``AGENTCONTEXT_URL`` names (the replicas are that server's), else (None, None, None)."""
    if not os.environ.get("AGENTCONTEXT_REPLICA_URLS") or str(url) != os.environ.get("AGENTCONTEXT_URL"):
        return None, None, None
    return (os.environ["AGENTCONTEXT_REPLICA_URLS"], _number("AGENTCONTEXT_REPLICA_MAX_LAG", float),
            _number("AGENTCONTEXT_REPLICA_MAX_LAG_BYTES", int))


def shard_replica_settings(max_lag: float | None = None,
                           max_lag_bytes: int | None = None) -> tuple[str | None, float | None, int | None]:
    """(``AGENTCONTEXT_SHARD_REPLICA_URLS``: ``SHARD=URL|URL,...``, max lag in seconds, in bytes) for a sharded store:
    the lag bounds given, else ``AGENTCONTEXT_REPLICA_MAX_LAG`` and ``..._MAX_LAG_BYTES``."""
    urls = os.environ.get("AGENTCONTEXT_SHARD_REPLICA_URLS") or None
    if urls is None:
        return None, max_lag, max_lag_bytes
    return (urls, _number("AGENTCONTEXT_REPLICA_MAX_LAG", float) if max_lag is None else max_lag,
            _number("AGENTCONTEXT_REPLICA_MAX_LAG_BYTES", int) if max_lag_bytes is None else max_lag_bytes)


def replica_env(url: str) -> dict[str, str]:
    """The replica variables of the environment that go with ``url`` (for a server started elsewhere)."""
    if replica_settings(url)[0] is None:
        return {}
    names = ("AGENTCONTEXT_REPLICA_URLS", "AGENTCONTEXT_REPLICA_MAX_LAG", "AGENTCONTEXT_REPLICA_MAX_LAG_BYTES")
    return {name: os.environ[name] for name in names if os.environ.get(name)}


def _number(name: str, kind: type) -> Any:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ValidationError(f"{name}={text!r} is not a number; give "
                              + ("seconds, e.g. 5 or 0.5" if kind is float else "bytes, e.g. 16777216"),
                              name=name) from None
