"""The vector delta's layout (store/pg_delta.py, issue 23 s1): the delta as a column of ``vectors`` (``pending`` and a
partial btree, what the store does) against a table of its own, on a large store's server. Each round inserts 20,000
rows (10,000 memories' own vectors, pending, and their 10,000 context vectors) and then scores the 10,000 pending rows
against a query (the top 10, three times), in a transaction that is rolled back; the two layouts alternate. The table
form checks ``vectors`` for each key on insert (a row must not be in both). Prints each round and the medians.
Run (on a server ``benchmarks/postgres_scale.py`` keeps, schema 8; the URL of its database, the store's schema
``scale``): nice -n 10 .venv/bin/python benchmarks/postgres_delta_layout.py postgresql://postgres@127.0.0.1:PORT/postgres
[rounds] [--explain]
"""
import sys
import time

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

M = "all-MiniLM-L6-v2-int8"
SCORE = ("SELECT hash, -(vector::vector(384) <#> %s::vector(384)) s FROM {table} WHERE model = '" + M + "' AND "
         "dim = 384 AND {flag} ORDER BY 2 DESC LIMIT 10")


def stage(db, rows) -> None:
    db.execute('CREATE TEMP TABLE sv (hash text collate "C", model text collate "C", dim int, vector vector, p bool) '
               "ON COMMIT DROP")
    with db.cursor() as cur, cur.copy("COPY sv (hash, model, dim, vector, p) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["text", "text", "int4", "vector", "bool"])
        for r in rows:
            cp.write_row(r)


def one(db, rows, q, layout: str, explain: bool) -> tuple[float, float]:
    db.execute("BEGIN")
    stage(db, rows)
    if layout == "column":
        insert = ("INSERT INTO vectors(hash, model, dim, vector, searched, pending) SELECT hash, model, dim, vector, "
                  "false, p FROM sv ORDER BY hash")
        score = SCORE.format(table="vectors", flag="pending")
    else:
        db.execute('CREATE TABLE vectors_delta (hash text collate "C" NOT NULL, model text collate "C" NOT NULL, '
                   "dim int NOT NULL, vector vector NOT NULL, wanted boolean NOT NULL, PRIMARY KEY (hash, model))")
        insert = ("INSERT INTO vectors_delta SELECT hash, model, dim, vector, p FROM sv s WHERE NOT EXISTS (SELECT 1 "
                  "FROM vectors v WHERE v.hash = s.hash AND v.model = s.model) ORDER BY hash")
        score = SCORE.format(table="vectors_delta", flag="wanted")
    t = time.perf_counter()
    db.execute(insert)
    inserted = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(3):
        db.execute(score, (q,)).fetchall()
    scored = (time.perf_counter() - t) / 3
    if explain:
        print("\n".join(r[0][:150] for r in db.execute("EXPLAIN (ANALYZE, COSTS OFF) " + score, (q,)).fetchall()))
    db.execute("ROLLBACK")
    return inserted, scored


def main() -> None:
    db = psycopg.connect(sys.argv[1], autocommit=True)
    register_vector(db)
    db.execute("SET search_path TO scale, public")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 4
    rng = np.random.default_rng(1)
    rows = [(f"h{rng.integers(1 << 60):016x}", M, 384, rng.standard_normal(384).astype(np.float32), i % 2 == 0)
            for i in range(20000)]
    q = rng.standard_normal(384).astype(np.float32)
    res: dict[str, list[tuple[float, float]]] = {"column": [], "table": []}
    for _ in range(rounds):
        for layout in res:
            res[layout].append(one(db, rows, q, layout, "--explain" in sys.argv))
    for k, v in res.items():
        print(k, "insert 20,000 rows s", [round(a, 3) for a, _ in v], "median",
              round(float(np.median([a for a, _ in v])), 3), "| score 10,000 ms", [round(1000 * b, 1) for _, b in v],
              "median", round(1000 * float(np.median([b for _, b in v])), 1))


if __name__ == "__main__":
    main()
