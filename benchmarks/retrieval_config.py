"""What the one retrieval configuration costs a call (issue 27 s5): the per-call copy of the configuration a call's
keywords make (``RetrievalConfig.override`` and its ``echo``), and the per-result conversion to the dicts
``AgentContext.retrieve`` returns with the ``config`` echo (``RetrievedContext.to_dict``) beside the baseline's
conversion (``dataclasses.asdict`` of the same result without the echo, what main's ``to_dict`` did).

Run: nice -n 10 .venv/bin/python benchmarks/retrieval_config.py [--rounds 5] [--number 20000] [--baseline REV]
Prints the median over rounds of each figure in microseconds and the ratio this / baseline (< 1 is cheaper).
Taken on a shared 2-core machine: expect noise; the two are interleaved round by round so load slows both alike.

With ``--baseline REV`` it also counts the Python function calls one ``AgentContext.retrieve`` makes (with and without
the graph) on benchmarks/seams.py's workload, on this checkout's code and on REV's, in fresh processes: a figure the
machine's load does not move, beside the profiled seconds (which it does).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from agentcontext.engine.retrieval_config import RetrievalConfig
from agentcontext.engine.retrieved import RetrievedContext


def result(config: dict) -> RetrievedContext:
    """A memory result as the retriever holds it: metadata with an entity list, signals, the memory's fields."""
    return RetrievedContext(content="FastAPI is a Python web framework " * 3, score=0.71, source="memory",
                            metadata={"type": "fact", "entities": ["fastapi", "python"]}, id="mem_0123456789",
                            signals={"dense": 0.52, "keyword": 0.4, "bm25": 3.2, "retrieval": 0.71},
                            extra={"memory_id": "mem_0123456789", "conversation_id": "c1", "user_id": None,
                                   "timestamp": "2026-12-06T09:00:00+00:00",
                                   "created_at": "2026-12-06T09:00:00+00:00",
                                   "updated_at": "2026-12-06T09:00:00+00:00", "version": 1},
                            config=config)


def baseline_to_dict(r: RetrievedContext) -> dict:
    out = dataclasses.asdict(r)
    out.pop("config")
    out.update(out.pop("extra"))
    return out


PROFILE = r'''
import cProfile, pstats
for use_graph in (None, False):
    for q in queries:
        ctx.retrieve(q, max_results=10, use_graph=use_graph)  # warm
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3):
        for q in queries:
            ctx.retrieve(q, max_results=10, use_graph=use_graph)
    pr.disable()
    st = pstats.Stats(pr)
    name = "retrieve" if use_graph is None else "retrieve_no_graph"
    print(json.dumps({name: [st.total_calls / (3 * len(queries)), st.total_tt / (3 * len(queries)) * 1000]}))
'''


def counted(rev: str, memories: int = 2000, decisions: int = 50) -> None:
    """Function calls per retrieve (and profiled ms) on this code and on ``rev``'s, same workload."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from seams import CHILD, ROOT, baseline_src  # noqa: E402 (benchmarks/seams.py: its workload)

    setup = CHILD.split("figures = {")[0]
    with tempfile.TemporaryDirectory() as tmp:
        codes = {"this": ROOT / "src", rev: baseline_src(rev, Path(tmp))}
        got: dict[str, dict[str, list[float]]] = {}
        for label, src in codes.items():
            env = {**os.environ, "PYTHONPATH": str(src), "AGENTCONTEXT_HOME": tempfile.mkdtemp(prefix="rconfig-")}
            out = subprocess.run([sys.executable, "-c", setup + PROFILE, str(memories), str(decisions)], env=env,
                                 check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
            got[label] = {k: v for line in out.strip().splitlines() for k, v in json.loads(line).items()}
    print(f"function calls per AgentContext.retrieve ({memories} memories; profiled ms in brackets, load-dependent)")
    for name in ("retrieve", "retrieve_no_graph"):
        (a, ta), (b, tb) = got["this"][name], got[rev][name]
        print(f"  {name:18s} this {a:9.0f} ({ta:7.1f} ms)   {rev} {b:9.0f} ({tb:7.1f} ms)   ratio {a / b:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--baseline", default=None, help="also count function calls per retrieve against this revision")
    args = ap.parse_args()
    n = args.number
    base = RetrievalConfig()
    ours, plain = result(base.echo), result({})
    figures: dict[str, list[float]] = {k: [] for k in ("to_dict_this", "to_dict_baseline", "override_same",
                                                       "override_new_with_echo", "as_memory")}
    for _ in range(args.rounds):
        figures["to_dict_this"].append(timeit.timeit(ours.to_dict, number=n) / n * 1e6)
        figures["to_dict_baseline"].append(timeit.timeit(lambda: baseline_to_dict(plain), number=n) / n * 1e6)
        figures["override_same"].append(timeit.timeit(lambda: base.override(min_score=None), number=n) / n * 1e6)
        figures["override_new_with_echo"].append(
            timeit.timeit(lambda: base.override(min_score=0.25).echo, number=n // 10) / (n // 10) * 1e6)
        figures["as_memory"].append(timeit.timeit(ours.as_memory, number=n) / n * 1e6)
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"retrieval config cost, {args.rounds} rounds of {n} calls (microseconds, median; runs min-max)")
    for k, v in figures.items():
        print(f"  {k:24s} {med[k]:8.2f}   ({min(v):.2f}-{max(v):.2f})")
    print(f"per result: to_dict with the config echo / baseline asdict without it = "
          f"{med['to_dict_this'] / med['to_dict_baseline']:.2f}")
    print("per call: one override (a call's keywords) with its echo, once per call, not per result")
    if args.baseline:
        counted(args.baseline)


if __name__ == "__main__":
    main()
