"""Memory benchmark (issue 4): batch_store with/without embeddings, per-item cost curve, retrieve at 100k.

Run: .venv/bin/python benchmarks/memory.py [--quick]
Prints medians of several runs and, when the optional ``semantica`` package is importable, the same
workload through semantica's AgentContext with the ratio. Numbers on a shared 2-core machine vary.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory, VectorStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402

NAMES = [f"{a}{b}" for a in ("Al", "Be", "Ca", "Da", "El", "Fa", "Gi", "Ha", "Io", "Ju", "Ka", "Le", "Mi", "No",
                             "Ol", "Pa", "Qu", "Ro", "Sa", "Ta") for b in ("ra", "ton", "mir", "vex", "lio", "dan",
                                                                          "sha", "rik", "belle", "mond", "zo", "pen")]
RELATIONS = ["bought", "repaired", "painted", "lost", "found", "sold", "borrowed", "photographed", "cooked",
             "designed", "built", "returned", "ordered", "planted", "cleaned", "shipped", "tested", "wrote about",
             "recommended", "reviewed", "visited", "booked", "cancelled", "shared", "measured"]
OBJECTS = [f"{adj} {noun}" for adj in ("red", "old", "tiny", "golden", "broken", "wooden", "electric", "vintage",
                                       "striped", "heavy", "quiet", "bright", "rusty", "paper", "glass", "silver",
                                       "green", "plastic", "woollen", "marble")
           for noun in ("bicycle", "teapot", "guitar", "lamp", "kayak", "camera", "piano", "clock", "kite",
                        "telescope", "sofa", "drone", "violin", "canoe", "printer", "tent", "mirror", "scooter",
                        "blender", "sculpture", "rug", "vase", "helmet", "compass", "typewriter")]
PLACES = [f"{p} {s}" for p in ("North", "South", "East", "West", "Old", "New", "Upper", "Lower", "Little", "Great")
          for s in ("Harbour", "Market", "Station", "Library", "Garden", "Bridge", "Museum", "Square", "Mill",
                    "Chapel", "Pier", "Castle", "Arcade", "Quarry", "Forge", "Meadow", "Wharf", "Tower")]


def facts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        out.append(f"{NAMES[rng.integers(len(NAMES))]} {RELATIONS[rng.integers(len(RELATIONS))]} the "
                   f"{OBJECTS[rng.integers(len(OBJECTS))]} near {PLACES[rng.integers(len(PLACES))]} "
                   f"on day {rng.integers(1, 366)}")
    return out


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def fresh(folder: Path, name: str) -> AgentMemory:
    return AgentMemory(vector_store=VectorStore(home=folder / name), max_memory_size=10**7)


def bench_embedded(folder: Path, n: int) -> float:
    mem = fresh(folder, "embedded")
    texts = facts(n, 1)
    t = time.perf_counter()
    mem.batch_store(texts)
    secs = time.perf_counter() - t
    mem.workspace.close()
    return secs


def bench_supplied(folder: Path, n: int, runs: int) -> list[float]:
    rates = []
    for r in range(runs):
        mem = fresh(folder, f"supplied{r}")
        texts, vecs = facts(n, 10 + r), unit_vectors(n, 10 + r)
        items = [{"content": t, "vector": v} for t, v in zip(texts, vecs)]
        t = time.perf_counter()
        mem.batch_store(items)
        rates.append(n / (time.perf_counter() - t))
        mem.workspace.close()
    return rates


def bench_curve(folder: Path, points: list[int], probes: int) -> list[tuple[int, float]]:
    """Median cost of one store() (vector supplied) once the store holds n memories."""
    mem = fresh(folder, "curve")
    texts, vecs = facts(points[-1] + probes * len(points), 3), unit_vectors(points[-1] + probes * len(points), 3)
    held = 0
    k = 0
    curve = []
    for p in points:
        if p > held:
            mem.batch_store([{"content": texts[i], "vector": vecs[i]} for i in range(k, k + p - held)])
            k += p - held
            held = p
        costs = []
        for _ in range(probes):
            t = time.perf_counter()
            mem.batch_store([{"content": texts[k], "vector": vecs[k]}])
            costs.append(time.perf_counter() - t)
            k += 1
            held += 1
        curve.append((p, statistics.median(costs) * 1000))
    mem.workspace.close()
    return curve


def bench_retrieve(folder: Path, n: int, queries: int) -> dict[str, float]:
    mem = fresh(folder, "retrieve")
    step = 20000
    for start in range(0, n, step):
        m = min(step, n - start)
        mem.batch_store([{"content": t, "vector": v} for t, v in zip(facts(m, 100 + start), unit_vectors(m, start))])
    t = time.perf_counter()
    mem.retrieve("warm up the index", max_results=5)
    build = time.perf_counter() - t
    qs = [f"who {RELATIONS[i % len(RELATIONS)]} the {OBJECTS[(i * 7) % len(OBJECTS)]} "
          f"near {PLACES[(i * 3) % len(PLACES)]}" for i in range(queries)]
    lat = []
    for q in qs:  # distinct queries: the query embedding is part of every measured call
        t = time.perf_counter()
        mem.retrieve(q, max_results=10)
        lat.append((time.perf_counter() - t) * 1000)
    mem.workspace.close()
    return {"memories": n, "index_build_s": build, "median_ms": statistics.median(lat),
            "p95_ms": float(np.percentile(lat, 95))}


WORKER = """
import json, random, sys, time
from agentcontext import AgentMemory, VectorStore
home, name, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
words = "amber basil cedar delta ember falcon garnet harbor indigo jasper kestrel lantern meadow".split()
ids, misses, retrieves, i = [], 0, 0, 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    text = f"{name} note {i}: " + " ".join(random.Random(f"{name}-{i}").sample(words, 6))
    mid = mem.store(text, conversation_id=f"conv-{name}", user_id=name)
    ids.append(mid)
    misses += mid not in [r["id"] for r in mem.retrieve(text, max_results=5, user_id=name)]
    retrieves += 1
    i += 1
