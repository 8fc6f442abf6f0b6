"""Writes (issue 9 s3): batch_store with vectors supplied, with conversation ids (and their context vectors
supplied), the per-item cost as the store grows, and one store() with embedding, beside LanceDB and ChromaDB
doing the same work with the same vectors and texts in the same run (the ``bench`` extra), as ratios.

Run: .venv/bin/python benchmarks/writes.py [--memories 100000] [--runs 3] [--curve 1000000] [--stores 200]
     [--baseline REV [--baseline-first]]  (REV: a git revision; its write path grows the same curve in a
     subprocess, in the same run; the curve also times purges of one memory and of a 600-memory conversation)

Targets: batch_store with vectors supplied >= 60,000 memories/s at 100,000 (median of 3); per-item cost flat
to 1,000,000 (the last 10% of batches cost <= 1.3 x the first 10%); one store() with embedding p50 <= 12 ms,
p95 <= 25 ms. LanceDB or ChromaDB missing (no ``bench`` extra): their columns say so.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory, VectorStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import p95, report  # noqa: E402
from memory import facts, unit_vectors  # noqa: E402

BATCH = 10_000  # rows per call for every system (ChromaDB's limit is about 5,000: it is split below that)


def ours(folder: Path, name: str) -> AgentMemory:
    return AgentMemory(vector_store=VectorStore(home=folder / name), max_memory_size=10**8)


def items_for(texts: list[str], vecs: np.ndarray, conversations: bool) -> list[dict]:
    out = [{"content": t, "vector": v, "metadata": {"n": i % 10}} for i, (t, v) in enumerate(zip(texts, vecs))]
    if conversations:
        context = unit_vectors(len(texts), 7)
        for i, item in enumerate(out):
            item["conversation_id"] = f"conv-{i // 50}"
            item["context_vector"] = context[i]
    return out


def run_ours(folder: Path, name: str, texts, vecs, conversations: bool) -> float:
    mem = ours(folder, name)
    items = items_for(texts, vecs, conversations)
    t = time.perf_counter()
    for start in range(0, len(items), BATCH):
        mem.batch_store(items[start: start + BATCH])
    secs = time.perf_counter() - t
    mem.workspace.close()
    return len(items) / secs


def run_lancedb(folder: Path, name: str, texts, vecs, conversations: bool) -> float | None:
    try:
        import lancedb
        import pyarrow as pa
    except ImportError:
        return None
    db = lancedb.connect(str(folder / name))
    d = vecs.shape[1]
    table = None
    t = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        part = slice(start, start + BATCH)
        cols = {"id": [f"m{i}" for i in range(start, min(start + BATCH, len(texts)))], "text": texts[part],
                "n": [i % 10 for i in range(start, min(start + BATCH, len(texts)))],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs[part].reshape(-1)), d)}
        if conversations:
            cols["conversation_id"] = [f"conv-{i // 50}" for i in range(start, min(start + BATCH, len(texts)))]
        data = pa.table(cols)
        if table is None:
            table = db.create_table("memories", data=data)
        else:
            table.add(data)
    return len(texts) / (time.perf_counter() - t)


def run_chroma(folder: Path, name: str, texts, vecs, conversations: bool) -> float | None:
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError:
        return None
    client = chromadb.PersistentClient(path=str(folder / name), settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("memories", embedding_function=None, metadata={"hnsw:space": "cosine"})
    step = min(BATCH, client.get_max_batch_size())
    t = time.perf_counter()
    for start in range(0, len(texts), step):
        end = min(start + step, len(texts))
        metas = [{"n": i % 10, **({"conversation_id": f"conv-{i // 50}"} if conversations else {})}
                 for i in range(start, end)]
        col.add(ids=[f"m{i}" for i in range(start, end)], embeddings=vecs[start:end], documents=texts[start:end],
                metadatas=metas)
    return len(texts) / (time.perf_counter() - t)


def curve(folder: Path, total: int) -> dict:
    """Seconds per batch of BATCH supplied-vector memories as the store grows to ``total``."""
    mem = ours(folder, "curve")
    costs, cpus, loads = [], [], []
    for start in range(0, total, BATCH):
        items = items_for(facts(BATCH, 1000 + start), unit_vectors(BATCH, start), False)
        t, c = time.perf_counter(), time.process_time()
        mem.batch_store(items)
        costs.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        loads.append(os.getloadavg()[0])
    mem.workspace.close()
    purges = purge_costs(folder / "curve")
    tenth = max(1, len(costs) // 10)
    first, last = statistics.median(costs[:tenth]), statistics.median(costs[-tenth:])
    deciles = [round(BATCH / statistics.median(costs[i: i + tenth])) for i in range(0, len(costs), tenth)]
    # On a shared machine the wall time of a batch follows the load; the process's own CPU time (user + system,
    # the page writes included) follows the work, so the curve is given both ways
    cpu_first, cpu_last = statistics.median(cpus[:tenth]), statistics.median(cpus[-tenth:])
    return {"memories": total, "batch": BATCH, "first_10pct_per_s": round(BATCH / first),
            "last_10pct_per_s": round(BATCH / last), "last_over_first": round(last / first, 2), "target": 1.3,
            "per_s_by_tenth": deciles,
            "cpu_us_per_memory_by_tenth": [round(statistics.median(cpus[i: i + tenth]) / BATCH * 1e6, 1)
                                           for i in range(0, len(cpus), tenth)],
            "cpu_last_over_first": round(cpu_last / cpu_first, 2),
            # The median hides the few batches that end in a WAL checkpoint; the mean counts them
            "mean_last_over_first": round(statistics.mean(costs[-tenth:]) / statistics.mean(costs[:tenth]), 2),
            "cpu_mean_last_over_first": round(statistics.mean(cpus[-tenth:]) / statistics.mean(cpus[:tenth]), 2),
            "load_by_tenth": [round(statistics.mean(loads[i: i + tenth]), 1) for i in range(0, len(loads), tenth)],
            "purge_ms": purges}


def purge_costs(home: Path, singles: int = 5, conversations: int = 2, turns: int = 600) -> dict:
    """Milliseconds for store.purge_nodes of one memory, and of a conversation's ``turns`` memories written together
    (consecutive rows), in the store a curve grew under ``home``: each on a fresh connection (SQLite's page cache
    cold, the OS cache warm), at rows spread over the store. A purge asks, for each vector it might drop, whether a
    version of any other node still uses its hash: the index that answers it is what every insert keeps up."""
    from agentcontext.store import SQLiteStore

    path = next(home.rglob("store.db"))
    out: dict = {}
    for label, size, count in (("one_memory", 1, singles), (f"conversation_{turns}", turns, conversations)):
        walls, cpus = [], []
        for k in range(count):
            store = SQLiteStore(path)
            total = store._read("SELECT max(rid) FROM nodes")[0][0]
            at = int(total * (k + 1) / (count + 1))
            ids = [r[0] for r in store._read("SELECT id FROM nodes WHERE rid > ? ORDER BY rid LIMIT ?", (at, size))]
            t, c = time.perf_counter(), time.process_time()
            got = store.purge_nodes(ids)
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((time.process_time() - c) * 1000)
            store.close()
            assert got["nodes"] == size and got["vectors"] == size, got
        out[label] = {"ms_median": round(statistics.median(walls), 1), "ms_max": round(max(walls), 1),
                      "cpu_ms_median": round(statistics.median(cpus), 1), "runs": count}
    return out


def baseline_curve(rev: str, total: int, folder: Path) -> dict:
    """The same curve grown by the code of git revision ``rev`` (its src/ and benchmarks/ in a temporary folder,
    first on the path of a child process): the code before, measured in the same run."""
    root = Path(__file__).resolve().parents[1]
    tree = folder / f"baseline-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(root), "archive", rev, "src", "benchmarks"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    # The revision's own curve(); then this file's purge_costs on the store it grew, with the revision's code (a
    # revision from before purge_costs existed gets the same purge figures)
    script = ("import json, sys, tempfile, importlib.util; from pathlib import Path; "
              "sys.path.insert(0, 'benchmarks'); import writes; tmp = tempfile.mkdtemp(dir=sys.argv[2]); "
              "out = writes.curve(Path(tmp), int(sys.argv[1])); "
              "spec = importlib.util.spec_from_file_location('writes_now', sys.argv[3]); "
              "now = importlib.util.module_from_spec(spec); spec.loader.exec_module(now); "
              "out.setdefault('purge_ms', now.purge_costs(Path(tmp) / 'curve')); print(json.dumps(out))")
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, "-c", script, str(total), str(folder), str(Path(__file__).resolve())],
                         cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    return {"rev": rev, **json.loads(out.strip().splitlines()[-1])}


def single_stores(folder: Path, count: int) -> dict:
    """One store() with embedding (distinct texts, the model warm), and the same through LanceDB and ChromaDB."""
    texts = [f"{t} (entry {i})" for i, t in enumerate(facts(count + 10, 77))]
    mem = ours(folder, "single")
    embedder = mem.workspace.embedder
    for t in texts[:10]:
        mem.store(t)
    lat = []
    for t in texts[10:]:
        s = time.perf_counter()
        mem.store(t)
        lat.append((time.perf_counter() - s) * 1000)
    out = {"ours": {"p50_ms": round(statistics.median(lat), 2), "p95_ms": round(p95(lat), 2)}}
    embed_lat = []
    for t in texts[10:]:
        s = time.perf_counter()
        embedder.embed([t + " again"])
        embed_lat.append((time.perf_counter() - s) * 1000)
    out["embedding_alone"] = {"p50_ms": round(statistics.median(embed_lat), 2), "p95_ms": round(p95(embed_lat), 2)}
    mem.workspace.close()
    try:
        import lancedb
        import pyarrow as pa

        db = lancedb.connect(str(folder / "single-lance"))
        table = db.create_table("m", data=pa.table({"id": ["m0"], "text": ["x"], "vector": pa.FixedSizeListArray.
                                                    from_arrays(pa.array(embedder.embed(["x"])[0]), 384)}))
        lat = []
        for i, t in enumerate(texts[10:]):
            s = time.perf_counter()
            v = embedder.embed([t])[0]
            table.add(pa.table({"id": [f"m{i + 1}"], "text": [t],
                                "vector": pa.FixedSizeListArray.from_arrays(pa.array(v), 384)}))
            lat.append((time.perf_counter() - s) * 1000)
        out["lancedb"] = {"p50_ms": round(statistics.median(lat), 2), "p95_ms": round(p95(lat), 2)}
    except ImportError:
        out["lancedb"] = "not installed"
    try:
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(folder / "single-chroma"),
                                           settings=Settings(anonymized_telemetry=False))
        col = client.create_collection("single", embedding_function=None)
        lat = []
        for i, t in enumerate(texts[10:]):
            s = time.perf_counter()
            v = embedder.embed([t])[0]
            col.add(ids=[f"m{i}"], embeddings=[v], documents=[t])
            lat.append((time.perf_counter() - s) * 1000)
        out["chromadb"] = {"p50_ms": round(statistics.median(lat), 2), "p95_ms": round(p95(lat), 2)}
    except ImportError:
        out["chromadb"] = "not installed"
    out["target"] = {"p50_ms": 12, "p95_ms": 25}
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--curve", type=int, default=0, help="grow one store to this many (e.g. 1000000)")
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--baseline", default=None, help="a git revision whose code grows the same curve (same run)")
    ap.add_argument("--baseline-first", action="store_true", help="grow the baseline's curve before this code's "
                    "(run both orders: the machine's load drifts)")
    ap.add_argument("--chroma-runs", type=int, default=None,
                    help="runs of ChromaDB per mode (default --runs; it takes minutes per 100,000 memories)")
    args = ap.parse_args()
    n = args.memories
    figures: dict = {"memories": n, "runs": args.runs, "batch": BATCH, "load_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for conversations in (False, True):
            label = "with_conversations" if conversations else "vectors_supplied"
            rates: dict[str, list[float]] = {"ours": [], "lancedb": [], "chromadb": []}
            for r in range(args.runs):
                texts, vecs = facts(n, 10 + r), unit_vectors(n, 10 + r)
                rates["ours"].append(run_ours(folder, f"ours-{label}-{r}", texts, vecs, conversations))
                for system, fn in (("lancedb", run_lancedb), ("chromadb", run_chroma)):
                    if system == "chromadb" and r >= (args.runs if args.chroma_runs is None else args.chroma_runs):
                        continue
                    rate = fn(folder, f"{system}-{label}-{r}", texts, vecs, conversations)
                    if rate is not None:
                        rates[system].append(rate)
            med = {k: round(statistics.median(v)) if v else None for k, v in rates.items()}
            figures[label] = {"per_s_median": med, "per_s_runs": {k: [round(x) for x in v] for k, v in rates.items()},
                              "ours_over_lancedb": ratio(med["ours"], med["lancedb"]),
                              "ours_over_chromadb": ratio(med["ours"], med["chromadb"]), "target_per_s": 60_000}
            print(label, figures[label], file=sys.stderr)
        if args.curve:
            if args.baseline and args.baseline_first:
                before = figures["cost_curve_baseline"] = baseline_curve(args.baseline, args.curve, folder)
                print(before, file=sys.stderr)
            figures["cost_curve"] = curve(folder, args.curve)
            print(figures["cost_curve"], file=sys.stderr)
            if args.baseline and not args.baseline_first:
                before = figures["cost_curve_baseline"] = baseline_curve(args.baseline, args.curve, folder)
                print(before, file=sys.stderr)
            if args.baseline:
                figures["cost_curve_order"] = "baseline first" if args.baseline_first else "baseline second"
                figures["cost_curve_vs_baseline"] = {
                    key: {"now": figures["cost_curve"][key], "before": before[key]}
                    for key in ("last_over_first", "cpu_last_over_first", "mean_last_over_first",
                                "cpu_mean_last_over_first", "first_10pct_per_s", "last_10pct_per_s", "purge_ms")
                    if key in before}
        figures["single_store"] = single_stores(folder, args.stores)
    figures["load_at_end"] = os.getloadavg()
    report("writes" if n == 100_000 else f"writes_{n}", figures)


if __name__ == "__main__":
    main()
