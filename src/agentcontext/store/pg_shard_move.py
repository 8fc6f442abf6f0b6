"""Moving one tenant to another shard (``agentcontext store move-tenant T SHARD``), with no write lost and no tenant
left in two places by a move that was killed.

1. The mover takes the tenant's lock exclusively (``shard_directory.MOVE_LOCK``) on a connection to the directory
   shard that it keeps until the end: writes to the tenant in flight finish first, later ones wait (each write
   transaction holds the lock shared, ``Directory.hold``); reads go on from the old shard.
2. The row says ``state = moving, target = <new shard>`` (committed: what a killed move left is known).
3. The tenant's rows (nodes with every version, edges with every interval, tombstones) are copied to the new shard
   in one transaction there; vectors are on every shard already.
4. The row says ``shard = <new>, state = cleanup, target = <old>``: from here reads and writes go to the new shard.
5. After the directory's read cache has expired in every process (``Directory.ttl``), the old shard's rows of the
   tenant are deleted, and the row says ``state = home``. The lock is released: waiting writes go to the new shard.

A move killed at any point leaves ``shard`` naming the one shard that holds the tenant whole (the old one before
step 4, the new one from it); what it left on the other shard (``target``: a partial or whole copy, or the old rows)
is deleted by ``recover``, which the next ``ShardedStore`` to open runs (and every move, first), once no mover holds
the tenant's lock. Both shards' change logs get a ``tenant.move`` entry, which makes caches that follow them rebuild.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..errors import NotFoundError, ShardUnavailableError
from .shard_directory import MOVE_LOCK, TABLE, tenant_key, unknown_shard
from .transfer import TENANT_TABLES, import_rows, pages

Progress = Callable[[str, int], None]


def _delete_tenant(store: Any, tenant: str, why: str) -> int:
    """Every row of ``tenant`` on one shard, deleted in one transaction there (logged as ``tenant.move``)."""
    count = 0
    with store.transaction():
        for table in TENANT_TABLES:
            count += store._exec(f"DELETE FROM {table} WHERE namespace = %s", (tenant,))
        store._log(store._now(), "", "tenant.move", tenant, "", {"removed": count, "why": why})
    return count


def recover(sharded: Any) -> list[str]:
    """Finish what killed moves left: for each tenant not ``home`` whose lock no mover holds, delete its rows on
    ``target`` (which the directory does not name for it) and mark it home. Returns the tenants recovered; one whose
    ``target`` shard is down is left for the next time."""
    rows = sharded.directory.rows()
    done = []
    for tenant, (_, state, target) in rows.items():
        if state == "home" or target is None:
            continue
        conn = sharded.directory.connect()
        try:
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", (MOVE_LOCK, tenant_key(tenant))
                                ).fetchone()[0]:
                continue  # a move of it is under way
            current = conn.execute(f"SELECT shard, state, target FROM {TABLE} WHERE tenant = %s",
                                   (tenant,)).fetchone()
            if current is None or current[1] == "home" or current[0] == current[2]:
                continue
            if current[2] in sharded.shards:
                try:
                    sharded.on(current[2], lambda s, t=tenant: _delete_tenant(s, t, "an unfinished move"))
                except ShardUnavailableError:
                    continue  # its leftovers wait for that shard to come back
            conn.execute(f"UPDATE {TABLE} SET state = 'home', target = NULL WHERE tenant = %s", (tenant,))
            conn.commit()
            done.append(tenant)
        finally:
            conn.close()
    sharded.directory.forget()
    return done


def move_tenant(sharded: Any, tenant: str, target: str, progress: Progress | None = None) -> dict[str, Any]:
    """Move ``tenant`` to shard ``target`` (module doc); returns what was copied and how long writes waited."""
    if target not in sharded.shards:
        raise unknown_shard(target, sharded.names)
    recover(sharded)
    began = time.monotonic()
    lock = sharded.directory.connect()
    side = sharded.directory.connect(autocommit=True)
    try:
        lock.execute("SELECT pg_advisory_xact_lock(%s, %s)", (MOVE_LOCK, tenant_key(tenant)))
        row = lock.execute(f"SELECT shard, state, target FROM {TABLE} WHERE tenant = %s", (tenant,)).fetchone()
        if row is None:
            raise NotFoundError(f"tenant {tenant!r} has no shard yet (nothing was ever written to it); a new tenant "
                                "is assigned when first written", tenant=tenant)
        source = row[0]
        if source not in sharded.shards:
            raise unknown_shard(source, sharded.names, tenant)
        if source == target:
            return {"tenant": tenant, "from": source, "to": target, "moved": False, "rows": {}}
        src, dst = sharded.on(source, lambda s: s), sharded.on(target, lambda s: s)
        side.execute(f"UPDATE {TABLE} SET state = 'moving', target = %s WHERE tenant = %s", (target, tenant))
        _notify(progress, "moving", 0)
        copied: dict[str, int] = {}
        with dst.transaction():
            _delete_tenant(dst, tenant, "a copy arriving")  # what an earlier move left (none after recover)
            for table in TENANT_TABLES:
                with src.primary():  # every row written before the lock (a replica may not have replayed them yet)
                    copied[table] = import_rows(dst, table, pages(src, table, namespace=tenant))
                _notify(progress, f"copied {table}", copied[table])
            dst._log(dst._now(), "", "tenant.move", tenant, "", {"from": source, "rows": copied})
        side.execute(f"UPDATE {TABLE} SET shard = %s, state = 'cleanup', target = %s, moved_at = now() "
                     "WHERE tenant = %s", (target, source, tenant))
        _notify(progress, "switched", sum(copied.values()))
        time.sleep(sharded.directory.ttl + 0.25)  # a read routed by a cached row finishes on the old shard
        removed = sharded.on(source, lambda s: _delete_tenant(s, tenant, f"moved to {target}"))
        side.execute(f"UPDATE {TABLE} SET state = 'home', target = NULL WHERE tenant = %s", (tenant,))
        lock.commit()  # the waiting writers go on, to the new shard
        _notify(progress, "done", removed)
        sharded.directory.forget(tenant)
        return {"tenant": tenant, "from": source, "to": target, "moved": True, "rows": copied, "removed": removed,
                "seconds": round(time.monotonic() - began, 3)}
    finally:
        lock.close()
        side.close()


def _notify(progress: Progress | None, step: str, count: int) -> None:
    if progress is not None:
        progress(step, count)
