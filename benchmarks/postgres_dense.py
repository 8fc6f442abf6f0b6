"""Dense recall@10 at 1,000,000 memories (issue 23): HNSW graphs and forms side by side on a kept cluster.

On a cluster ``postgres_scale.py`` keeps (``--data``), each variant is an index over the store's own ``vectors``
rows (the same partial predicate as ``pg_vectors.ann_predicate``) and the statement that walks it as ``nearest``
would (the namespace and kind filters, iterative scans): the store's index as it is, denser halfvec graphs (``hv``:
m / ef_construction), and binary quantization (``bq``: an HNSW index over ``binary_quantize(vector)::bit(384)``
with Hamming distance, walked for ``rescore`` candidates that are then scored exactly from the heap's halfvec, the
re-rank pattern of pgvector's documentation). Each prints recall@10 against exact float32 search over every own
vector (``own.npy``), p50 / p95 of the statement, the index's bytes (a memory) and its build time, and the store's
own ``nearest`` (whatever index the store has) in the same run. Indexes of the same expression as the store's are
measured alone: the others are dropped inside a transaction that is rolled back. Built side indexes are kept
(``try_*``) for the next runs; ``--drop NAME`` removes one.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_dense.py --data /work/pgdata-pgdense/1m --queries 100 \
    --variants store,hv:16:64:1000,bq:16:64:1000:2000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import p95, report  # noqa: E402
from benchmarks.postgres_hnsw import exact_top10  # noqa: E402
from benchmarks.postgres_scale import NAMESPACE, SERVER, base_corpus  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.store.pg_hash import has_bytes, out  # noqa: E402
from agentcontext.store.pg_vectors import EF_SEARCH, ann_index_name, ann_predicate  # noqa: E402

DIM = 384
FILTER = f"n.namespace = '{NAMESPACE}' AND n.kind = 'memory' AND n.retracted_at IS NULL"


def parse(spec: str) -> dict[str, Any]:
    """``nearest`` | ``store[:EF_SEARCH]`` | ``hv:M:EFC:EF_SEARCH`` | ``bq:M:EFC:EF_SEARCH:RESCORE``."""
    parts = spec.split(":")
    if parts[0] == "nearest":  # the store's own nearest, whatever index it walks (none other of its expression)
        return {"kind": "nearest", "spec": spec}
    if parts[0] == "store":  # the store's index, walked by the statement below (at the store's ef_search or EF)
        return {"kind": "hv", "spec": spec, "ef": int(parts[1]) if len(parts) > 1 else EF_SEARCH,
                "index": ann_index_name(MINILM, DIM), "store": True}
    if parts[0] == "hv":
        m, efc, ef = (int(x) for x in parts[1:4])
        return {"kind": "hv", "spec": spec, "m": m, "efc": efc, "ef": ef, "index": f"try_hv_m{m}_efc{efc}"}
    if parts[0] == "bq":
        m, efc, ef, rescore = (int(x) for x in parts[1:5])
        return {"kind": "bq", "spec": spec, "m": m, "efc": efc, "ef": ef, "rescore": rescore,
                "index": f"try_bq_m{m}_efc{efc}"}
    raise SystemExit(f"unknown variant {spec!r}: nearest, store, hv:M:EFC:EF, bq:M:EFC:EF:RESCORE")


def expression(kind: str) -> str:
    return (f"(vector::halfvec({DIM})) halfvec_ip_ops" if kind == "hv"
            else f"(binary_quantize(vector)::bit({DIM})) bit_hamming_ops")


def build(db: Any, v: dict[str, Any], store_index: str) -> float | None:
    """The variant's index unless kept (the store's own when it has the same graph): build seconds or None."""
    exists = db.execute("SELECT to_regclass(%s)", (f"scale.{v['index']}",)).fetchone()[0] is not None
    if exists:
        return None
    t = time.perf_counter()
    db.execute(f"CREATE INDEX {v['index']} ON scale.vectors USING hnsw ({expression(v['kind'])}) WITH (m = {v['m']}, "
               f"ef_construction = {v['efc']}) WHERE {ann_predicate(db, MINILM, DIM)}")
    return time.perf_counter() - t


def statement(v: dict[str, Any], k: int, hb: bool) -> str:
    """``hb``: vectors keyed by the hash's bytes (schema 10 on): the join reads them as text, as ``nearest`` does."""
    walk = (f"FROM scale.vectors v JOIN scale.nodes n ON n.embed_hash = {out('v.hash', hb)} WHERE "
            f"{ann_predicate(None, MINILM, DIM, 'v')} AND {FILTER}")
    if v["kind"] == "hv":
        return f"SELECT n.id {walk} ORDER BY v.vector::halfvec({DIM}) <#> %(q)s::vector::halfvec({DIM}) LIMIT {k}"
    return (f"SELECT id FROM (SELECT n.id, v.vector {walk} ORDER BY binary_quantize(v.vector)::bit({DIM}) <~> "
            f"binary_quantize(%(q)s::vector({DIM}))::bit({DIM}) LIMIT {v['rescore']}) c "
            f"ORDER BY c.vector::vector({DIM}) <#> %(q)s::vector({DIM}) LIMIT {k}")


