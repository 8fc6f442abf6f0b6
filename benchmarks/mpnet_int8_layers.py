"""Where all-mpnet-base-v2's int8 graph (embed/mpnet_onnx.py) loses against the float one, on LoCoMo dev turns
(issue 29): the cosine of every layer's output to the float forward's (token by token, and the pooled vector), which
linear layers' inputs carry outlier channels (a channel's largest magnitude over its median channel's), and the error
each linear layer alone adds (its float input quantized as the graph does, against the float product).

    nice -n 10 .venv/bin/python benchmarks/mpnet_int8_layers.py [--texts 300] [--plain] [--json FILE]

(the per-linear errors are of plain per-token int8 in both forms; the layer and pooled cosines are the graph's)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from agentcontext.embed import mpnet, mpnet_onnx

DEV = Path("/work/shared/data/locomo/locomo_dev.json")


def turns(n: int) -> list[str]:
    """``n`` turns spread over the dev split's conversations (every k-th turn)."""
    out = []
    for sample in json.loads(DEV.read_text()):
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                out.extend(t["text"] for t in value)
    step = max(1, len(out) // n)
    return out[::step][:n]


def session(model: object, outputs: list[str]) -> object:
    """An onnxruntime session of ``model`` that also returns ``outputs`` (intermediate tensors)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    for name in outputs:
        model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep every named tensor
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def feeds(emb: object, tokens: list[int]) -> dict[str, np.ndarray]:
    ids = np.array([tokens], dtype=np.int64)
    positions = np.arange(len(tokens), dtype=np.int64)[None] + mpnet.PAD + 1
    bias = emb._relative_bias(len(tokens))[None].astype(np.float32)
    return {"input_ids": ids, "position_ids": positions, "attn_bias": np.ascontiguousarray(bias)}


def cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--json", default="")
    ap.add_argument("--plain", action="store_true", help="the int8 graph before SmoothQuant (q1) instead of the "
                    "shipped one")
    args = ap.parse_args()
    started = time.perf_counter()
    emb = mpnet_onnx.MPNetOnnxEmbedder()
    weights = mpnet.load_safetensors(mpnet.model_files()["model.safetensors"])
    layers = mpnet.LAYERS
    # the inputs of the linear layers: q/k/v read the previous layer's output, o the attention context, ff1 the
    # attention block's output, ff2 the GELU
    inputs = {"qkv": ["x0"] + [f"l{i}.x2" for i in range(layers - 1)], "o": [f"l{i}.ctx.merged" for i in range(layers)],
              "ff1": [f"l{i}.x1" for i in range(layers)], "ff2": [f"l{i}.gelu" for i in range(layers)]}
    outs = [f"l{i}.x2" for i in range(layers - 1)] + [f"l{i}.x1" for i in range(layers)]
    names = sorted(set(sum(inputs.values(), [])) | set(outs))
    full = session(mpnet_onnx._graph(weights), names)
    form = {} if args.plain else mpnet_onnx.int8_form(weights)
    small = session(mpnet_onnx._graph(weights, int8=True, **form), names)
    texts = turns(args.texts)
    toks = [e.ids for e in emb._tokenizer.encode_batch([t or " " for t in texts])]
    layer_cos = {n: [] for n in outs + ["hidden"]}
    pooled = []
    peaks: dict[str, list[np.ndarray]] = {n: [] for n in sum(inputs.values(), [])}
    row_ratio: dict[str, list[float]] = {n: [] for n in peaks}
    lin_err: dict[str, list[float]] = {}
    for t in toks:
        f = feeds(emb, t)
        a = dict(zip(["hidden"] + names, full.run(["hidden"] + names, f)))
        b = dict(zip(["hidden"] + names, small.run(["hidden"] + names, f)))
        for n in layer_cos:
            layer_cos[n].append(float(cos_rows(a[n][0], b[n][0]).mean()))
        pa, pb = a["hidden"][0].mean(0), b["hidden"][0].mean(0)
        pooled.append(float(cos_rows(pa, pb)))
        for kind, xs in inputs.items():
            for i, n in enumerate(xs):
                x = np.abs(a[n][0])  # [tokens, channels]
                peaks[n].append(x.max(0))
                row_ratio[n].append(float(np.median(x.max(1) / np.maximum(np.median(x, 1), 1e-12))))
                # that linear layer alone: the float input quantized per token, the weight per column
                prefix = {"qkv": "attention.attn.q", "o": "attention.attn.o", "ff1": "intermediate.dense",
                          "ff2": "output.dense"}[kind]
                wt = weights[f"encoder.layer.{i}.{prefix}.weight"].T
                q, col = mpnet_onnx.int8_columns(wt)
                xin = a[n][0]
                s = np.maximum(np.abs(xin).max(1, keepdims=True) / 127, 1e-12)
                xq = np.clip(np.round(xin / s), -127, 127)
                got = (xq @ q.astype(np.float32)) * s * col
                ref = xin @ wt
                lin_err.setdefault(f"{kind}{i}", []).append(float(cos_rows(got, ref).mean()))
    report = {"texts": len(texts), "pooled_cosine": {"mean": float(np.mean(pooled)), "min": float(np.min(pooled)),
                                                       "p5": float(np.percentile(pooled, 5))},
              "layer_cosine": {n: round(float(np.mean(v)), 5) for n, v in layer_cos.items()},
              "linear_alone_cosine": {n: round(float(np.mean(v)), 5) for n, v in lin_err.items()}, "outliers": {}}
    for n, ps in peaks.items():
        p = np.max(np.stack(ps), 0)
        order = np.argsort(-p)
        report["outliers"][n] = {"max_over_median": round(float(p.max() / np.median(p)), 1),
                                 "top": [[int(c), round(float(p[c]), 1)] for c in order[:6]],
                                 "median_channel_peak": round(float(np.median(p)), 2),
                                 "token_max_over_median": round(float(np.median(row_ratio[n])), 1)}
    print(f"{len(texts)} LoCoMo dev turns, {time.perf_counter() - started:.0f} s")
    print(f"pooled cosine int8 vs float: mean {report['pooled_cosine']['mean']:.5f}, "
          f"p5 {report['pooled_cosine']['p5']:.5f}, min {report['pooled_cosine']['min']:.5f}")
    print("layer outputs (mean token cosine):", " ".join(f"{n}={v:.4f}" for n, v in report["layer_cosine"].items()))
    print("each linear alone (mean token cosine):")
    for kind in inputs:
        print(f"  {kind:4}", " ".join(f"{report['linear_alone_cosine'][f'{kind}{i}']:.4f}" for i in range(layers)))
    print("outlier channels of each linear's input (channel peak / median channel peak; a token's max / median):")
    for n, o in report["outliers"].items():
        print(f"  {n:14} {o['max_over_median']:7.1f}  token {o['token_max_over_median']:6.1f}  top {o['top'][:4]}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
