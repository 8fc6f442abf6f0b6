"""The default embedder's load in a new process (import, model files checked, session opened, first text embedded):
the fused model as a build artifact (issue 27 section 3) against the code before it, which derived the fused graph
at first load into the model cache and loaded it from there afterwards, measured in the same run.

``--baseline-src`` names the ``src`` folder of the code before (e.g. ``git archive 7908be6 src | tar -x -C /tmp/b``).
Printed (medians of ``--runs`` runs, the runs interleaved): ``before_first`` (an empty model cache: the derivation),
``before_cached`` (the derived 94 MB file in the cache), ``after`` (the artifact named by
``AGENTCONTEXT_MODEL_ARTIFACT`` or installed), each in seconds, and the ratios after / before.

Run: nice -n 10 .venv/bin/python benchmarks/embed_load.py --baseline-src /tmp/b/src [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, report  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
CODE = ("from agentcontext.embed.base import MiniLMEmbedder; e = MiniLMEmbedder(); e.embed(['hello']); "
        "print(e.fused)")


def run(src: Path, cache: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(src), "AGENTCONTEXT_MODEL_CACHE": str(cache)}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"before_first": [], "before_cached": [], "after": []}
    fused: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            empty = Path(tmp) / f"empty{i}"
            for label, src, cache in (("before_first", args.baseline_src, empty),
                                      ("before_cached", args.baseline_src, empty),  # what the first one derived
                                      ("after", SRC, Path(tmp) / "unused")):
                seconds, fused[label] = run(src, cache)
                times[label].append(seconds)
    medians = {k: round(median(v), 2) for k, v in times.items()}
    ranges = {k: [round(min(v), 2), round(max(v), 2)] for k, v in times.items()}
    report("embed_load", {"load_average": [round(x, 1) for x in os.getloadavg()], "fused": fused,
                          "seconds": medians, "ranges": ranges,
                          "after_over_before_first": round(medians["after"] / medians["before_first"], 3),
                          "after_over_before_cached": round(medians["after"] / medians["before_cached"], 3)})


if __name__ == "__main__":
    main()
