"""Bytes per memory of a PostgreSQL store, table by table and index by index (issue 23 s2: <= 4 KB a memory at
1,000,000), with the average stored width of each column of ``nodes`` and of a vector, so the levers can be weighed.

Reads the cluster ``benchmarks/postgres_scale.py`` keeps (``--data``; its server started here, or reused). Heap
bytes are ``pg_relation_size`` (main fork), an index's its own; TOAST, free space and visibility maps are summed
apart. ``--vacuum-full`` rewrites ``vectors`` and ``nodes`` first (their indexes, the HNSW one included, are built
again: minutes), so a store migrated in place (migration 4's UPDATE of ``vectors.searched`` leaves every old row
version dead) is measured as a fresh load lays it out.
``--migrate`` (a cluster built by older code): measures it as it is (after ``--vacuum-full``, if given), then opens
it with this code, which runs the pending migrations (5: vectors to halfvec, their HNSW indexes rebuilt over halfvec;
6: a node's text to embed held once; 9: context vectors as int8; 10: vectors keyed by the hash's bytes, the HNSW
index built again; 13: the nodes' hashes as bytes), and measures it again: each table and index before and after
side by side, with the ratio, and the recall@10 of the server's dense search against exact float32 search (the vectors
``postgres_scale.py`` kept in ``own.npy``) before and after, over the same questions: one statement walking the
HNSW index as ``nearest`` does for a large namespace (float32 before, halfvec after), and ``store.nearest`` after.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_sizes.py --data /work/pgdata-pgscale/200k [--vacuum-full]
[--migrate [--queries 200]] (``--queries 0``: no recall, the bytes alone)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import NAMESPACE, SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402
from agentcontext.store import open_store  # noqa: E402

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
    vector = db.execute(f'SELECT avg(pg_column_size(vector)), count(*), avg(pg_column_size(hash)), '
                        f'avg(pg_column_size(model)) FROM (SELECT vector, hash, model FROM "{schema}".vectors '
                        "TABLESAMPLE SYSTEM (1) REPEATABLE (1)) s").fetchone()
    vectors = db.execute(f'SELECT count(*), count(*) FILTER (WHERE searched) FROM "{schema}".vectors').fetchone()
    return {"memories": memories, "bytes": total, "bytes per memory": round(total / max(memories, 1)),
            "target bytes per memory": TARGET, "met": total / max(memories, 1) <= TARGET,
            "vectors (rows, searched)": list(vectors),
            "tables and indexes (bytes per memory)": {f"{'table' if k == 'r' else 'index'} {name}": round(size / max(
                memories, 1)) for name, k, size, _ in rows if size >= 1 << 16},
            "toast, free space and visibility maps (bytes per memory)": round(int(other) / max(memories, 1)),
            "nodes column widths (average bytes)": widths,
            "vector width (average bytes)": round(float(vector[0] or 0), 1),
            "vectors' hash and model widths (average bytes)": [round(float(vector[2] or 0), 1),
                                                               round(float(vector[3] or 0), 1)]}


def exact_top10(data: Path, queries: np.ndarray) -> np.ndarray:
    own = np.load(data / "own.npy", mmap_mode="r")
    best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    rows = np.zeros((len(queries), 10), dtype=np.int64)
    for start in range(0, own.shape[0], 100_000):
        scores = queries @ np.asarray(own[start: start + 100_000]).T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        both = np.concatenate([best, np.take_along_axis(scores, top, axis=1)], axis=1)
        ids = np.concatenate([rows, top + start], axis=1)
        keep = np.argpartition(-both, 10, axis=1)[:, :10]
        best, rows = np.take_along_axis(both, keep, axis=1), np.take_along_axis(ids, keep, axis=1)
    return rows


def recall_index(url: str, queries: np.ndarray, exact: np.ndarray) -> tuple[float, float]:
    """(recall@10, median ms) of one statement walking the HNSW index over the column's type (float32 ``vector``
    before migration 5, ``halfvec`` after) as ``nearest`` walks it for a large namespace (same session settings)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from agentcontext.store.pg_vectors import SESSION, ann_predicate

    db = psycopg.connect(url.split("?")[0], autocommit=True)
    db.execute("SET search_path = scale, public")
    register_vector(db)
    for statement in SESSION:
        db.execute(statement)
    dim = queries.shape[1]
    stored = db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                        "'vectors'::regclass AND attname = 'vector'").fetchone()[0]
    pred = ann_predicate(db, MINILM, dim, "v")
    hashed = db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                        "'vectors'::regclass AND attname = 'hash'").fetchone()[0] == "bytea"
    nodes_hashed = db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                              "'nodes'::regclass AND attname = 'embed_hash'").fetchone()[0] == "bytea"
    # migration 10 keys vectors by the hash's bytes (pg_hash), migration 13 holds the nodes' hashes so too
    key = "actx_hex(v.hash)" if hashed and not nodes_hashed else "v.hash"
    sql = (f"SELECT n.id FROM vectors v JOIN nodes n ON n.embed_hash = {key} WHERE {pred}"
           f" AND n.namespace = %s AND n.kind = 'memory' AND n.retracted_at IS NULL ORDER BY v.vector::{stored}({dim}) "
           f"<#> %s::{stored}({dim}) LIMIT 10")
    for _ in range(2):  # the second pass is timed (the first warms the caches, as for store.nearest)
        hits, times = 0, []
        for q, want in zip(queries, exact):
            t = time.perf_counter()
            got = {int(i.split("_")[1]) for (i,) in db.execute(sql, (NAMESPACE, q)).fetchall()}
            times.append(time.perf_counter() - t)
            hits += len(got & set(want.tolist()))
    db.close()
    return hits / (10 * len(queries)), statistics.median(times) * 1000


