"""Cold starts of the precedent index and a pack's vectors (issue 9 s2): a fresh process's first find_precedents on
10,000 decisions and first search_knowledge on a 10,000-doc pack, with the index mapped from its file beside the
store against one rebuilt from the store (the baseline: what a new process paid before the files existed), both
measured in this run, as ratios. ``benchmarks/coldstart.py`` runs this after the memory figures; alone:

Run: .venv/bin/python benchmarks/coldstart_vectors.py [--decisions 10000] [--docs 10000] [--runs 5]
     [--home DIR [--fill-only]]   (fill a workspace once, e.g. niced outside the benchmark lock, then measure)

The decisions are those of benchmarks/decisions.py, the pack that of benchmarks/packs.py, both embedded with the
real model. Each figure is the median over ``--runs`` fresh processes with the model already loaded (the index's
share of a cold start, which the file removes); the OS page cache is warm. "mapped" maps every index file the call
uses (the precedent index and the node names ``engine/proximity`` looks the scenario's words up in; the pack's
vectors); "rebuild" builds them from the store. Target (precedents): the first call within 1.5x of a warm (second)
call, or <= 150 ms.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402

PACK = "lib:big"
QUERIES = {"precedents": ["Refund request for a long-time client with missing documents",
                          "Security incident during an outage in the EU region"],
           "pack": ["how do agents rotate webhooks", "when do operators archive stale sessions"]}

CHILD = r"""
import json, sys, time
home, what, mode, pack = sys.argv[1:5]
queries = json.loads(sys.argv[5])
from agentcontext.workspace import Workspace
from agentcontext.engine.snapshot import IndexFiles
ws = Workspace.open(home=home)
if mode == "rebuild":  # the baseline: no file, the index is built from the store
    ws.index_files = IndexFiles(None, ws.store)
ws.embedder.embed(["load the model first"])
if what == "precedents":
    from agentcontext.decisions.index import index_for
    from agentcontext.decisions.recorder import DecisionRecorder
    from agentcontext.graph.context_graph import ContextGraph
    rec = DecisionRecorder(ContextGraph(workspace=ws))
    call = lambda q: [d.decision_id for d in rec.find_precedents(q, limit=5)]
    rows = lambda: index_for(ws, "graph:default").rows
    from agentcontext.engine.name_index import node_names
    names = lambda: node_names(ws, None)  # the workspace graph's node names (proximity.mentioned_nodes)
else:
    from agentcontext.knowledge.search import pack_vectors, search_knowledge
    call = lambda q: [h.selector for h in search_knowledge(ws, pack, q, limit=10)]
    rows = lambda: pack_vectors(ws, pack)
    names = None
t = time.perf_counter()
hits = call(queries[0])
first = time.perf_counter() - t
t = time.perf_counter()
call(queries[1])
second = time.perf_counter() - t
print(json.dumps({"first": first, "second": second, "hits": hits, "mapped": rows().source is not None
                  and (names is None or names().source is not None), "rows": len(rows())}))
ws.close()
"""


def fill(home: Path, decisions: int, docs: int) -> dict[str, float]:
    from decisions import make_items
    from packs import generate

    from agentcontext import AgentContext
    from agentcontext.graph.context_graph import ContextGraph
    from agentcontext.knowledge.packs import install_folder
    from agentcontext.knowledge.search import search_knowledge
    from agentcontext.workspace import Workspace

    ws = Workspace.open(home=home, create=True)
    took = {}
    t = time.perf_counter()
    ctx = AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True)
    ctx.record_decisions(make_items(decisions))
    took["record_decisions_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    generate(home.parent / "pack", docs)
    install_folder(ws, home.parent / "pack")
    took["install_pack_s"] = round(time.perf_counter() - t, 1)
    ctx.find_precedents("build and save the precedent index")  # the files are written here
    search_knowledge(ws, PACK, "build and save the pack's vectors")
    ws.close()
    return took


def child(home: Path, what: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), what, mode, PACK, json.dumps(QUERIES[what])],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(home: Path, runs: int) -> dict:
    figures: dict = {}
    for what in ("precedents", "pack"):
        part: dict = {}
        hits = None
        same = True
        child(home, what, "mapped")  # not counted: writes any index file the workspace lacks (the node names)
        for _ in range(runs):  # the modes interleaved, so load drifts hit both alike
            for mode in ("mapped", "rebuild"):
                r = child(home, what, mode)
                entry = part.setdefault(mode, {"first_ms": [], "second_ms": [], "mapped_from_file": True})
                entry["first_ms"].append(round(r["first"] * 1000, 1))
                entry["second_ms"].append(round(r["second"] * 1000, 1))
                entry["mapped_from_file"] = entry["mapped_from_file"] and r["mapped"]
                entry["rows"] = r["rows"]
                hits = r["hits"] if hits is None else hits
                same = same and r["hits"] == hits
        for entry in part.values():
            entry["first_median_ms"] = round(statistics.median(entry["first_ms"]), 1)
            entry["second_median_ms"] = round(statistics.median(entry["second_ms"]), 1)
        part["same_results_mapped_and_rebuilt"] = same
        mapped = part["mapped"]
        part["ratio_rebuild_over_mapped"] = round(part["rebuild"]["first_median_ms"] / max(mapped["first_median_ms"],
                                                                                           1e-3), 1)
        part["ratio_first_over_warm"] = round(mapped["first_median_ms"] / max(mapped["second_median_ms"], 1e-3), 2)
        if what == "precedents":  # issue 9 s2 (session 5): within 1.5x of a warm call, or <= 150 ms
            part["target"] = {"first_ms": 150, "or_ratio_first_over_warm": 1.5,
                              "met": mapped["first_median_ms"] <= 150 or part["ratio_first_over_warm"] <= 1.5}
        figures[what] = part
        print(f"{what}: first call mapped {mapped['first_median_ms']} ms (warm {mapped['second_median_ms']} ms, "
              f"x{part['ratio_first_over_warm']}), rebuilt {part['rebuild']['first_median_ms']} ms, ratio "
              f"{part['ratio_rebuild_over_mapped']}", file=sys.stderr)
    return figures


def run(decisions: int, docs: int, runs: int, reuse: str | None = None, fill_only: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(reuse) if reuse else Path(tmp) / "ws"
        figures: dict = {"decisions": decisions, "docs": docs, "runs": runs}
        if not (home / "store.db").exists():
            figures.update(fill(home, decisions, docs))
        if fill_only:
            return figures
        figures.update(measure(home, runs))
        files = sorted((home / "indexes").glob("*.idx"))  # after the measure: its first run writes any missing one
        figures["index_file_bytes"] = {f.name.split(".")[0]: f.stat().st_size for f in files}
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decisions", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--home", help="a workspace folder to fill once and reuse (else a temporary one)")
    ap.add_argument("--fill-only", action="store_true", help="fill --home and stop (prepare, then measure later)")
    args = ap.parse_args()
    figures = run(args.decisions, args.docs, args.runs, args.home, args.fill_only)
    if args.fill_only:
        print(json.dumps(figures))
        return
    name = "coldstart_vectors" if (args.decisions, args.docs) == (10_000, 10_000) else (
        f"coldstart_vectors_{args.decisions}_{args.docs}")
    report(name, figures)


if __name__ == "__main__":
    main()
