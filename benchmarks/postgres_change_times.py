"""The change log's time as a timestamp (migration 17, store/pg_changes.py): what it costs the writes and reads of the
log, beside the step before (a store pinned to schema 16) in the same run on the same server, as ratios.

Each round, in a fresh schema of each: ``import_rows("changes")`` of ``--rows`` rows (the bulk path a build and
``migrate`` take: COPY, the key built after the rows), ``put_nodes`` of 1,000 nodes in 20 calls (the row path: one
change row a node), ``changes_since`` of the last 1,000 rows (20 reads), and the table's bytes a row.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_change_times.py [--rows 200000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.model import Node, utcnow  # noqa: E402
from agentcontext.store.migrations import Migrations  # noqa: E402
from agentcontext.store.postgres import PostgresStore  # noqa: E402


class Before(PostgresStore):
    """The store pinned to the step before migration 17."""

    MIGRATIONS = Migrations("postgresql", [m for m in PostgresStore.MIGRATIONS if m.apply.__name__ != "change_times"])
    READ_AHEAD = False


def one(cls: type, url: str, rows: int) -> dict[str, Any]:
    store = cls(url, prewarm=False, warm_up=False)
    at = utcnow()
    batch = [{"seq": i + 1, "at": at, "actor": "bench", "op": "node.put", "target": f"mem_{i:08d}",
              "namespace": "memory:bench", "detail": '{"version": 1, "kind": "memory"}'} for i in range(rows)]
    t = time.perf_counter()
    store.import_rows("changes", [batch[i: i + 5000] for i in range(0, rows, 5000)])
    imported = time.perf_counter() - t
    t = time.perf_counter()
    for c in range(20):
        store.put_nodes([Node(id=f"n{c}_{i}", kind="memory", namespace="bench", content=f"fact {c} {i}")
                         for i in range(50)])
    put = time.perf_counter() - t
    last = store.change_counter()
    t = time.perf_counter()
    for _ in range(20):
        assert len(store.changes_since(last - 1000)) == 1000
    read = time.perf_counter() - t
    size = store._read("SELECT pg_relation_size('changes'), count(*) FROM changes")[0]
    store.close()
    return {"import s": imported, "put_nodes s": put, "changes_since ms": read / 20 * 1000,
            "bytes a row": size[0] / size[1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = PgServer().start()
    runs: dict[str, list[dict[str, Any]]] = {"schema 17": [], "schema 16": []}
    try:
        for r in range(args.rounds):  # alternating, each round's order swapped
            order = [("schema 17", PostgresStore), ("schema 16", Before)]
            for name, cls in (order if r % 2 == 0 else order[::-1]):
                runs[name].append(one(cls, server.url(), args.rows))
    finally:
        server.stop()
    medians = {name: {k: round(statistics.median(x[k] for x in got), 2) for k in got[0]} for name, got in runs.items()}
    ratios = {k: round(medians["schema 17"][k] / medians["schema 16"][k], 3) for k in medians["schema 17"]}
    report(f"postgres_change_times_{args.rows}", {"rows": args.rows, "rounds": args.rounds, "medians": medians,
                                                  "ratio (17 / 16)": ratios, "runs": runs})


if __name__ == "__main__":
    main()