def recall_nearest(store: Any, queries: np.ndarray, exact: np.ndarray) -> tuple[float, float]:
    for _ in range(2):  # the second pass is timed
        hits, times = 0, []
        for q, want in zip(queries, exact):
            t = time.perf_counter()
            got = {int(i.split("_")[1]) for i, _ in store.nearest(q, MINILM, 10, namespace=NAMESPACE, kind="memory")}
            times.append(time.perf_counter() - t)
            hits += len(got & set(want.tolist()))
    return hits / (10 * len(queries)), statistics.median(times) * 1000


def side_by_side(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    key = "tables and indexes (bytes per memory)"
    rows: dict[str, Any] = {}
    for name in dict.fromkeys([*before[key], *after[key]]):
        b, a = before[key].get(name, 0), after[key].get(name, 0)
        rows[name] = {"before": b, "after": a, "ratio": round(a / b, 2) if b else None}
    b, a = before["bytes per memory"], after["bytes per memory"]
    rows["total"] = {"before": b, "after": a, "ratio": round(a / b, 3), "target": TARGET, "met": a <= TARGET}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--vacuum-full", action="store_true")
    parser.add_argument("--migrate", action="store_true", help="measure, upgrade the store with this code, measure")
    parser.add_argument("--queries", type=int, default=200)
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
        if args.migrate:
            before = figures.get("after VACUUM FULL (as a fresh load lays it out)", figures["as stored"])
            if args.queries:
                _, _, _, qv = base_corpus(args.data)
                queries = np.asarray(qv[1: args.queries + 1], dtype=np.float32)
                exact = exact_top10(args.data, queries)
                recall_before = recall_index(server.url("scale"), queries, exact)
            t = time.perf_counter()
            store = open_store(server.url("scale"))  # runs the pending migrations
            figures["migrate s"] = round(time.perf_counter() - t, 1)
            figures["migrations now"] = [m["name"][:60] for m in store.info()["migrations"]]
            if args.queries:
                recall_after = recall_nearest(store, queries, exact)
            store.close()
            after = measure(db, "scale")
            figures["after the migration"] = after
            figures["before / after (bytes per memory)"] = side_by_side(before, after)
        if args.migrate and args.queries:  # --queries 0: bytes alone (a migration that leaves vectors as they were)
            same_after = recall_index(server.url("scale"), queries, exact)
            figures["recall@10 against exact float32 search (target 0.98)"] = {
                "questions": len(queries), "before (one statement over the HNSW index)": round(recall_before[0], 4),
                "after (the same statement)": round(same_after[0], 4),
                "after (store.nearest: its few-nodes check, filters)": round(recall_after[0], 4),
                "median ms: before / after the same statement / store.nearest (busy machine)": [
                    round(recall_before[1], 1), round(same_after[1], 1), round(recall_after[1], 1)]}
        db.close()
    finally:
        server.stop()
    built = json.loads((args.data / "built.json").read_text())
    report(f"postgres_sizes_{built['memories']}", figures)


if __name__ == "__main__":
    main()
