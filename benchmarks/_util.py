"""Small helpers shared by the benchmark scripts: timing, medians, saving results."""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn: Callable[[], Any], runs: int = 7, warmup: int = 1) -> tuple[list[float], Any]:
    """Wall-clock seconds of ``runs`` calls after ``warmup`` calls, and the last result."""
    result = None
    for _ in range(warmup):
        result = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return times, result


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def report(name: str, figures: dict[str, Any], quiet: bool = False) -> None:
    """Save one benchmark's figures (benchmarks/results/<name>.json) and print them unless ``quiet``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if not quiet:
        print(json.dumps(figures, indent=2, default=str))
