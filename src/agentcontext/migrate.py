"""``migrate``: copy a whole workspace from one store to another (SQLite <-> PostgreSQL, or schema to schema),
losslessly: nodes with every version, edges with every interval, vectors, tombstones, records (grants, tokens as
their hashes, pack and chain records), the audit log and the change log, values and sequence numbers as they are;
vectors at the precision the destination holds them in (``VECTOR_DTYPE``: PostgreSQL keeps float16, halfvec, so a
copy from SQLite rounds them, and both digests are taken at the coarser of the two precisions).

The destination must be empty (a fresh file or schema); the copy is one transaction there, so a copy that fails
or is killed leaves the destination as empty as it was. Both stores' content digests (``content_digest``: one
SHA-256 per table over its rows in copy order, backend-neutral) are computed at the end and must be equal. On a
multi-user workspace only the owner or an admin of ``*`` may copy it: a copy holds every namespace.
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Callable, Iterator

import numpy as np

from . import access
from .errors import ValidationError
from .store import Store, open_store, require_existing
from .store.base import COPY_TABLES, Sharded
from .workspace import Workspace

Progress = Callable[[str, int, int], None]


def _canonical(row: dict[str, Any], precision: type = np.float32) -> bytes:
    out = {}
    for k, v in row.items():
        if isinstance(v, np.ndarray):
            v = np.asarray(v, dtype=np.float32).astype(precision).astype("<f4").tobytes().hex()
        out[k] = v
    return json.dumps(out, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def coarser(a: Store, b: Store) -> type:
    """The less precise of two stores' vector precisions (``VECTOR_DTYPE``): what a copy between them keeps."""
    dtypes = [s.VECTOR_DTYPE for s in (a, b)]  # every Store declares it (store.base.Store)
    return min(dtypes, key=lambda d: np.finfo(d).bits)


def content_digest(store: Store, precision: type = np.float32) -> dict[str, Any]:
    """{table: {"rows": n, "sha256": hex}} over every row a copy carries, whatever order a store pages them in (the
    SHA-256 of the rows' own digests, sorted: a sharded store pages shard by shard); equal for two stores holding the
    same content whatever their backends. Vectors are digested rounded to ``precision`` (``coarser``)."""
    out: dict[str, Any] = {}
    for table in COPY_TABLES:
        rows_seen: list[bytes] = []
        after = None
        while True:
            rows, after = store.export_rows(table, after)
            rows_seen.extend(hashlib.sha256(_canonical(row, precision)).digest() for row in rows)
            if after is None:
                break
        digest = hashlib.sha256()
        for row_digest in sorted(rows_seen):
            digest.update(row_digest)
        out[table] = {"rows": len(rows_seen), "sha256": digest.hexdigest()}
    return out


def _empty(store: Store) -> bool:
    counts = store.info()["counts"]
    return not any(counts[k] for k in ("nodes", "retracted_nodes", "node_versions", "edge_intervals", "vectors",
                                       "tombstones", "records", "audit", "changes"))


def migrate(source: str, destination: str, principal: str | None = None,
            progress: Progress | None = None) -> dict[str, Any]:
    """Copy the workspace at ``source`` (a store URL or path) into the empty store at ``destination``; returns what
    was copied, both digests and whether they are equal (a ``ValidationError`` names the first table that
    differs)."""
    start = time.perf_counter()
    require_existing(source)  # a missing source is an error, never an empty store made on the way
    src = open_store(source)
    try:
        if not access.is_superadmin(Workspace(src), principal):
            raise access.deny(Workspace(src), principal, "store.migrate", "store", "admin", "*",
                              hint="only the owner or an admin of `*` may copy the whole store")
        dst = open_store(destination)
        try:
            if src.url == dst.url:
                raise ValidationError("source and destination are the same store; name another file or schema")
            if not _empty(dst):
                raise ValidationError(f"the destination {dst.url} already holds data; migrate copies into an empty "
                                      "store: name a new file, or a new schema (?schema=...) on the server",
                                      url=dst.url)
            totals = {t: c for t, c in _row_counts(src).items()}
            copied: dict[str, int] = {}
            with dst.transaction():  # all or nothing
                for table in COPY_TABLES:
                    copied[table] = dst.import_rows(table, _reported(src, table, totals[table], progress))
            precision = coarser(src, dst)
            theirs, ours = content_digest(src, precision), content_digest(dst, precision)
            same = theirs == ours
            if not same:
                bad = next(t for t in COPY_TABLES if theirs[t] != ours[t])
                raise ValidationError(f"the copy of table {bad} differs from the source ({theirs[bad]} vs "
                                      f"{ours[bad]}); please report this error", table=bad)
            return {"source": src.url, "destination": dst.url, "rows": copied, "digest": ours,
                    "digests_equal": same, "seconds": round(time.perf_counter() - start, 2)}
        finally:
            dst.close()
    finally:
        src.close()


def _row_counts(store: Store) -> dict[str, int]:
    counts = store.info()["counts"]
    return {"nodes": counts["nodes"] + counts["retracted_nodes"], "node_versions": counts["node_versions"],
            "edges": counts["edge_intervals"], "vectors": counts["vectors"], "tombstones": counts["tombstones"],
            "records": counts["records"], "audit": counts["audit"], "changes": counts["changes"]}


def _reported(store: Store, table: str, total: int, progress: Progress | None) -> Iterator[list[dict]]:
    done = 0
    after = None
    if progress:
        progress(table, 0, total)
    while True:
        rows, after = store.export_rows(table, after)
        if rows:
            done += len(rows)
            if progress:
                progress(table, done, max(total, done))
            yield rows
        if after is None:
            return


def move_tenant(ws: Workspace, tenant: str, shard: str, principal: str | None = None,
                progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Move the tenant (namespace) ``tenant`` of a sharded store to ``shard`` (``store/pg_shard_move.py``: writes to
    it wait while it moves, a killed move is undone or finished by the next one); audited. Only the owner or an
    admin of ``*`` may move tenants."""
    from .store.pg_shard_move import move_tenant as move

    if not isinstance(ws.store, Sharded):
        raise ValidationError(f"the store {ws.store.url} is not sharded; move-tenant needs a store URL naming shards "
                              "(AGENTCONTEXT_SHARD_URLS=\"a=postgresql://...,b=postgresql://...\")", url=ws.store.url)
    if not access.is_superadmin(ws, principal):
        raise access.deny(ws, principal, "store.move_tenant", tenant, "admin", "*",
                          hint="only the owner or an admin of `*` may move a tenant between shards")
    done = move(ws.store, tenant, shard, progress)
    ws.store.append_audit(access.effective_principal(ws, principal), "store.move_tenant", tenant, "ok",
                          {k: done[k] for k in ("from", "to", "moved")})
    ws.drop_caches()
    return done
