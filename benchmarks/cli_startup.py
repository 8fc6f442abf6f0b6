"""CLI start-up as whole processes (issue 27, section 2): ``agentcontext --version`` and ``agentcontext search``
(the targets), ``memory retrieve``, a plain command (``policy list``) and a newly declared one (``decision
precedents``), with this checkout's code beside main's (the baseline), measured in the same run, alternating before
and after so a drifting machine moves both alike.

    python benchmarks/cli_startup.py [--runs 15] [--before REF]

The baseline is ``git archive REF src`` (default ``main``) unpacked into a temporary folder and put first on
PYTHONPATH; "after" is this checkout's ``src``. Both run with the same interpreter, on one workspace made here
(the semdag example pack, deferred embeddings, so the search answers by words and meaning alike for both). Prints
the median (and min-max) wall seconds of each command before and after, and after/before as a ratio (the target:
at most 1.0, "no slower than today").
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"--version": ["--version"],
            "search": ["search", "lib:semdag", "account invitations", "--limit", "5", "--json"],
            "memory retrieve": ["memory", "retrieve", "tea", "-k", "3", "--json"],
            "policy list": ["policy", "list", "--json"],  # a plain command (Typer before issue 27 s2)
            "decision precedents": ["decision", "precedents", "refund", "--json"]}  # declared in issue 27 s2


def unpack(ref: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def once(src: Path, home: Path, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), *args], env=env,
                          capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{src}: {' '.join(args)} failed: {proc.stderr[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", default="main")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = unpack(opts.before, Path(tmp) / "before"), ROOT / "src"
        home = Path(tmp) / ".agentcontext"
        env = {**os.environ, "PYTHONPATH": str(after)}
        run = [sys.executable, "-m", "agentcontext.cli", "--home", str(home)]
        subprocess.run([*run, "init"], env=env, check=True, capture_output=True)
        subprocess.run([*run, "pack", "add", str(ROOT / "examples" / "packs" / "semdag"), "--defer-embeddings"],
                       env=env, check=True, capture_output=True)
        subprocess.run([*run, "memory", "store", "Alice prefers tea in the morning"], env=env, check=True,
                       capture_output=True)
        figures = {}
        for name, args in COMMANDS.items():
            once(before, home, args), once(after, home, args)  # warm the file cache for both
            times: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(opts.runs):
                times["before"].append(once(before, home, args))
                times["after"].append(once(after, home, args))
            b, a = statistics.median(times["before"]), statistics.median(times["after"])
            ratios = sorted(x / y for x, y in zip(times["after"], times["before"]))
            figures[name] = {"before_s": round(b, 4), "after_s": round(a, 4), "ratio": round(a / b, 3),
                             "pairwise_ratio_median": round(statistics.median(ratios), 3),
                             "before_range": [round(min(times["before"]), 4), round(max(times["before"]), 4)],
                             "after_range": [round(min(times["after"]), 4), round(max(times["after"]), 4)],
                             "runs": opts.runs}
            print(f"{name:>20}: before {b:.3f} s ({min(times['before']):.3f}-{max(times['before']):.3f}), after "
                  f"{a:.3f} s ({min(times['after']):.3f}-{max(times['after']):.3f}), after/before {a / b:.2f} "
                  f"(pairwise median {statistics.median(ratios):.2f}); target <= 1.00")
        report("cli_startup", {"baseline": f"git archive {opts.before}", **figures}, quiet=True)


if __name__ == "__main__":
    main()
