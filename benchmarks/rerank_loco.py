"""The reranker (engine/rerank.py) chosen by leave-one-conversation-out on the LoCoMo dev split (issue 29).

    nice -n 10 .venv/bin/python benchmarks/rerank_loco.py [--model mpnet] [--cache DIR [--only conv-26,...]] [FILE]

(``--only`` with ``--cache`` gathers those conversations into the cache and stops: several such runs side by side,
then one without ``--only`` reads them all and chooses.) It also prints dense alone, nothing fitted: each question's
cosine to every turn of its conversation, by the default model and by the reranking model.

Memory search as shipped (MiniLM, shipped weights) gives each question its first ``pool`` candidates with their
scores; the reranking model embeds the question (its query form) and each candidate's stored text ("Speaker: text");
the new order is by ``(1 - weight) * (1 - rank / pool) + weight * max(cosine, 0)`` (engine/rerank.py ``blend``;
blending with the first-stage score instead measured worse at every weight: its calibrated scores saturate near 1).
For each conversation held out, ``weight`` and ``pool`` are chosen on the other four (objective: mean of overall R@5 and
R@10) and applied to the held-out one; the held-out figures are pooled over the five folds and printed per category
beside memory search without the reranker, measured in the same run. Saves benchmarks/results/rerank_loco.json.
"""
from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

from agentcontext import AgentMemory, VectorStore
from agentcontext.embed.base import default_embedder
from agentcontext.embed.models import load_model, spec_of
from agentcontext.engine.rerank import blend, query_vector
from agentcontext.eval_locomo import evidence, load, turn_text, turns
from agentcontext.memory.records import memory_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from embed_models import DEV  # noqa: E402

K = (5, 10)
POOLS = (10, 15, 20, 30)
WEIGHTS = tuple(float(round(w, 2)) for w in np.arange(0.0, 1.01, 0.1))


def gather(path: str, reranker, only: set[str] | None = None, cache: Path | None = None) -> list[dict]:
    """Per question: conversation, category, evidence mask over the pool, first-stage scores, reranker cosines, and
    the dense-alone recalls of the default model and the reranking model (cosine to every turn, "Speaker: text").
    With ``cache``, each conversation's questions are saved there (and read back instead of gathered again)."""
    out = []
    default = default_embedder()
    for sample in load(path):
        sid = str(sample.get("sample_id", "conv"))
        if only and sid not in only:
            continue
        saved = cache / f"{sid}-{reranker.name}.pkl" if cache else None
        if saved is not None and saved.exists():
            out += pickle.loads(saved.read_bytes())
            print(f"read {sid} from {saved}", flush=True)
            continue
        mine: list[dict] = []
        memory = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=10**9)
        ts = turns(sample)
        memory.batch_store([{"content": turn_text(t), "conversation_id": sid,
                             "metadata": {"speaker": t.get("speaker", ""), "dia_id": t["dia_id"],
                                          "session": t["session"], "session_date": t["session_date"]},
                             "created_at": t["created_at"]} for t in ts])
        texts = {t["dia_id"]: memory_text(t.get("speaker", ""), turn_text(t)) for t in ts}
        ids = list(texts)
        matrix = reranker.embed([texts[i] for i in ids])
        vecs = dict(zip(ids, matrix))
        plain = default.embed([texts[i] for i in ids])
        for qa in sample["qa"]:
            if qa.get("category") == 5:
                continue
            ev = evidence(qa.get("evidence") or [], set(ids))
            if not ev:
                continue
            q = str(qa["question"])
            hits = memory.retrieve(q, max_results=max(POOLS), count_use=False)
            dia = [h["metadata"]["dia_id"] for h in hits]
            qv = query_vector(reranker, q)
            evm = np.array([i in ev for i in ids])
            dense = {}
            for key, m, v in (("default", plain, default.embed([q])[0]), ("reranker", matrix, qv)):
                order = np.argsort(-(m @ v), kind="stable")
                dense[key] = tuple(evm[order[:k]].sum() / len(ev) for k in K)
            mine.append({"conv": sid, "cat": str(qa["category"]), "n_ev": len(ev),
                         "ev": np.array([d in ev for d in dia]), "score": np.array([h["score"] for h in hits]),
                         "cos": np.array([float(vecs[d] @ qv) for d in dia]), "dense": dense})
        memory.workspace.close()
        if saved is not None:
            saved.write_bytes(pickle.dumps(mine))
        out += mine
        print(f"gathered {sid}: {len(out)} questions so far", flush=True)
    return out


