"""benchmarks/locomo_gather_cached.py with all-mpnet-base-v2's int8 graph keeping its second feed-forward projection
in float (embed/mpnet_onnx.py ``KEEP_FLOAT_FF2``; its own graph file, ``-q2f``): the variant issue 29's measurement
compared against the all-int8 graph. Use a ``--cache`` of its own (the model keeps its name).

    nice -n 10 .venv/bin/python benchmarks/mpnet_int8_ff2float.py --models mpnet-int8 --cache DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentcontext.embed import mpnet_onnx  # noqa: E402

mpnet_onnx.KEEP_FLOAT_FF2 = True
mpnet_onnx.INT8_VERSION = f"{mpnet_onnx.INT8_VERSION}f"

if __name__ == "__main__":
    import runpy

    runpy.run_path(str(Path(__file__).resolve().parent / "locomo_gather_cached.py"), run_name="__main__")
