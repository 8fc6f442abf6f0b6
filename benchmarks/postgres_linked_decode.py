"""The client's CPU for the ranking's linked reads (``nodes_linked(fields=)``, issue 23 s3) with the props it reads
held as columns (schema 16, store/pg_props.py) against the props text parsed (schema 15), measured in one process on
two copies of the same ``postgres_scale.py`` store: ``--before-data`` at schema 15 (read through a store pinned
there), ``--data`` at 16. The same random seed ids a call (95, about a query's text and dense seeds), the rows fetched
once for the decode and again for the fetch; the two codes' timings interleaved ``--rounds`` times, min and median
of the process CPU a call (``time.process_time``): the decode (``pg_search._linked``: rows into nodes) and the fetch
(the statement's rows through the driver, the server's time included: the wire waits too).
Run: nice -n 10 .venv/bin/python benchmarks/postgres_linked_decode.py --data DIR16 --before-data DIR15
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

FIELDS = ["prev", "pair_hash", "created_at", "conversation_id", "user_id"]  # memory/server_search.py FIELDS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="the store at schema 16")
    parser.add_argument("--before-data", type=Path, required=True, help="a copy at schema 15")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    from agentcontext.store import open_store, pg_props, pg_search
    from agentcontext.store.migrations import Migrations
    from agentcontext.store.pg_sql import linked_sql
    from agentcontext.store.postgres import PostgresStore

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", [m for m in PostgresStore.MIGRATIONS if m.version <= 15])
        READ_AHEAD = False

    a = PgServer(root=args.before_data / "cluster", options=SERVER).start()
    b = PgServer(root=args.data / "cluster", options=SERVER).start()
    try:
        old, new = Before(a.url("scale")), open_store(b.url("scale"))
        assert not old._pc and new._pc, "--before-data must be at schema 15 and --data at 16"
        ns = new._read("SELECT namespace FROM nodes WHERE kind = 'memory' LIMIT 1")[0][0]
        ids = [r[0] for r in new._read("SELECT id FROM nodes WHERE kind = 'memory' ORDER BY rid")]
        rng = random.Random(3)
        sets = [[ids[rng.randrange(len(ids))] for _ in range(95)] for _ in range(args.calls)]

        def fetch(store: Any, moved: tuple) -> list:
            return [store._read(linked_sql("prev", FIELDS, True, moved), {"ids": s, "ns": ns, "kind": "memory"})
                    for s in sets]

        before_rows, rows = fetch(old, ()), fetch(new, pg_props.MOVED)
        same = [[(n.id, n.props) for n in pg_search._linked(r, FIELDS, True, False)[1]] for r in before_rows] == \
            [[(n.id, n.props) for n in pg_search._linked(r, FIELDS, True, True)[1]] for r in rows]
        steps = {"decode, schema 15": lambda: [pg_search._linked(r, FIELDS, True, False) for r in before_rows],
                 "decode, schema 16": lambda: [pg_search._linked(r, FIELDS, True, True) for r in rows],
                 "fetch, schema 15": lambda: fetch(old, ()), "fetch, schema 16": lambda: fetch(new, pg_props.MOVED)}
        times: dict[str, list[float]] = {k: [] for k in steps}
        for _ in range(args.rounds):
            for name, step in steps.items():
                t = time.process_time()
                step()
                times[name].append((time.process_time() - t) * 1000 / args.calls)
        old.close()
        new.close()
    finally:
        a.stop()
        b.stop()
    figures: dict[str, Any] = {
        "calls": args.calls, "rows a call": round(sum(len(r) for r in rows) / args.calls, 1),
        "the same followers and props": same, "note": "busy shared 2-core machine; process CPU ms a call",
        "ms a call (min, median)": {k: [round(min(v), 3), round(statistics.median(v), 3)] for k, v in times.items()}}
    both = {s: [sum(min(times[f"{p}, schema {s}"]) for p in ("decode", "fetch")),
                sum(statistics.median(times[f"{p}, schema {s}"]) for p in ("decode", "fetch"))] for s in (15, 16)}
    figures["decode + fetch (min, median)"] = {f"schema {s}": [round(x, 3) for x in v] for s, v in both.items()}
    figures["ratio 16 / 15 (min, median)"] = [round(both[16][i] / both[15][i], 3) for i in (0, 1)]
    report("postgres_linked_decode_200000", figures)


if __name__ == "__main__":
    main()
