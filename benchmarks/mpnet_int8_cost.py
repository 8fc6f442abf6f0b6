"""benchmarks/memory_cost.py ``--models`` with two more MiniLM + int8 MPNet pairs registered in this process only, so
one run measures them beside MiniLM, the float pair and the shipped int8 pair (issue 29): ``pair-int8-q1``, the int8
graph before SmoothQuant (plain per-token int8: ``INT8_VERSION`` 1, its cached file), and ``pair-int8-q2f``, the
variant keeping the second feed-forward projection in float (benchmarks/mpnet_int8_ff2float.py).

    nice -n 10 .venv/bin/python benchmarks/mpnet_int8_cost.py --models pair,pair-int8,pair-int8-q1,pair-int8-q2f
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

from agentcontext.embed import models, mpnet_onnx
from agentcontext.embed.pair import MIX, OFFSET, SCALE, PairEmbedder
from agentcontext.embed.shared import process_wide
from agentcontext.engine.fusion import MODEL_WEIGHTS


def _variant(name: str, version: object, plain: bool, float_ff2: bool) -> object:
    def load() -> object:
        saved = mpnet_onnx.INT8_VERSION, mpnet_onnx.int8_form, mpnet_onnx.KEEP_FLOAT_FF2
        mpnet_onnx.INT8_VERSION, mpnet_onnx.KEEP_FLOAT_FF2 = version, float_ff2
        if plain:
            mpnet_onnx.int8_form = lambda w: {}
        try:
            second = mpnet_onnx.MPNetOnnxEmbedder(int8=True)
        finally:
            mpnet_onnx.INT8_VERSION, mpnet_onnx.int8_form, mpnet_onnx.KEEP_FLOAT_FF2 = saved
        return PairEmbedder(name, models.load_model("minilm"), second, MIX, SCALE, OFFSET)

    return process_wide(load)


for suffix, version, plain, float_ff2 in (("q1", 1, True, False), ("q2f", "2f", False, True)):
    name = f"{models.MINILM_MPNET_INT8}-{suffix}"
    spec = models.MODELS[models.MINILM_MPNET_INT8]
    models.MODELS[name] = models.ModelSpec(name, spec.dimension, spec.install, (f"pair-int8-{suffix}",),
                                           _variant(name, version, plain, float_ff2), spec.summary)
    MODEL_WEIGHTS[name] = MODEL_WEIGHTS[models.MINILM_MPNET_INT8]

if __name__ == "__main__":
    sys.argv[0] = str(Path(__file__).resolve().parent / "memory_cost.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
