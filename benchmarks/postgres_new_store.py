"""Opening a new PostgreSQL store (a fresh schema): the schema made at the latest version in one step
(``MIGRATIONS.creation``) against the replay of every migration (the code before; ~400 stores are opened in the
test suite). One server; each side opens ``--runs`` new stores in its own process, alternating rounds, and reports
the median wall and the process's CPU seconds a store (the server's CPU is the backend's: read from /proc).

Run: nice -n 10 .venv/bin/python benchmarks/postgres_new_store.py --before-src /work/wt/before [--runs 20]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, os, statistics, sys, time
import psycopg
from agentcontext.store.postgres import PostgresStore
url, runs, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def server_cpu(pid):  # the backend's user + system CPU seconds (clock ticks in /proc/<pid>/stat)
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
walls, cpus, servers = [], [], []
PostgresStore(f"{url}?schema={tag}_warm").close()  # imports and the first connection out of the figure
for i in range(runs):
    t, c = time.perf_counter(), time.process_time()
    store = PostgresStore(f"{url}?schema={tag}_{i}")
    walls.append(time.perf_counter() - t)
    cpus.append(time.process_time() - c)
    servers.append(server_cpu(store._db.info.backend_pid))
    store.close()
print(json.dumps({"wall": statistics.median(walls), "wall_min": min(walls), "wall_max": max(walls),
                  "client_cpu": statistics.median(cpus), "server_cpu": statistics.median(servers),
                  "version": PostgresStore.MIGRATIONS.latest}))
"""


def run(src: Path, url: str, runs: int, tag: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", CHILD, url, str(runs), tag], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from benchmarks._util import before_tree, report
    from tests.pg_server import PgServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    server = PgServer().start()
    try:
        url = server.url(None)
        before = run(before_tree(args.before_src), url, args.runs, "before")
        after = run(ROOT / "src", url, args.runs, "after")
    finally:
        server.stop()
    figures = {"runs": args.runs, "before": before, "after": after,
               "wall_ratio": round(after["wall"] / before["wall"], 3),
               "server_cpu_ratio": round(after["server_cpu"] / max(before["server_cpu"], 1e-9), 3),
               "note": "a new store's open, median of runs; server_cpu: the backend's CPU for the whole open"}
    report("postgres_new_store", figures)


if __name__ == "__main__":
    main()
