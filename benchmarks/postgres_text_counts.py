"""What keeping BM25's counts exact costs a write (issue 23 s3, migration 14, store/pg_text_counts.py): the same
batches written with the counts' triggers on and off, alternating (on, off, off, on per round), on a fresh store of
``--base`` LoCoMo-like memories (each mixes a turn and fragments of two more, as ``postgres_scale.py`` makes them);
each write inside a transaction that is rolled back, so every run meets the same store. Timed: ``put_nodes`` of
``--memories`` new memories in batches of 1,000 (inserts), the same number's text rewritten (updates), and as many
retracted. Printed: seconds a run (median), on / off, and the counts tables' bytes a memory.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_text_counts.py [--base 50000] [--memories 5000] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import LOCOMO  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.eval_locomo import turn_text, turns  # noqa: E402
from agentcontext.model import Node  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.store.pg_text_counts import EVENTS  # noqa: E402

BATCH = 1000


class RolledBack(Exception):
    pass


def memories(texts: list[str], start: int, n: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        a, b, c = (rng.randrange(len(texts)) for _ in range(3))
        out.append(Node(id=f"mem_{i:08d}", kind="memory", namespace="scale",
                        content=f"{texts[a]} {texts[b][:60]} {texts[c][:60]}"))
    return out


def timed_run(store, texts: list[str], base: int, n: int, seed: int) -> dict[str, float]:
    spent: dict[str, float] = {}
    try:
        with store.transaction():
            t = time.perf_counter()
            for s in range(0, n, BATCH):
                store.put_nodes(memories(texts, base + s, min(BATCH, n - s), seed + s))
            spent["insert"] = time.perf_counter() - t
            t = time.perf_counter()
            for s in range(0, n, BATCH):
                store.put_nodes(memories(texts, s, min(BATCH, n - s), seed + 7 + s))
            spent["update"] = time.perf_counter() - t
            t = time.perf_counter()
            store.retract_nodes([f"mem_{i:08d}" for i in range(n, 2 * n)])
            spent["retract"] = time.perf_counter() - t
            raise RolledBack
    except RolledBack:
        pass
    return spent


def triggers(store, on: bool) -> None:
    with store.transaction():
        for event in EVENTS:
            store._db.execute(f"ALTER TABLE nodes {'ENABLE' if on else 'DISABLE'} TRIGGER "
                              f"actx_text_counts_{event.lower()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=int, default=50_000)
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    texts = [turn_text(t) for s in json.loads(LOCOMO.read_text()) for t in turns(s)]
    server = PgServer().start()
    load_before = os.getloadavg()
    try:
        store = open_store(server.url("counts_cost"))
        for s in range(0, args.base, 5000):
            store.put_nodes(memories(texts, s, min(5000, args.base - s), s))
        store._db.execute("VACUUM ANALYZE")
        runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
        for r in range(args.rounds):
            for state in ("on", "off", "off", "on"):
                triggers(store, state == "on")
                runs[state].append(timed_run(store, texts, args.base, args.memories, 1000 * r))
        triggers(store, True)
        sizes = store._read("SELECT pg_total_relation_size('text_counts'), pg_total_relation_size('text_totals'), "
                            "(SELECT count(*) FROM text_counts), pg_total_relation_size('nodes')")[0]
        store.close()
    finally:
        server.stop()
    figures: dict = {"base memories": args.base, "memories a run": args.memories, "rounds": args.rounds,
                     "note": "busy shared 2-core machine; each run rolled back; triggers on / off alternating",
                     "load_average before / after": [[round(x, 2) for x in load_before],
                                                     [round(x, 2) for x in os.getloadavg()]]}
    for what in ("insert", "update", "retract"):
        on = statistics.median(x[what] for x in runs["on"])
        off = statistics.median(x[what] for x in runs["off"])
        figures[what] = {"s on (median)": round(on, 3), "s off (median)": round(off, 3),
                         "runs on": [round(x[what], 3) for x in runs["on"]],
                         "runs off": [round(x[what], 3) for x in runs["off"]], "ratio on / off": round(on / off, 3)}
    figures["text_counts bytes a memory"] = round(sizes[0] / args.base, 1)
    figures["text_counts rows a memory"] = round(sizes[2] / args.base, 2)
    figures["nodes bytes a memory (for scale)"] = round(sizes[3] / args.base, 1)
    report(f"postgres_text_counts_{args.base}", figures)


if __name__ == "__main__":
    main()