def measure(q: np.ndarray, exact: np.ndarray, fn: Callable[[np.ndarray], list[str]]) -> dict[str, float]:
    hits, times = 0, []
    fn(q[0])  # one query first: the index's pages are read in
    for vec, want in zip(q, exact):
        t = time.perf_counter()
        got = fn(vec)
        times.append(time.perf_counter() - t)
        hits += len(set(want.tolist()) & {int(i.split("_")[1]) for i in got[:10]})
    ms = [x * 1000 for x in times]
    return {"recall_at_10": round(hits / (10 * len(q)), 4), "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(p95(ms), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10, help="how many the statement asks for (retrieve asks 100)")
    parser.add_argument("--variants", default="store,hv:16:64:1000")
    parser.add_argument("--drop", default=None, help="drop this kept side index and stop")
    parser.add_argument("--name", default="postgres_dense")
    args = parser.parse_args()
    _, _, _, qvectors = base_corpus(args.data)
    q = np.asarray(qvectors[1: args.queries + 1], dtype=np.float32)
    n = int(np.load(args.data / "own.npy", mmap_mode="r").shape[0])
    exact = exact_top10(args.data, q, n)
    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    rows = []
    try:
        store = open_store(server.url("scale"))
        db = store._db
        if args.drop:
            db.execute(f"DROP INDEX IF EXISTS scale.{args.drop}")
            return
        db.execute("SET maintenance_work_mem = '2560MB'")  # one build at a time: the machine's memory is shared
        db.execute("SET hnsw.iterative_scan = relaxed_order")
        store_index = ann_index_name(MINILM, DIM)
        for spec in args.variants.split(","):
            v = parse(spec)
            load = [round(x, 2) for x in os.getloadavg()]
            if v["kind"] == "nearest":
                got = measure(q, exact, lambda x: [i for i, _ in store.nearest(x, MINILM, args.k,
                                                                               namespace=NAMESPACE, kind="memory")])
                size = db.execute("SELECT pg_relation_size(%s::regclass)", (f"scale.{store_index}",)).fetchone()[0]
                row = {"variant": "the store's nearest (its index as it is)", **got,
                       "index_bytes_a_memory": round(size / n)}
            else:
                built = None if v.get("store") else build(db, v, store_index)
                size = db.execute("SELECT pg_relation_size(%s::regclass)", (f"scale.{v['index']}",)).fetchone()[0]
                sql = statement(v, args.k, has_bytes(db))
                others = [r[0] for r in db.execute(  # the other HNSW indexes of the same expression
                    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON "
                    "a.oid = c.relam WHERE i.indrelid = 'scale.vectors'::regclass AND a.amname = 'hnsw' AND "
                    "c.relname <> %s AND (pg_get_indexdef(c.oid) LIKE '%%binary_quantize%%') = %s",
                    (v["index"], v["kind"] == "bq")).fetchall()]
                with db.transaction(force_rollback=True):  # the others dropped for this variant's queries only
                    for other in others:
                        db.execute(f"DROP INDEX scale.{other}")
                    db.execute(f"SET LOCAL hnsw.ef_search = {v['ef']}")
                    db.execute("SET LOCAL hnsw.max_scan_tuples = 100000")
                    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, {"q": q[0]}).fetchall())
                    if v["index"] not in plan:
                        raise SystemExit(f"{spec}: the statement does not walk {v['index']}:\n{plan}")
                    got = measure(q, exact, lambda x, sql=sql: [r[0] for r in db.execute(sql, {"q": x}).fetchall()])
                row = {"variant": spec, **got, "index_bytes_a_memory": round(size / n),
                       "build_s (None: kept from an earlier run)": built and round(built, 1)}
            row["load_average"] = load
            rows.append(row)
            print(row, flush=True)
        store.close()
    finally:
        server.stop()
    report(args.name, {"memories": n, "queries": len(q), "k": args.k, "server": SERVER,
                       "note": "shared 2-core machine; the server and the client share the cores",
                       "variants": rows})


if __name__ == "__main__":
    main()
