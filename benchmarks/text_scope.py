"""What ranking with the searched namespaces' statistics costs (store/sqlite_text.py): memory retrieve at 100,000
memories on SQLite, the store alone in its namespace (FTS5's one statement, as before) and beside another namespace
(the scoped path), against the previous ranking (the whole table's statistics: FTS5's statement) in the same run.

Run: .venv/bin/python benchmarks/text_scope.py [--memories 100000] [--others 10000] [--queries 60]
     .venv/bin/python benchmarks/text_scope.py --postgres [--memories 20000] [--others 5000]  (text_search on the
     embedded test server, tests/pg_server.py: the previous ranking is the whole table's statistics there too)
Prints p50 / p95 of ``retrieve`` (distinct queries, each embedded once before it is timed) and of ``text_search``
alone, the ratio to the baseline, and the first retrieve after a write in the other namespace (the remembered
namespace rows follow the change log: store/sqlite_text.py ScopeStats)."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory
from agentcontext.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from memory import NAMES, OBJECTS, PLACES, RELATIONS, facts, unit_vectors  # noqa: E402


def fill(mem: AgentMemory, n: int, seed: int) -> None:
    step = 20000
    for start in range(0, n, step):
        m = min(step, n - start)
        mem.batch_store([{"content": t, "vector": v}
                         for t, v in zip(facts(m, seed + start), unit_vectors(m, seed + start))])


def queries(count: int, offset: int) -> list[str]:
    """Queries naming a person and a day (words in under 1% of the memories, which retrieve searches by keyword;
    the others are in over 1% at 20,000 memories and more, engine/fusion.py keyword_query, and only text_search
    alone is asked them)."""
    return [f"{NAMES[(i * 11) % len(NAMES)]} {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 7) % len(OBJECTS)]} "
            f"near {PLACES[(i * 3) % len(PLACES)]} on day {1 + (i * 37) % 365}" for i in range(offset, offset + count)]


def timings(pairs, qs: list[str]) -> list[dict[str, float]]:
    """p50 / p95 of each of ``pairs``' callables over ``qs``, the callables taking turns query by query (so
    neither gets a warmer cache or a quieter machine), after one unmeasured call per query."""
    lat: list[list[float]] = [[] for _ in pairs]
    for q in qs:
        pairs[-1](q)  # unmeasured: the query's embedding is cached for both
        for i, fn in enumerate(pairs):
            t = time.perf_counter()
            fn(q)
            lat[i].append((time.perf_counter() - t) * 1000)
    return [{"p50_ms": statistics.median(x), "p95_ms": float(np.percentile(x, 95))} for x in lat]


def previous_ranking(store):
    """The ranking before this change: FTS5's bm25() with the whole table's statistics, whatever namespaces exist."""
    from agentcontext.store.rows import as_list
    from agentcontext.text import query_terms

    def text_search(query, namespace=None, kind=None, limit=50, common=None, ids=None):
        terms = query_terms(query)
        if not terms or (ids is not None and not ids):
            return []
        return store._text._table_search(store._text._informative_terms(terms, common), as_list(namespace), kind, limit,
                                         ids)
    return text_search


def measure(mem: AgentMemory, qs: list[str], label: str, out: dict) -> None:
    store = mem.workspace.store
    scoped, previous = store.text_search, previous_ranking(store)

    def retrieve_with(search):
        def run(q):
            store.text_search = search
            try:
                mem.retrieve(q, max_results=10)
            finally:
                del store.text_search
        return run

    new, old = timings([retrieve_with(scoped), retrieve_with(previous)], qs)
    out[f"{label}_retrieve"], out[f"{label}_retrieve_baseline"] = new, old
    new, old = timings([lambda q: scoped(q, namespace=mem.namespace, kind="memory", limit=1000),
                        lambda q: previous(q, namespace=mem.namespace, kind="memory", limit=1000)], qs)
    out[f"{label}_text_search"], out[f"{label}_text_search_baseline"] = new, old


def postgres(args) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from agentcontext.model import Node
    from agentcontext.store import open_store
    from tests.pg_server import PgServer

    def nodes(namespace: str, n: int, seed: int) -> list:
        return [Node(id=f"{namespace}/m{seed}-{i}", kind="memory", namespace=namespace, content=t)
                for i, t in enumerate(facts(n, seed))]

    server = PgServer().start()
    out: dict = {"backend": "postgresql", "memories": args.memories, "others": args.others, "queries": args.queries}
    try:
        store = open_store(server.url("text_scope"))
        for start in range(0, args.memories, 5000):
            store.put_nodes(nodes("memory:default", min(5000, args.memories - start), 100 + start))
        store._db.execute("ANALYZE nodes")
        search = store.text_search
        out["alone_text_search"] = timings([lambda q: search(q, namespace="memory:default", kind="memory",
                                                             limit=200)], queries(args.queries, 0))[0]
        store.put_nodes(nodes("memory:other", args.others, 10**6))
        store._db.execute("ANALYZE nodes")

        def with_scope(flag):
            def run(q):
                if not flag:  # the previous ranking: the whole table's statistics
                    store._text._text_scope = lambda namespace: None
                try:
                    search(q, namespace="memory:default", kind="memory", limit=200)
                finally:
                    if not flag:
                        del store._text._text_scope
            return run
        new, old = timings([with_scope(True), with_scope(False)], queries(args.queries, 1000))
        out["beside_text_search"], out["beside_text_search_baseline"] = new, old
        out["beside_text_search_ratio"] = new["p50_ms"] / old["p50_ms"]
        store.close()
    finally:
        server.stop()
    print(f"PostgreSQL (embedded test server): {args.memories} memories in memory:default, then {args.others} in "
          f"memory:other; {args.queries} distinct queries")
    a, n, o = out["alone_text_search"], out["beside_text_search"], out["beside_text_search_baseline"]
    print(f"alone  text_search p50 {a['p50_ms']:7.1f} ms  p95 {a['p95_ms']:7.1f} ms")
    print(f"beside text_search p50 {n['p50_ms']:7.1f} ms  p95 {n['p95_ms']:7.1f} ms   previous ranking p50 "
          f"{o['p50_ms']:7.1f} ms  p95 {o['p95_ms']:7.1f} ms   ratio {n['p50_ms'] / o['p50_ms']:.2f}")
    report("text_scope_postgres", out, quiet=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=None, help="default 100,000 (SQLite), 20,000 (--postgres)")
    ap.add_argument("--others", type=int, default=None, help="memories of the other namespace (10,000 / 5,000)")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--postgres", action="store_true", help="text_search on the embedded PostgreSQL test server")
    args = ap.parse_args()
    if args.postgres:
        args.memories = args.memories or 20_000
        args.others = args.others or 5_000
        return postgres(args)
    args.memories = args.memories or 100_000
    args.others = args.others or 10_000
    out: dict = {"memories": args.memories, "others": args.others, "queries": args.queries}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.open(home=Path(tmp) / ".agentcontext", create=True)
        mem = AgentMemory(workspace=ws, max_memory_size=10**7)
        fill(mem, args.memories, 100)
        mem.retrieve("warm up the index", max_results=5)
        measure(mem, queries(args.queries, 0), "alone", out)
        other = AgentMemory(workspace=ws, max_memory_size=10**7, namespace="other")
        fill(other, args.others, 10**6)
        firsts = []
        for i, q in enumerate(queries(5, 500)):  # a write elsewhere, then a query (a new query: embedded in the time)
            other.batch_store([{"content": f"another note {i}", "vector": unit_vectors(1, i)[0]}])
            t = time.perf_counter()
            mem.retrieve(q, max_results=10)
            firsts.append((time.perf_counter() - t) * 1000)
        out["beside_first_after_write_ms"] = statistics.median(firsts)
        measure(mem, queries(args.queries, 1000), "beside", out)
        ws.close()
    print(f"{args.memories} memories in memory:default; beside: {args.others} more in memory:other; "
          f"{args.queries} distinct queries each")
    for label in ("alone", "beside"):
        for what in ("retrieve", "text_search"):
            new, old = out[f"{label}_{what}"], out[f"{label}_{what}_baseline"]
            out[f"{label}_{what}_ratio"] = new["p50_ms"] / old["p50_ms"]
            print(f"{label:6s} {what:11s} p50 {new['p50_ms']:7.1f} ms  p95 {new['p95_ms']:7.1f} ms   previous "
                  f"ranking p50 {old['p50_ms']:7.1f} ms  p95 {old['p95_ms']:7.1f} ms   "
                  f"ratio {new['p50_ms'] / old['p50_ms']:.2f}")
    print("beside: first retrieve after a write in the other namespace (the remembered rows follow the change "
          f"log) p50 {out['beside_first_after_write_ms']:.1f} ms")
    report("text_scope", out, quiet=True)


if __name__ == "__main__":
    main()
