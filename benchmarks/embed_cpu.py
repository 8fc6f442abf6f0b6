"""CPU time of one text's embedding (a store() or a new query), per registered model: on a machine shared by many
processes the wall time of a call measures the queue as much as the model, the process's CPU time (every thread's)
much less so.

    nice -n 10 .venv/bin/python benchmarks/embed_cpu.py [--models minilm,e5-small,mpnet] [--runs 15]

Prints, per model, the median CPU ms and wall ms of one stored text's and one query's embedding (distinct texts, the
model loaded and warmed first) beside MiniLM's, as ratios.
"""
from __future__ import annotations

import argparse
import statistics
import time

from agentcontext.embed.models import MINILM, QueryEmbedder, load_model, spec_of


def one(fn, text: str) -> tuple[float, float]:
    c, w = time.process_time(), time.perf_counter()
    fn(text)
    return (time.process_time() - c) * 1000, (time.perf_counter() - w) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="minilm,e5-small")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    names = [MINILM] + [n for n in (spec_of(m).name for m in args.models.split(",") if m.strip()) if n != MINILM]
    rows = {}
    for name in names:
        e = load_model(name)
        e.embed(["warm up the model"])
        query = e.embed_query if isinstance(e, QueryEmbedder) else (lambda t, e=e: e.embed([t])[0])
        store = [one(lambda t, e=e: e.embed([t]), f"Melanie took the kids swimming at the lake on day {i} of {name}.")
                 for i in range(args.runs)]
        ask = [one(query, f"What did Melanie do with the kids on day {i}?") for i in range(args.runs)]
        rows[name] = [statistics.median(x[j] for x in s) for s in (store, ask) for j in (0, 1)]
        print(f"{name}: stored text CPU {rows[name][0]:.1f} ms (wall {rows[name][1]:.1f}), query CPU "
              f"{rows[name][2]:.1f} ms (wall {rows[name][3]:.1f})", flush=True)
    base = rows[MINILM]
    for name, r in rows.items():
        print(f"{name:28} store CPU {r[0]:7.1f} ms ({r[0] / base[0]:5.2f}x)   query CPU {r[2]:7.1f} ms "
              f"({r[2] / base[2]:5.2f}x)")


if __name__ == "__main__":
    main()
