"""What SQLStore's role parts cost per call (issue 27 section 4): the store's own calls timed on this checkout's
code and on a baseline commit's, in the same run, on the same in-memory SQLite workload.

Usage: .venv/bin/python benchmarks/store_parts.py [--baseline REV] [--rounds 5] [--calls 2000]

A public method of the store now hands the call to its part (``sql_part.Part``), which reaches the connection
through the store: one or two Python calls more per call, the SQL unchanged. Timed: ``get_node`` and
``get_record`` (small reads, where the extra calls weigh most), ``put_nodes`` of 100 nodes, ``put_vectors`` of 100
vectors, ``put_record``, ``retract_nodes`` of 10 nodes. Each round runs both codes in fresh processes (alternating
which goes first); printed: microseconds per call, the median over rounds, and the ratio this / baseline (< 1 is
faster) and the ratio of the fastest runs (a busy machine's CPU time is bimodal: a run that shares its core
costs ~1.6x), in CPU microseconds of the process (the SQL runs in it: SQLite is embedded). Taken on a shared 2-core
machine: expect noise.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, time
import numpy as np
from agentcontext.model import Node
from agentcontext.store import SQLiteStore
calls = int(sys.argv[1])
store = SQLiteStore(":memory:")
rng = np.random.default_rng(3)

def nodes(start, n):
    return [Node(id=f"n{i}", kind="memory", namespace="ns", key=f"k{i}", content=f"text {i}")
            for i in range(start, start + n)]

def per_call(fn, n):
    t = time.process_time()  # CPU time: on a shared machine, less of the other processes' noise than wall time
    for i in range(n):
        fn(i)
    return (time.process_time() - t) / n * 1e6

out = {}
out["put_nodes_100_us"] = per_call(lambda i: store.put_nodes(nodes(i * 100, 100)), calls // 20)
out["put_vectors_100_us"] = per_call(lambda i: store.put_vectors(
    {f"h{i}-{j}": rng.standard_normal(32).astype("float32") for j in range(100)}, "m"), calls // 20)
out["put_record_us"] = per_call(lambda i: store.put_record("k", f"r{i}", {"v": i}), calls)
out["get_node_us"] = per_call(lambda i: store.get_node(f"n{i}"), calls)
out["get_record_us"] = per_call(lambda i: store.get_record("k", f"r{i}"), calls)
out["retract_nodes_10_us"] = per_call(lambda i: store.retract_nodes([f"n{i * 10 + j}" for j in range(10)]), calls // 20)
print(json.dumps(out))
'''


def baseline_src(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run(src: Path, calls: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(calls)], env=env, check=True, capture_output=True,
                         text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_src = baseline_src(args.baseline, Path(tmp))
        runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
        for r in range(args.rounds):
            order = [("this", ROOT / "src"), ("baseline", old_src)]
            for name, src in (order if r % 2 == 0 else order[::-1]):
                runs[name].append(run(src, args.calls))
    print(f"store parts benchmark: {args.calls} calls, {args.rounds} rounds; baseline {args.baseline}")
    print(f"{'figure':22} {'this':>10} {'baseline':>10} {'ratio':>7} {'min ratio':>9}   (this runs; baseline runs)")
    for key in runs["this"][0]:
        mine = [x[key] for x in runs["this"]]
        base = [x[key] for x in runs["baseline"]]
        m, b = statistics.median(mine), statistics.median(base)
        print(f"{key:22} {m:10.1f} {b:10.1f} {m / b:7.2f} {min(mine) / min(base):9.2f}   "
              f"({', '.join(f'{v:.1f}' for v in mine)}; "
              f"{', '.join(f'{v:.1f}' for v in base)})")


if __name__ == "__main__":
    main()
