"""Bytes per memory of a PostgreSQL store, table by table and index by index (issue 23 s2: <= 4 KB a memory at
1,000,000), with the average stored width of each column of ``nodes`` and of a vector, so the levers can be weighed.

Reads the cluster ``benchmarks/postgres_scale.py`` keeps (``--data``; its server started here, or reused). Heap
bytes are ``pg_relation_size`` (main fork), an index's its own; TOAST, free space and visibility maps are summed
apart. ``--vacuum-full`` rewrites ``vectors`` and ``nodes`` first (their indexes, the HNSW one included, are built
again: minutes), so a store migrated in place (migration 4's UPDATE of ``vectors.searched`` leaves every old row
version dead) is measured as a fresh load lays it out.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_sizes.py --data /work/pgdata-pgscale/200k [--vacuum-full]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

TARGET = 4096
COLUMNS = ("id", "kind", "namespace", "key", "title", "summary", "content", "props", "tags", "recorded_at",
           "content_hash", "created_by", "embed_hash", "embed_text", "tag_text", "tsv")


def measure(db: Any, schema: str) -> dict[str, Any]:
    memories = db.execute(f'SELECT count(*) FROM "{schema}".nodes').fetchone()[0]
    rows = db.execute(
        "SELECT c.relname, c.relkind, pg_relation_size(c.oid), c.reltuples::bigint FROM pg_class c JOIN pg_namespace s "
        "ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind IN ('r', 'i') ORDER BY pg_relation_size(c.oid) "
        "DESC", (schema,)).fetchall()
    other = db.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid) - pg_relation_size(c.oid) - pg_indexes_size(c.oid)), 0) "
        "FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
        (schema,)).fetchone()[0]
    total = sum(r[2] for r in rows) + int(other)
    widths = {c: round(float(db.execute(f'SELECT avg(pg_column_size({c})) FROM (SELECT {c} FROM "{schema}".nodes '
                                        "TABLESAMPLE SYSTEM (2) REPEATABLE (1)) s").fetchone()[0] or 0), 1)
              for c in COLUMNS}
    vector = db.execute(f'SELECT avg(pg_column_size(vector)), count(*) FROM (SELECT vector FROM "{schema}".vectors '
                        "TABLESAMPLE SYSTEM (1) REPEATABLE (1)) s").fetchone()
    vectors = db.execute(f'SELECT count(*), count(*) FILTER (WHERE searched) FROM "{schema}".vectors').fetchone()
    return {"memories": memories, "bytes": total, "bytes per memory": round(total / max(memories, 1)),
            "target bytes per memory": TARGET, "met": total / max(memories, 1) <= TARGET,
            "vectors (rows, searched)": list(vectors),
            "tables and indexes (bytes per memory)": {f"{'table' if k == 'r' else 'index'} {name}": round(size / max(
                memories, 1)) for name, k, size, _ in rows if size >= 1 << 16},
            "toast, free space and visibility maps (bytes per memory)": round(int(other) / max(memories, 1)),
            "nodes column widths (average bytes)": widths,
            "vector width (average bytes)": round(float(vector[0] or 0), 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--vacuum-full", action="store_true")
    args = parser.parse_args()
    import psycopg

    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        db = psycopg.connect(server.url(None), autocommit=True)
        figures: dict[str, Any] = {"as stored": measure(db, "scale")}
        if args.vacuum_full:
            t = time.perf_counter()
            for table in ("vectors", "nodes", "node_versions"):
                db.execute(f"VACUUM (FULL, ANALYZE) scale.{table}")
            figures["vacuum full s"] = round(time.perf_counter() - t, 1)
            figures["after VACUUM FULL (as a fresh load lays it out)"] = measure(db, "scale")
        db.close()
    finally:
        server.stop()
    built = json.loads((args.data / "built.json").read_text())
    report(f"postgres_sizes_{built['memories']}", figures)


if __name__ == "__main__":
    main()
