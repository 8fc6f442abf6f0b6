"""Issue 29's cost targets, one run: one ``store()`` with its embedding (p50, target <= 12 ms without a reranker;
benchmarks/writes.py ``single_stores``, whose figure the issue quotes: 3.95 ms) and ``retrieve`` at 10,000 memories
(p50, target <= 50 ms without a reranker), memory search as shipped beside the same search without the answer stage
(``FusionWeights(answer=0)``, memory/answers.py: main before issue 29), the two interleaved query by query on one
store so a busy machine slows both alike.

Run: nice -n 10 .venv/bin/python benchmarks/memory_cost.py [--stores 200] [--queries 60] [--repeats 3]
                                                            [--models minilm,e5-small,mpnet]
With ``--models``, each registered embedding model (embed/models.py; MiniLM first, the baseline) as the workspaces'
model (``AGENTCONTEXT_EMBED_MODEL`` for the new stores), its figures beside MiniLM's, as ratios, one run: store()
p50 by the loop below (writes.py ``single_stores``' own part, without its other engines), retrieve at 10,000 with
supplied vectors of the model's dimension.
The retrieve store: 10,000 facts with supplied vectors (benchmarks/memory.py ``facts``), distinct queries, each
embedded in the measured call. Each figure is the median over ``--repeats`` runs (each run's printed too).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import OBJECTS, PLACES, RELATIONS, facts, fresh  # noqa: E402

from agentcontext.embed.models import ENV, MINILM, load_model, spec_of  # noqa: E402
from writes import single_stores  # noqa: E402

from agentcontext.engine import rerank as reranking  # noqa: E402
from agentcontext.memory.bridge import BRIDGE  # noqa: E402
from agentcontext.memory.records import memory_text  # noqa: E402
from agentcontext.model import content_hash  # noqa: E402

STORE_TARGET_MS, RETRIEVE_TARGET_MS = 12.0, 50.0


def retrieves(folder: Path, n: int, queries: int, dim: int = 384, learned: bool = False,
              facets: bool = False, bridge: bool = False, rerank: bool = False) -> dict[str, float]:
    """p50 ms of ``retrieve`` (k 10) at ``n`` memories, shipped and without the answer stage (and with ``learned`` the
    learned ranker, engine/ltr.py; with ``facets`` ``ranker="facets"``, memory/facet_search.py, on a question of two
    clauses, so three searches: the question's and its two clauses'; with ``bridge`` the bridge stage on,
    memory/bridge.py, and with ``learned`` too both; with ``rerank`` the reranker on, engine/rerank.py, after the linear
    fusion and after the learned ranker: the memories' reranking vectors supplied as benchmarks/rerank_cost.py does, so
    the steady state), interleaved."""
    mem = fresh(folder, "retrieve")
    for start in range(0, n, 20000):
        m = min(20000, n - start)
        mem.batch_store([{"content": t, "vector": v} for t, v in zip(facts(m, 100 + start), plain_dim(m, start, dim))])
    if rerank:
        ranker = reranking.reranker()
        for start in range(0, n, 20000):
            m = min(20000, n - start)
            mem.db.put_vectors({content_hash(memory_text("", t)): v for t, v in
                                zip(facts(m, 100 + start), plain_dim(m, start + 7, ranker.dimension))}, ranker.name)
        mem.rerank = True
        mem.retrieve("warm up the reranking model", max_results=5)  # loaded once, outside the timings
        mem.rerank = False
    mem.retrieve("warm up the index", max_results=5)
    shipped, before = mem.weights, replace(mem.weights, answer=0.0)
    runs = (("shipped", shipped), ("before", before)) + ((("learned", shipped),) if learned else ()) \
        + ((("facets", shipped),) if facets else ()) \
        + ((("bridge", replace(shipped, bridge=BRIDGE)),) if bridge else ()) \
        + ((("learned+bridge", replace(shipped, bridge=BRIDGE)),) if learned and bridge else ()) \
        + ((("rerank", shipped),) if rerank else ()) + ((("learned+rerank", shipped),) if rerank and learned else ())
    lat: dict[str, list[float]] = {name: [] for name, _ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, _ in runs}  # the process's CPU a call (a busy machine)
    for i in range(queries):
        q = (f"who {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 7) % len(OBJECTS)]} "
             f"near {PLACES[(i * 3) % len(PLACES)]}")
        for name, weights in runs[:: 1 if i % 2 else -1]:
            mem.weights = weights
            mem.ranker = name.split("+")[0] if name.split("+")[0] in ("learned", "facets") else "linear"
            mem.rerank = name.endswith("rerank")
            asked = f"{q} ({name})" if name != "facets" else \
                f"{q} and what {RELATIONS[(i * 5) % len(RELATIONS)]} the {OBJECTS[(i * 3) % len(OBJECTS)]}"
            t, c = time.perf_counter(), time.process_time()
            mem.retrieve(asked, max_results=10)  # distinct: the query embedding is part of each call
            lat[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.process_time() - c) * 1000)
    mem.workspace.close()
    return {**{name: statistics.median(v) for name, v in lat.items()},
            **{f"{name}_cpu": statistics.median(v) for name, v in cpu.items()}}


def store_p50(folder: Path, count: int, places: bool = False) -> float:
    """p50 ms of one ``store()`` with its embedding (distinct texts, the model warm), as writes.py measures it;
    ``places``: with the place glosses (memory/places.py; the facts name cities: "... near Lisbon")."""
    texts = [f"{t} (entry {i})" for i, t in enumerate(facts(count + 10, 77))]
    mem = fresh(folder, "single-places" if places else "single")
    mem.places = places
    for t in texts[:10]:
        mem.store(t)
    lat = []
    for t in texts[10:]:
        started = time.perf_counter()
        mem.store(t)
        lat.append((time.perf_counter() - started) * 1000)
    mem.workspace.close()
    return statistics.median(lat)


def embedding_alone(model: object, count: int) -> tuple[float, float]:
    """p50 ms of the model alone on one stored text and on one query (distinct texts): the part of store() and of
    retrieve that is the embedding (the rest: the store's write, the search and fusion)."""
    texts = [f"{t} (entry {i})" for i, t in enumerate(facts(count, 91))]
    stored, asked = [], []
    for i, t in enumerate(texts):
        started = time.perf_counter()
        model.embed([t])  # type: ignore[attr-defined]
        stored.append((time.perf_counter() - started) * 1000)
        q = f"who {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 5) % len(OBJECTS)]} ({i})"
        started = time.perf_counter()
        getattr(model, "embed_query", lambda x: model.embed([x]))(q)  # type: ignore[attr-defined]
        asked.append((time.perf_counter() - started) * 1000)
    return statistics.median(stored), statistics.median(asked)


def by_model(models: list[str], args: argparse.Namespace) -> None:
    """store() p50 and retrieve p50 at 10,000 with each model as the workspaces' model, medians of the repeats."""
    rows: dict[str, tuple[float, float, list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            os.environ[ENV] = name
            dim = spec_of(name).dimension
            model = load_model(name)  # loaded once, outside the timings
            stores, gets = [], []
            for r in range(args.repeats):
                alone = embedding_alone(model, args.stores)
                print(f"{name} run {r + 1}: embedding alone p50: a stored text {alone[0]:.2f} ms, a query "
                      f"{alone[1]:.2f} ms", flush=True)
                folder = Path(tmp) / f"{name}-{r}"
                folder.mkdir()
                stores.append(store_p50(folder, args.stores))
                gets.append(retrieves(folder, 10000, args.queries, dim)["shipped"])
                print(f"{name} run {r + 1}: store() p50 {stores[-1]:.2f} ms, retrieve p50 at 10,000 {gets[-1]:.1f} ms",
                      flush=True)
            rows[name] = (statistics.median(stores), statistics.median(gets), stores, gets)
    os.environ.pop(ENV, None)
    base = rows[models[0]]
    print(f"\n{'model':28} {'store p50 ms':>14} {'(runs)':>14} {'x':>6} {'retrieve@10k ms':>16} {'(runs)':>14} "
          f"{'x':>6}")
    for name, (s, q, ss, qq) in rows.items():
        print(f"{name:28} {s:>14.2f} {min(ss):>6.1f}-{max(ss):<7.1f} {s / base[0]:>6.2f} {q:>16.1f} "
              f"{min(qq):>6.1f}-{max(qq):<7.1f} {q / base[1]:>6.2f}")
    print(f"targets: store <= {STORE_TARGET_MS:.0f} ms, retrieve <= {RETRIEVE_TARGET_MS:.0f} ms; figures on a shared "
          f"2-core machine (load average {np.round(os.getloadavg(), 1).tolist()})")


def plain_dim(n: int, seed: int, dim: int) -> np.ndarray:
    """Random unit vectors (benchmarks/memory.py ``unit_vectors`` at 384 dims: the same ones)."""
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="", help="compare these registered embedding models (comma-separated)")
    ap.add_argument("--learned", action="store_true", help="also retrieve with the learned ranker (engine/ltr.py)")
    ap.add_argument("--facets", action="store_true",
                    help="also retrieve with ranker='facets' (memory/facet_search.py) on two-clause questions")
    ap.add_argument("--bridge", action="store_true", help="also retrieve with the bridge stage (memory/bridge.py)")
    ap.add_argument("--retrieve-only", action="store_true", help="skip the store() figure")
    ap.add_argument("--places", action="store_true",
                    help="also store() with the place glosses on (AgentMemory(places=True), memory/places.py)")
    args = ap.parse_args()
    if args.models:
        names = [spec_of(m).name for m in args.models.split(",") if m.strip()]
        by_model([MINILM, *[n for n in names if n != MINILM]], args)
        return
    stores, embeds, shipped, before, learned, cpu, faceted, placed = [0.0], [0.0], [], [], [], [], [], []
    bridged: list[float] = []
    if not args.retrieve_only:
        stores, embeds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            folder = Path(tmp) / f"run{r}"
            folder.mkdir()
            if not args.retrieve_only:
                single = single_stores(folder, args.stores)
                stores.append(single["ours"]["p50_ms"])
                embeds.append(single["embedding_alone"]["p50_ms"])
                if args.places:
                    placed.append(store_p50(folder, args.stores, places=True))
                    print(f"run {r + 1}: store() p50 with the place glosses {placed[-1]:.2f} ms", flush=True)
            got = retrieves(folder, 10000, args.queries, learned=args.learned, facets=args.facets, bridge=args.bridge)
            if args.bridge:
                bridged.append(got["bridge"])
                print(f"run {r + 1}: retrieve p50 at 10,000 with the bridge stage {bridged[-1]:.1f} ms "
                      f"(shipped {got['shipped']:.1f} ms)", flush=True)
            if "learned+bridge" in got:
                print(f"run {r + 1}: retrieve p50 at 10,000 with the learned ranker over the bridge stage "
                      f"{got['learned+bridge']:.1f} ms", flush=True)
            if args.facets:
                faceted.append(got["facets"])
                print(f"run {r + 1}: retrieve p50 at 10,000 with the facets (two-clause questions) "
                      f"{faceted[-1]:.1f} ms", flush=True)
            shipped.append(got["shipped"])
            before.append(got["before"])
            if args.learned:
                learned.append(got["learned"])
                cpu.append((got["shipped_cpu"], got["learned_cpu"]))
                print(f"run {r + 1}: retrieve p50 at 10,000 with the learned ranker {learned[-1]:.1f} ms (CPU p50 "
                      f"{cpu[-1][1]:.1f} ms, the linear's {cpu[-1][0]:.1f} ms)", flush=True)
            stored = "" if args.retrieve_only else \
                f"store() p50 {stores[-1]:.2f} ms (its embedding alone {embeds[-1]:.2f} ms); "
            print(f"run {r + 1}: {stored}retrieve p50 at 10,000 {shipped[-1]:.1f} ms (without the answer stage "
                  f"{before[-1]:.1f} ms)", flush=True)
    s, q, b = statistics.median(stores), statistics.median(shipped), statistics.median(before)
    if not args.retrieve_only:
        print(f"store() with embedding p50 {s:.2f} ms (runs {min(stores):.2f}-{max(stores):.2f}; embedding alone "
              f"{statistics.median(embeds):.2f} ms; target <= {STORE_TARGET_MS:.0f} ms: "
              f"{'met' if s <= STORE_TARGET_MS else 'missed'})")
    print(f"retrieve p50 at 10,000 memories {q:.1f} ms (runs {min(shipped):.1f}-{max(shipped):.1f}; without the "
          f"answer stage {b:.1f} ms, ratio {q / b:.2f}; target <= {RETRIEVE_TARGET_MS:.0f} ms: "
          f"{'met' if q <= RETRIEVE_TARGET_MS else 'missed'})")
    if bridged:
        m = statistics.median(bridged)
        print(f"retrieve p50 at 10,000 memories with the bridge stage {m:.1f} ms (runs {min(bridged):.1f}-"
              f"{max(bridged):.1f}; ratio to shipped {m / q:.2f}; target <= {RETRIEVE_TARGET_MS:.0f} ms: "
              f"{'met' if m <= RETRIEVE_TARGET_MS else 'missed'})")
    if placed:
        m = statistics.median(placed)
        print(f"store() with embedding and the place glosses p50 {m:.2f} ms (runs {min(placed):.2f}-{max(placed):.2f}; "
              f"ratio to without {m / s:.2f}; target <= {STORE_TARGET_MS:.0f} ms: "
              f"{'met' if m <= STORE_TARGET_MS else 'missed'})")
    if learned:
        m = statistics.median(learned)
        print(f"retrieve p50 at 10,000 memories with the learned ranker {m:.1f} ms (runs {min(learned):.1f}-"
              f"{max(learned):.1f}; ratio to the linear {m / q:.2f}; target <= {RETRIEVE_TARGET_MS:.0f} ms: "
              f"{'met' if m <= RETRIEVE_TARGET_MS else 'missed'}); the process's CPU a retrieve p50 "
              f"{statistics.median(c[1] for c in cpu):.1f} ms vs the linear's "
              f"{statistics.median(c[0] for c in cpu):.1f} ms")
    if faceted:
        m = statistics.median(faceted)
        print(f"retrieve p50 at 10,000 memories with the facets {m:.1f} ms (runs {min(faceted):.1f}-"
              f"{max(faceted):.1f}; ratio to the linear {m / q:.2f}; target <= {RETRIEVE_TARGET_MS:.0f} ms: "
              f"{'met' if m <= RETRIEVE_TARGET_MS else 'missed'})")
    print(f"figures on a shared 2-core machine (load average {np.round(os.getloadavg(), 1).tolist()})")


if __name__ == "__main__":
    main()
