"""What a SQL store holds and whether it is whole: ``info()`` (counts, schema, capabilities, sizes on disk) and
``check_integrity()``. ``SQLStore`` delegates both here; a backend supplies ``_sizes`` and ``_physical_problems``.
"""
from __future__ import annotations

from typing import Any

from .migrations import applied

COUNTED_TABLES = ("nodes", "node_versions", "edges", "vectors", "tombstones", "records", "audit", "changes")


def info(store: Any) -> dict[str, Any]:
    counts_sql = ", ".join(f"(SELECT count(*) FROM {store.VERSIONS if t == 'node_versions' else t})"
                           for t in COUNTED_TABLES)
    live_sql = ("(SELECT count(*) FROM nodes WHERE retracted_at IS NULL), "
                "(SELECT count(*) FROM edges WHERE retracted_at IS NULL)")
    row = store._read(f"SELECT {counts_sql}, {live_sql}")[0]
    totals = dict(zip(COUNTED_TABLES, row))
    counts = {"nodes": row[-2], "retracted_nodes": totals["nodes"] - row[-2],
              "node_versions": totals["node_versions"], "edges": row[-1], "edge_intervals": totals["edges"],
              **{t: totals[t] for t in ("vectors", "tombstones", "records", "audit", "changes")}}
    namespaces = dict(store._read("SELECT namespace, count(*) FROM nodes WHERE retracted_at IS NULL "
                                  "GROUP BY namespace ORDER BY namespace"))
    return {"url": store.url, "backend": store.backend, "schema_version": store.schema_version(),
            "latest_schema_version": store.MIGRATIONS.latest, "migrations": applied(store),
            "capabilities": sorted(c.value for c in store.capabilities), "counts": counts,
            "namespaces": namespaces, "change_counter": store.change_counter(), "sizes": store._sizes()}


def check_integrity(store: Any) -> str:
    """'ok', or what is damaged: the backend's own check, then live nodes without their current version."""
    problems = store._physical_problems()
    if store.CURRENT_IN_VERSIONS:
        lost = store._read("SELECT count(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM node_versions v "
                           "WHERE v.id = n.id AND v.namespace = n.namespace AND v.version = n.version)")[0][0]
        if lost:
            problems.append(f"{lost} nodes lack their current version row")
    else:  # the live row is the current version: a version row at or after it is one too many
        twice = store._read("SELECT count(*) FROM node_versions v JOIN nodes n ON n.id = v.id AND "
                            "n.namespace = v.namespace WHERE v.version >= n.version")[0][0]
        if twice:
            problems.append(f"{twice} version rows are not older than their node's live row")
    return "; ".join(problems) or "ok"
