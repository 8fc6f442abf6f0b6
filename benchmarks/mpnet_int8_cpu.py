"""CPU a LoCoMo dev turn through all-mpnet-base-v2's graphs, one thread, one text a call (issue 29): the float graph,
the int8 graph before SmoothQuant (q1), the shipped int8 graph (smoothed, the GELU lifted) and the variant keeping
the second feed-forward projection in float (q2f); the thread's CPU time, so a busy machine's waits are left out.
Medians of ``--rounds`` rounds, the graphs alternating.

    nice -n 10 .venv/bin/python benchmarks/mpnet_int8_cpu.py [--texts 60] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpnet_int8_layers import turns  # noqa: E402

from agentcontext.embed import mpnet_onnx  # noqa: E402


def variant(version: object, plain: bool = False, float_ff2: bool = False) -> object:
    saved = mpnet_onnx.INT8_VERSION, mpnet_onnx.int8_form, mpnet_onnx.KEEP_FLOAT_FF2
    mpnet_onnx.INT8_VERSION, mpnet_onnx.KEEP_FLOAT_FF2 = version, float_ff2
    if plain:
        mpnet_onnx.int8_form = lambda w: {}
    try:
        return mpnet_onnx.MPNetOnnxEmbedder(threads=1, int8=True)
    finally:
        mpnet_onnx.INT8_VERSION, mpnet_onnx.int8_form, mpnet_onnx.KEEP_FLOAT_FF2 = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    graphs = {"float": mpnet_onnx.MPNetOnnxEmbedder(threads=1), "int8 q1 (plain)": variant(1, plain=True),
              f"int8 q{mpnet_onnx.INT8_VERSION} (shipped)": mpnet_onnx.MPNetOnnxEmbedder(threads=1, int8=True),
              "int8 q2f (ff2 float)": variant("2f", float_ff2=True)}
    texts = turns(args.texts)
    for g in graphs.values():
        g.embed(texts[:3])
    got: dict[str, list[float]] = {name: [] for name in graphs}
    for _ in range(args.rounds):
        for name, g in graphs.items():
            started = time.thread_time()
            for t in texts:
                g.embed([t])
            got[name].append((time.thread_time() - started) / len(texts) * 1000)
    base = statistics.median(got["float"])
    for name, runs in got.items():
        m = statistics.median(runs)
        print(f"{name:24} {m:6.1f} ms CPU a turn (runs {min(runs):.1f}-{max(runs):.1f}), x float {m / base:.2f}")


if __name__ == "__main__":
    main()
