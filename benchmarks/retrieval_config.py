"""What the one retrieval configuration costs a call (issue 27 s5): the per-call copy of the configuration a call's
keywords make (``RetrievalConfig.override`` and its ``echo``), and the per-result conversion to the dicts
``AgentContext.retrieve`` returns with the ``config`` echo (``RetrievedContext.to_dict``) beside the baseline's
conversion (``dataclasses.asdict`` of the same result without the echo, what main's ``to_dict`` did).

Run: nice -n 10 .venv/bin/python benchmarks/retrieval_config.py [--rounds 5] [--number 20000]
Prints the median over rounds of each figure in microseconds and the ratio this / baseline (< 1 is cheaper).
Taken on a shared 2-core machine: expect noise; the two are interleaved round by round so load slows both alike.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import timeit

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=20000)
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


if __name__ == "__main__":
    main()
