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


def fit_logistic(x: Any, y: Any, balanced: bool = True, iterations: int = 60) -> tuple[float, float]:
    """``(scale, offset)`` of the logistic ``1 / (1 + exp(-(scale * x + offset)))`` fitted to labels ``y`` (0/1) by
    Newton's method; ``balanced`` weighs positives and negatives equally (the fit then ignores their ratio)."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    pos = max(float(y.sum()), 1.0)
    neg = max(float(len(y) - y.sum()), 1.0)
    weight = np.where(y > 0, neg / pos, 1.0) if balanced else np.ones_like(y)
    design = np.stack([x, np.ones_like(x)], axis=1)
    w = np.zeros(2)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -60, 60)))
        grad = design.T @ ((p - y) * weight) + 1e-6 * w
        hess = (design * (p * (1 - p) * weight)[:, None]).T @ design + 1e-6 * np.eye(2)
        w -= np.linalg.solve(hess, grad)
    return float(w[0]), float(w[1])


def before_tree(path: Path) -> Path:
    """The ``src`` folder of the code before (``--before-src``): the tree's root or its ``src`` itself. A path holding
    no ``agentcontext`` package is refused: a subprocess given it on PYTHONPATH would import this venv's install
    instead, and the "before" runs would silently time the code after."""
    path = Path(path).resolve()
    for src in (path / "src", path):
        if (src / "agentcontext" / "__init__.py").is_file():
            return src
    raise SystemExit(f"--before-src {path}: no agentcontext package in it or in its src/; pass the source tree of "
                     "the code before (a git worktree's root, e.g. /work/wt/before)")
