"""Which HNSW graph would let PostgreSQL's dense search drop ``hnsw.ef_search`` (issue 9 s4): recall@10 and latency
against ef_search, for the store's index (every own and pair vector, m 16, ef_construction 64) beside a side index
over the memories' own vectors only, built with other parameters, on a cluster kept by ``postgres_scale.py``.

At 1,000,000 memories the store's index needs ef_search 1000 for recall@10 0.987 (0.942 at 400, 0.877 at 200): the
walk at 1000 is the largest single part of a retrieve. This measures whether a denser graph (``--m``,
``--ef-construction``), a smaller one (own vectors only: ``nearest`` never wants pair vectors) or halfvec entries
(``--type halfvec``: the candidates re-ranked with the full vectors) move that curve, before anyone rebuilds a 1M
index (40 minutes to hours of both cores). The side table ``hnsw_own_<type>_m<m>_efc<efc>`` (id, vector) and its
index stay in the cluster's ``scale`` schema for the next runs (``--drop`` removes them); the store never reads them.

Each row: ef_search, recall@10 (the top 10 of the 160 nearest, the pool retrieve asks for, against the exact top 10
over every own vector) and p50 of one query, for the side index and for the store's own ``nearest`` in the same run.
Run: /work/tools/bench.sh .venv/bin/python benchmarks/postgres_hnsw.py --memories 200000 --m 32 --ef-construction 128
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import NAMESPACE, SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402
from agentcontext.store import open_store  # noqa: E402

POOL = 160  # what retrieve asks nearest for on a large namespace (server_search.LARGE_DENSE_POOL)


def exact_top10(data: Path, q: np.ndarray, n: int) -> np.ndarray:
    own = np.load(data / "own.npy", mmap_mode="r")
    best = np.full((len(q), 10), -np.inf, dtype=np.float32)
    rows = np.zeros((len(q), 10), dtype=np.int64)
    for start in range(0, n, 100_000):
        scores = q @ np.asarray(own[start: start + 100_000]).T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        both = np.concatenate([best, np.take_along_axis(scores, top, axis=1)], axis=1)
        ids = np.concatenate([rows, top + start], axis=1)
        keep = np.argpartition(-both, 10, axis=1)[:, :10]
        best, rows = np.take_along_axis(both, keep, axis=1), np.take_along_axis(ids, keep, axis=1)
    return rows


def side_index(db: Any, kind: str, m: int, efc: int) -> tuple[str, float | None]:
    """The side table of own vectors with its HNSW index, made unless kept: (table, build seconds or None)."""
    table = f"hnsw_own_{kind}_m{m}_efc{efc}"
    if db.execute("SELECT to_regclass(%s)", (f"scale.{table}",)).fetchone()[0] is not None:
        return table, None
    t = time.perf_counter()
    db.execute(f"CREATE TABLE scale.{table} AS SELECT n.id, v.vector::{kind}(384) AS vector FROM scale.nodes n "
               f"JOIN scale.vectors v ON v.hash = n.embed_hash WHERE n.kind = 'memory' AND n.namespace = %s",
               (NAMESPACE,))
    db.execute(f"CREATE INDEX ON scale.{table} USING hnsw (vector {kind}_ip_ops) WITH (m = {m}, "
               f"ef_construction = {efc})")
    db.execute(f"ANALYZE scale.{table}")
    return table, time.perf_counter() - t


def measure(q: np.ndarray, exact: np.ndarray, fn: Callable[[np.ndarray], list[str]]) -> dict[str, float]:
    hits, times = 0, []
    for v, want in zip(q, exact):
        t = time.perf_counter()
        got = fn(v)
        times.append(time.perf_counter() - t)
        hits += len(set(want.tolist()) & {int(i.split("_")[1]) for i in got[:10]})
    return {"recall_at_10": round(hits / (10 * len(q)), 4), "p50_ms": round(statistics.median(times) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=128)
    parser.add_argument("--type", choices=("vector", "halfvec"), default="halfvec")
    parser.add_argument("--ef", default="1000,400,200,100", help="ef_search values, comma-separated")
    parser.add_argument("--drop", action="store_true", help="drop the side table and stop")
    args = parser.parse_args()
    data = Path(f"/tmp/agentcontext-pg-scale-{args.memories}")
    if not (data / "built.json").exists():
        raise SystemExit(f"no kept cluster in {data}: build it first (postgres_scale.py --memories {args.memories} "
                         "--build-only)")
    _, _, _, qvectors = base_corpus(data)
    q = np.asarray(qvectors[1: args.queries + 1], dtype=np.float32)
    exact = exact_top10(data, q, args.memories)
    server = PgServer(root=data / "cluster", options=SERVER).start()
    try:
        store = open_store(server.url("scale"))
        db = store._db
        if args.drop:
            db.execute(f"DROP TABLE IF EXISTS scale.hnsw_own_{args.type}_m{args.m}_efc{args.ef_construction}")
            return
        db.execute("SET maintenance_work_mem = '2GB'")
        table, built = side_index(db, args.type, args.m, args.ef_construction)
        side = (f"SELECT id FROM (SELECT id, vector FROM scale.{table} ORDER BY vector <#> %s::vector::{args.type}(384)"
                f" LIMIT {POOL}) c ORDER BY vector <#> %s::vector::{args.type}(384)")  # the candidates, re-ranked
        rows = []
        for ef in [int(x) for x in args.ef.split(",")]:
            db.execute(f"SET hnsw.ef_search = {ef}")
            ours = measure(q, exact, lambda v: [r[0] for r in db.execute(side, (v, v)).fetchall()])
            store_index = measure(q, exact, lambda v: [i for i, _ in store.nearest(v, MINILM, POOL,
                                                                                   namespace=NAMESPACE,
                                                                                   kind="memory")])
            rows.append({"ef_search": ef, "side index": ours, "store index (own and pair, m 16, efc 64)": store_index})
            print(rows[-1], flush=True)
        size = db.execute("SELECT pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = %s::regclass",
                          (f"scale.{table}",)).fetchone()[0]
        store.close()
    finally:
        server.stop()
    import os

    report(f"postgres_hnsw_{args.memories}", {
        "memories": args.memories, "queries": len(q), "pool": POOL, "side index": {
            "table": table, "type": args.type, "m": args.m, "ef_construction": args.ef_construction,
            "bytes": size, "build_s (one run; None: kept from an earlier run)": built and round(built, 1)},
        "server": SERVER, "load_average (1, 5, 15 min)": [round(x, 2) for x in os.getloadavg()],
        "note": "busy shared 2-core machine; the server and the client share the cores", "by ef_search": rows})


if __name__ == "__main__":
    main()
