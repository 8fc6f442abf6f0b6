"""``agentcontext store ...``: the store of record itself (where it is, its schema version, what it holds)."""
from __future__ import annotations

from typing import Any

import click

from .build import Argument, Group
from .common import JSON_OPTION, emit, open_workspace, out, principal, progress_bar, table

store_app = Group(help="The store of record: where it lives, its schema version, what it holds.",
                        no_args_is_help=True)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _print(info: dict[str, Any]) -> None:
    latest = info["latest_schema_version"]
    out.print(f"store: {info['url']} ({info['backend']})", markup=False)
    out.print(f"schema version: {info['schema_version']}" + (" (latest)" if info["schema_version"] == latest
                                                             else f" (this agentcontext knows {latest})"))
    for step in info["migrations"]:
        out.print(f"  {step['version']}. {step['name']} (applied {step['applied_at']})", markup=False)
    out.print(f"size: {_size(info['sizes']['total'])}; change counter {info['change_counter']}")
    if info.get("pending_vectors"):  # PostgreSQL's delta (store/pg_delta.py)
        out.print(f"vectors pending (not in the HNSW index yet; `agentcontext store fold`): {info['pending_vectors']}")
    table(("count", "rows"), [{"count": k, "rows": v} for k, v in info["counts"].items()])
    if info["namespaces"]:
        table(("namespace", "nodes"), [{"namespace": k, "nodes": v} for k, v in info["namespaces"].items()])
    for replica in info.get("replicas") or []:  # read replicas (store/pg_replicas.py)
        lag = ("lag unknown" if replica["lag_seconds"] is None else
               f"lag {replica['lag_seconds']:.1f} s, {_size(replica['lag_bytes'] or 0)} of WAL")
        why = f" ({replica['reason']})" if replica["reason"] else ""
        out.print(f"replica {replica['url']}: {replica['state']}, {lag}, replayed {replica['replayed'] or '-'}, "
                  f"{replica['reads']} reads{why}", markup=False)
    for shard in info.get("shards") or []:  # tenants on several servers (store/pg_shards.py)
        held = (f"{shard['tenants']} tenants, {shard['counts']['nodes']} nodes" if shard["state"] == "up"
                else shard.get("reason", ""))
        out.print(f"shard {shard['name']} {shard['url']}: {shard['state']}, {held}", markup=False)
    tables = info["sizes"].get("tables") or {}
    if tables:
        table(("table", "size"), [{"table": k, "size": _size(v)} for k, v in
                                  sorted(tables.items(), key=lambda kv: -kv[1])])


@store_app.command("info")
def store_info(ctx: click.Context, json_out: bool = JSON_OPTION) -> None:
    """Print the store's URL, schema version and migrations, counts of what it holds, and sizes on disk.

    Opening an older store upgrades its schema first; a store written by a newer agentcontext is refused."""
    from .. import access

    ws = open_workspace(ctx)
    try:
        emit(access.store_info(ws, principal(ctx)), json_out, _print)
    finally:
        ws.close()


@store_app.command("move-tenant")
def store_move_tenant(ctx: click.Context,
                      tenant: str = Argument(..., metavar="TENANT", help="The namespace, e.g. memory:alice."),
                      shard: str = Argument(..., metavar="SHARD", help="The shard's name in the store URL."),
                      json_out: bool = JSON_OPTION) -> None:
    """Move one tenant (a namespace) of a sharded store to another shard: writes to it wait while it moves, reads go
    on; a move that is killed leaves the tenant whole on one shard (the next open finishes the cleanup)."""
    from ..migrate import move_tenant

    ws = open_workspace(ctx)
    try:
        done = move_tenant(ws, tenant, shard, principal(ctx),
                           progress=None if json_out else lambda step, n: out.print(f"{step}: {n}", markup=False))
        emit(done, json_out, lambda d: out.print(
            f"{d['tenant']}: {'moved' if d['moved'] else 'already'} on {d['to']}"
            + (f" (from {d['from']}, {sum(d['rows'].values())} rows, {d['seconds']} s)" if d["moved"] else ""),
            markup=False))
    finally:
        ws.close()


@store_app.command("fold")
def store_fold(ctx: click.Context, json_out: bool = JSON_OPTION) -> None:
    """Move the vectors written since the last fold (the delta, searched exactly) into the HNSW indexes now.

    PostgreSQL lands new vectors outside its HNSW indexes so a write pays no index insert; a store folds them by
    itself, in the background of the writing process, once the delta passes 10,000 rows. Safe to stop: a fold cut
    short leaves every vector findable. Then the context vectors written since are held as int8 (schema 9)."""
    from .. import access

    ws = open_workspace(ctx)
    try:
        with progress_bar(not json_out) as report:
            done = access.store_fold(ws, principal(ctx), progress=lambda n, total: report("folding vectors", n, total))
        emit(done, json_out, lambda d: out.print(
            f"folded {d['folded']} vectors into the index in {d['chunks']} chunks ({d['seconds']} s); "
            f"{d['pending']} pending" if d["folded"] else f"nothing to fold ({d['pending']} pending)"
            + (f": {d['note']}" if d.get("note") else "")
            + (f"; {d['packed']} context vectors held as int8" if d.get("packed") else ""), markup=False))
    finally:
        ws.close()
