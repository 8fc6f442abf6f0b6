"""What holding a memory's own vector as int8 in the heap would save and cost (issue 23 s2: bytes a memory), weighed
on a sample of a kept ``postgres_scale.py`` cluster before anything is built: today the heap holds the own vector as a
``halfvec`` (776 bytes a memory) and the HNSW index a second copy; the lever holds the heap copy as int8 bytes and a
scale (``pg_q8``'s form) and builds the HNSW index over an expression that rebuilds a halfvec from them (an index
expression takes no subquery: an IMMUTABLE SQL function wraps the rebuild).

On N own vectors of the cluster (``--sample``), each form copied into a table of its own (temporary, in the
cluster's server; nothing of the store is written): heap bytes a row, HNSW bytes a row, the index build's seconds
(one worker, the benchmark's maintenance_work_mem), the rebuild function's cost a row, recall@10 of the index walk
against exact float32 search over the same sample (the vectors ``postgres_scale.py`` kept in ``own.npy``), and the
walk's median ms (the distance of each hit read from the index order; the int8 form's score would be the client's).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_own_q8.py --data /work/pgdata-pgbytes5/200k [--sample 50000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.store import pg_q8  # noqa: E402

DIM = 384
REBUILD = (f"CREATE OR REPLACE FUNCTION pg_temp.q8_vec(b bytea, s real) RETURNS public.halfvec({DIM}) IMMUTABLE "
           "PARALLEL SAFE LANGUAGE sql AS $$ SELECT ARRAY(SELECT ((get_byte(b, i) # 128) - 128) * s FROM "
           f"generate_series(0, length(b) - 1) i ORDER BY i)::real[]::public.halfvec({DIM}) $$")


def exact_top10(values: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    scores = queries @ values.T
    return [set(np.argpartition(-row, 10)[:10].tolist()) for row in scores]


def walk(db: Any, sql: str, queries: np.ndarray, exact: list[set[int]]) -> tuple[float, float]:
    for _ in range(2):  # the second pass is timed
        hits, times = 0, []
        for q, want in zip(queries, exact):
            t = time.perf_counter()
            got = {i for (i,) in db.execute(sql, (q.astype(np.float16),)).fetchall()}
            times.append(time.perf_counter() - t)
            hits += len(got & want)
    return round(hits / (10 * len(queries)), 4), round(statistics.median(times) * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    import psycopg
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    own = np.asarray(np.load(args.data / "own.npy", mmap_mode="r")[: args.sample], dtype=np.float32)
    queries = base_corpus(args.data)[3][1: args.queries + 1].astype(np.float32)
    exact = exact_top10(own.astype(np.float16).astype(np.float32), queries)
    packed, scale = pg_q8.quantize(own)
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    figures: dict[str, Any] = {"sample": args.sample, "queries": args.queries,
                               "note": "busy shared 2-core machine: bytes exact, times ranges"}
    try:
        db = psycopg.connect(server.url("scale").split("?")[0], autocommit=True)
        register_vector(db)
        db.execute("SET maintenance_work_mem = '1GB'")
        db.execute("SET max_parallel_maintenance_workers = 0")
        db.execute("SET hnsw.ef_search = 100")
        db.execute(REBUILD)
        db.execute(f"CREATE TEMP TABLE own_half (i integer PRIMARY KEY, vector halfvec({DIM}))")
        db.execute("CREATE TEMP TABLE own_q8 (i integer PRIMARY KEY, q8 bytea, q8_scale real)")
        with db.cursor() as cur, cur.copy("COPY own_half (i, vector) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "halfvec"])
            for i, v in enumerate(own):
                copy.write_row((i, HalfVector(v)))
        with db.cursor() as cur, cur.copy("COPY own_q8 (i, q8, q8_scale) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "bytea", "float4"])
            for i, (b, s) in enumerate(zip(packed, scale)):
                copy.write_row((i, b, float(s)))
        db.execute("VACUUM ANALYZE own_half")
        db.execute("VACUUM ANALYZE own_q8")
        t = time.perf_counter()
        db.execute("SELECT count(pg_temp.q8_vec(q8, q8_scale)) FROM own_q8").fetchone()
        figures["rebuild function us a row"] = round((time.perf_counter() - t) / args.sample * 1e6, 1)
        forms = {"halfvec (today)": ("own_half", "vector"), "int8 heap, index over the rebuild": (
            "own_q8", f"(pg_temp.q8_vec(q8, q8_scale)::halfvec({DIM}))")}
        for name, (table, expr) in forms.items():
            t = time.perf_counter()
            db.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw ({expr} halfvec_ip_ops) WITH (m = 24, "
                       "ef_construction = 64)")
            built = time.perf_counter() - t
            heap = db.execute(f"SELECT pg_relation_size('{table}')").fetchone()[0]
            index = db.execute(f"SELECT pg_relation_size('{table}_hnsw')").fetchone()[0]
            sql = f"SELECT i FROM {table} ORDER BY {expr} <#> %s::halfvec({DIM}) LIMIT 10"
            plan = "\n".join(r[0] for r in db.execute(f"EXPLAIN {sql}", (own[0].astype(np.float16),)).fetchall())
            recall, ms = walk(db, sql, queries, exact)
            figures[name] = {"heap bytes a row": round(heap / args.sample), "hnsw bytes a row": round(
                index / args.sample), "build s": round(built, 1),
                "build ms a row": round(built / args.sample * 1000, 3),
                "recall@10 vs exact (float16 values)": recall, "walk median ms": ms,
                "index used": "hnsw" in plan.lower()}
        a, b = figures["halfvec (today)"], figures["int8 heap, index over the rebuild"]
        figures["saved heap bytes a memory"] = a["heap bytes a row"] - b["heap bytes a row"]
        figures["ratio build s (int8 / halfvec)"] = round(b["build s"] / a["build s"], 2)
        db.close()
    finally:
        server.stop()
    report("postgres_own_q8", figures)


if __name__ == "__main__":
    main()
