"""PostgresStore vs SQLiteStore (the baseline) on the same operations, each measured in this run.

Starts a throwaway embedded PostgreSQL server (as tests do), fills both stores with the same data, and prints
the median of several runs per operation and the ratio postgres/sqlite (above 1 = Postgres slower).
Run: .venv/bin/python benchmarks/store_postgres.py [--nodes 20000]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import median, ms, report, timed  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.model import Edge, Node  # noqa: E402
from agentcontext.store import SQLiteStore, open_store  # noqa: E402

WORDS = ("agent context graph memory decision policy vector search store version edge node pack flash "
         "token budget retrieval causal entity erasure audit record schema index").split()


def make_nodes(n: int) -> list[Node]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        body = " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 60))
        out.append(Node(id=f"n{i}", kind="doc", namespace=f"ns{i % 4}", key=f"sec{i % 97}.doc{i}",
                        title=f"Doc {i} {WORDS[i % len(WORDS)]}", summary=body[:80], content=body,
                        tags=[f"t:{i % 5}"], embed_text=f"text {i}"))
    return out


def make_edges(n: int, per: int = 3) -> list[Edge]:
    return [Edge(f"n{i}", "depends_on", f"n{(i * 7 + k + 1) % n}", namespace=f"ns{i % 4}", position=k)
            for i in range(n) for k in range(per)]


def measure(store, nodes, edges, vectors, runs: int) -> dict[str, float]:
    out: dict[str, float] = {}
    t = time.perf_counter()
    for i in range(0, len(nodes), 2000):
        store.put_nodes(nodes[i:i + 2000])
    out["put_nodes (all, 2000 per call)"] = time.perf_counter() - t
    for n in nodes:
        n.content += " revised"
    t = time.perf_counter()
    for i in range(0, len(nodes), 2000):
        store.put_nodes(nodes[i:i + 2000])
    out["put_nodes again, every node changed (new versions)"] = time.perf_counter() - t
    for n in nodes:
        n.content = n.content[: -len(" revised")]
    t = time.perf_counter()
    store.put_edges(edges)
    out["put_edges (all, one call)"] = time.perf_counter() - t
    t = time.perf_counter()
    store.put_vectors(vectors, "bench")
    out["put_vectors (all)"] = time.perf_counter() - t
    ids = [f"n{i}" for i in range(0, len(nodes), max(1, len(nodes) // 200))]
    cases = {
        "get_node x200": lambda: [store.get_node(i) for i in ids],
        "get_nodes(200 ids)": lambda: store.get_nodes(ids),
        "find_nodes(ns, tag, limit 50)": lambda: store.find_nodes(namespace="ns1", tags=["t:2"], limit=50),
        "node_index(ns)": lambda: store.node_index("ns1"),
        "edges(src=200 ids)": lambda: store.edges(src=ids),
        "adjacency(all)": lambda: store.adjacency(),
        "text_search x20": lambda: [store.text_search(f"{WORDS[k]} {WORDS[k + 1]}", limit=20) for k in range(20)],
        "load_vectors(all)": lambda: store.load_vectors("bench"),
        "change_counter x200": lambda: [store.change_counter() for _ in range(200)],
        "append_audit x200 (one transaction each)": lambda: [store.append_audit("bench", "read", f"t{k}", "ok")
                                                             for k in range(200)],
    }
    for name, fn in cases.items():
        times, _ = timed(fn, runs=runs)
        out[name] = median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    nodes, edges = make_nodes(args.nodes), make_edges(args.nodes)
    from agentcontext.model import content_hash

    rng = np.random.default_rng(1)
    vectors = {content_hash(n.embed_text): rng.standard_normal(384).astype(np.float32) for n in nodes}
    server = PgServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = SQLiteStore(Path(tmp) / "bench.db")
            base = measure(sqlite, nodes, edges, vectors, args.runs)
            sqlite.close()
        pg = open_store(server.url("bench"))
        ours = measure(pg, nodes, edges, vectors, args.runs)
        pg.close()
    finally:
        server.stop()
    figures = {"nodes": args.nodes, "edges": len(edges), "vectors": f"{len(vectors)} x 384",
               "note": "medians of runs; shared 2-core machine under contention from other engineers",
               "results": {name: {"sqlite": ms(base[name]), "postgres": ms(ours[name]),
                                  "postgres/sqlite": round(ours[name] / base[name], 2)} for name in base}}
    report("store_postgres", figures)


if __name__ == "__main__":
    main()