def dense_table(qs: list[dict], key: str) -> dict[str, dict[str, float]]:
    sums: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for q in qs:
        for cat in (q["cat"], "all"):
            counts[cat] = counts.get(cat, 0) + 1
            row = sums.setdefault(cat, [0.0] * len(K))
            for j in range(len(K)):
                row[j] += q["dense"][key][j]
    return {c: {str(k): round(sums[c][j] / counts[c], 4) for j, k in enumerate(K)} | {"questions": counts[c]}
            for c in sorted(sums)}


def recall(q: dict, weight: float, pool: int) -> tuple[float, ...]:
    n = min(pool, len(q["score"]))
    value = blend(q["cos"][:n], weight)
    order = np.argsort(-value, kind="stable")
    ranked = np.concatenate([order, np.arange(n, len(q["score"]))])  # beyond the pool: first-stage order
    return tuple(q["ev"][ranked[:k]].sum() / q["n_ev"] for k in K)


def table(qs: list[dict], choice: dict[str, tuple[float, int]]) -> dict[str, dict[str, float]]:
    sums: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for q in qs:
        r = recall(q, *choice[q["conv"]])
        for key in (q["cat"], "all"):
            counts[key] = counts.get(key, 0) + 1
            row = sums.setdefault(key, [0.0] * len(K))
            for j in range(len(K)):
                row[j] += r[j]
    return {key: {str(k): round(sums[key][j] / counts[key], 4) for j, k in enumerate(K)} | {"questions": counts[key]}
            for key in sorted(sums)}


def choose(qs: list[dict], label: str = "") -> dict[str, tuple[float, int]]:
    """For each conversation held out, the (weight, pool) with the best mean of R@5 and R@10 on the other four (ties:
    the smaller weight)."""
    combos = [(w, p) for w in WEIGHTS for p in POOLS]
    per = {c: np.array([recall(q, *c) for q in qs]) for c in combos}
    conv = np.array([q["conv"] for q in qs])
    chosen = {}
    for c in sorted(set(conv)):
        train = conv != c
        chosen[c] = max(combos, key=lambda x: (per[x][train].mean(), -x[0]))  # ties: the smaller weight
        print(f"reranker{label} held out {c}: chose weight {chosen[c][0]}, pool {chosen[c][1]}", flush=True)
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEV))
    ap.add_argument("--model", default="mpnet")
    ap.add_argument("--only", default="", help="gather only these conversations (comma-separated) and stop")
    ap.add_argument("--cache", default="", help="a folder where each conversation's gathered questions are kept")
    args = ap.parse_args()
    name = spec_of(args.model).name
    cache = Path(args.cache) if args.cache else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    qs = gather(args.file, load_model(name), only, cache)
    if only:
        return
    convs = sorted({q["conv"] for q in qs})
    chosen = choose(qs)
    before = table(qs, {c: (0.0, max(POOLS)) for c in convs})
    held = table(qs, chosen)
    weights = [chosen[c][0] for c in convs]
    pools = [chosen[c][1] for c in convs]
    mode = (max(set(weights), key=weights.count), max(set(pools), key=pools.count))
    fitted = table(qs, {c: mode for c in convs})
    print(f"\nreranker {name}: per category R@5 / R@10, without -> held-out (pooled LOCO) [mode {mode} on all five]")
    for key in before:
        b, h, f = before[key], held[key], fitted[key]
        print(f"  category {key:>3} ({b['questions']:>3} q): R@5 {b['5']:.3f} -> {h['5']:.3f} [{f['5']:.3f}]   "
              f"R@10 {b['10']:.3f} -> {h['10']:.3f} [{f['10']:.3f}]")
    dense = {key: dense_table(qs, key) for key in ("default", "reranker")}
    print(f"\ndense alone (cosine to every turn, nothing fitted), R@5 / R@10: default model -> {name}")
    for key in dense["default"]:
        a, b = dense["default"][key], dense["reranker"][key]
        print(f"  category {key:>3}: {a['5']:.3f} / {a['10']:.3f} -> {b['5']:.3f} / {b['10']:.3f}")
    report(f"rerank_loco_{args.model}", {"file": args.file, "model": name, "pools": POOLS, "weights": WEIGHTS,
                                         "chosen": chosen, "mode": mode, "without": before, "held_out": held,
                                         "mode_on_all": fitted, "dense_alone": dense}, quiet=True)


if __name__ == "__main__":
    main()