json.dump({"ids": ids, "misses": misses, "retrieves": retrieves}, open(out, "w"))
"""


def bench_concurrency(folder: Path, processes: int, seconds: float) -> dict:
    """``processes`` processes store and retrieve in one workspace; every stored memory must be found."""
    import subprocess

    home = folder / "concurrent"
    VectorStore(home=home).close()
    script = folder / "worker.py"
    script.write_text(WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), str(home), f"w{n}", str(seconds),
                               str(folder / f"w{n}.json")], stderr=subprocess.PIPE, text=True)
             for n in range(processes)]
    errors = [p.communicate()[1] for p in procs]
    locked = sum("locked" in e.lower() for e in errors)
    failed = sum(p.returncode != 0 for p in procs)
    results = [json.loads((folder / f"w{n}.json").read_text()) for n in range(processes) if procs[n].returncode == 0]
    mem = fresh(folder, "concurrent")
    ids = [i for r in results for i in r["ids"]]
    found = sum(mem.get_memory(i) is not None for i in ids)
    out = {"processes": processes, "seconds": seconds, "stored": len(ids), "found_afterwards": found,
           "not_top5_right_after_store": sum(r["misses"] for r in results), "locked_errors": locked,
           "failed_processes": failed, "integrity": mem.db.check_integrity(),
           "store_retrieve_pairs_per_s": round(sum(r["retrieves"] for r in results) / seconds, 1)}
    mem.workspace.close()
    return out


def semantica_compare(n: int) -> dict | None:
    try:
        from semantica.context import AgentContext as SAgentContext  # type: ignore
        from semantica.vector_store import VectorStore as SVectorStore  # type: ignore
    except ImportError:
        return None
    ctx = SAgentContext(vector_store=SVectorStore(backend="inmemory", dimension=384))
    texts = facts(n, 1)
    t = time.perf_counter()
    for text in texts:
        ctx.store(text)
    return {"semantica_store_s": time.perf_counter() - t}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--concurrency-seconds", type=float, default=30.0, help="4-process run length (0 = skip)")
    args = ap.parse_args()
    n_embed, n_supplied, n_retrieve = (1000, 5000, 20000) if args.quick else (10000, 10000, 100000)
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        secs = bench_embedded(folder, n_embed)
        results["batch_store_embedded"] = {"items": n_embed, "seconds": round(secs, 1), "target_s": 75}
        print(f"batch_store {n_embed} facts with embeddings: {secs:.1f} s (target <= 75 s for 10,000)", flush=True)
        rates = bench_supplied(folder, n_supplied, 3)
        results["batch_store_supplied"] = {"items": n_supplied, "median_per_s": round(statistics.median(rates)),
                                           "runs": [round(r) for r in rates], "target_per_s": 20000}
        print(f"batch_store {n_supplied} with vectors supplied: median {statistics.median(rates):,.0f}/s over 3 runs "
              f"(target >= 20,000/s)", flush=True)
        points = [10, 100, 1000, 5000, 10000] if not args.quick else [10, 100, 1000]
        curve = bench_curve(folder, points, 15)
        results["store_cost_curve_ms"] = curve
        print("cost of one store() at n memories (median ms): " + ", ".join(f"n={p}: {c:.2f}" for p, c in curve))
        print(f"  ratio cost(n={points[-1]}) / cost(n={points[0]}): {curve[-1][1] / curve[0][1]:.2f} (flat = ~1)")
        r = bench_retrieve(folder, n_retrieve, 60)
        results["retrieve"] = r
        print(f"retrieve at {r['memories']:,} memories: median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms "
              f"(targets 30 / 60 ms; index build {r['index_build_s']:.1f} s once)", flush=True)
        if args.concurrency_seconds > 0:
            c = bench_concurrency(folder, 4, args.concurrency_seconds)
            results["concurrency"] = c
            print(f"4 processes for {c['seconds']:.0f} s: {c['stored']} stored, {c['found_afterwards']} found "
                  f"afterwards, {c['locked_errors']} 'database is locked' errors, {c['failed_processes']} failed "
                  f"processes, integrity {c['integrity']}, {c['store_retrieve_pairs_per_s']} store+retrieve/s",
                  flush=True)
        sem = semantica_compare(min(n_embed, 2000))
        if sem is None:
            print("semantica is not importable (optional 'compare' extra): no side-by-side ratio this run")
        else:
            results["semantica"] = sem
            print(f"semantica store of {min(n_embed, 2000)} facts: {sem['semantica_store_s']:.1f} s")
    results["note"] = "taken on a shared 2-core machine while other engineers ran test suites"
    if not args.quick:
        report("memory", results)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main())
