"""Why the default embedder does not compute in int8 (issue 9 s3): the model's speed and its vectors with real
int8 compute (this CPU's VNNI kernels through onnxruntime's ``DynamicQuantizeMatMul`` and ``QAttention``) against
today's float32 compute of the same int8 weights, in the same run.

The shipped model stores its weights as per-column symmetric int8 and today's graph dequantizes them once; the
variants here keep exactly those weights (recovered from the float graph with error 0) and quantize each
activation per tensor at run time (``DynamicQuantizeLinear``), for every projection or for one kind at a time.
The bar for shipping it: the minimum cosine against today's vectors >= 0.999 over the benchmark's pack docs (and
LoCoMo's probe); a variant below it on a subset is below it on all of them.

Printed per variant: texts per CPU-second on one thread (range over rounds, alternated with today's session) and
the minimum, 1st percentile and mean cosine against today's vectors.

``--per-token`` adds a quality probe of finer activation scales: each projection's input quantized to int8 with one
scale per token row (symmetric), simulated in float (quantize-dequantize, then the float product of the model's own
int8 weights: the numbers a per-token int8 kernel gives, up to summation order), so only its cosines are printed;
a kernel is worth writing only if it passes the bar.

Run: .venv/bin/python benchmarks/embed_int8.py [--texts 2000] [--rounds 3] [--variants all,attention,output,up,down]
     [--per-token all,all_but_down,down]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import report  # noqa: E402
from embed_one import pack_texts  # noqa: E402

from agentcontext.embed.base import MiniLMEmbedder  # noqa: E402

KINDS = {  # which projections a variant computes in int8 (hidden 384, feed-forward 1536)
    "all": {"attention", "output", "up", "down"}, "attention": {"attention"}, "output": {"output"},
    "up": {"up"}, "down": {"down"}, "all_but_down": {"attention", "output", "up"},
}


def per_column_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.round(w / scale).astype(np.int8)
    return q, scale.astype(np.float32), float(np.abs(q.astype(np.float32) * scale - w).max())


def quantize(src: Path, dst: Path, kinds: set[str]) -> tuple[int, float]:
    """Write ``src`` (the fused float graph) with the projections of ``kinds`` computed in int8; returns how many
    nodes were rewritten and the largest weight recovery error (0: the source model's own int8 weights)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes, extra, worst, count = [], [], 0.0, 0

    def int8_weight(name: str) -> tuple[str, str, str]:
        nonlocal worst
        q, scale, err = per_column_int8(numpy_helper.to_array(inits[name]))
        worst = max(worst, err)
        names = (f"{name}_i8", f"{name}_i8_scale", f"{name}_i8_zero")
        extra.extend([numpy_helper.from_array(q, names[0]), numpy_helper.from_array(scale, names[1]),
                      numpy_helper.from_array(np.zeros(scale.shape, np.int8), names[2])])
        return names

    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            shape = tuple(inits[node.input[1]].dims)
            kind = {(384, 384): "output", (384, 1536): "up", (1536, 384): "down"}.get(shape)
            if kind in kinds:
                b, scale, zero = int8_weight(node.input[1])
                nodes.append(helper.make_node("DynamicQuantizeMatMul", [node.input[0], b, scale, zero],
                                              list(node.output), name=node.name + "_int8", domain="com.microsoft"))
                count += 1
                continue
        if node.op_type == "Attention" and "attention" in kinds:
            x = node.input[0]
            xq = [f"{x}_u8", f"{x}_u8_scale", f"{x}_u8_zero"]
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], xq, name=node.name + "_quantize"))
            b, scale, zero = int8_weight(node.input[1])
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            nodes.append(helper.make_node("QAttention", [xq[0], b, node.input[2], xq[1], scale, node.input[3],
                                                         xq[2], zero], list(node.output), name=node.name + "_int8",
                                          domain="com.microsoft", **attrs))
            count += 1
            continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(extra)
    used = {i for n in graph.node for i in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.save(model, str(dst))
    return count, worst


def per_token_probe(src: Path, dst: Path, kinds: set[str]) -> int:
    """Write ``src`` with the inputs of the projections of ``kinds`` quantized per token (see the module's note);
    returns how many inputs were quantized."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    opset = {o.domain: o.version for o in model.opset_import}[""]
    inits = {i.name: i for i in graph.initializer}
    graph.initializer.extend([numpy_helper.from_array(np.array(127.0, np.float32), "pt_127"),
                              numpy_helper.from_array(np.array([-1], np.int64), "pt_last")])
    nodes, count = [], 0

    def quantized(x: str) -> str:
        a, m, s, d, r, o = (f"{x}_pt{count}_{k}" for k in "amsdro")
        reduce = (helper.make_node("ReduceMax", [a, "pt_last"], [m], keepdims=1) if opset >= 18 else
                  helper.make_node("ReduceMax", [a], [m], axes=[-1], keepdims=1))
        nodes.extend([helper.make_node("Abs", [x], [a]), reduce, helper.make_node("Div", [m, "pt_127"], [s]),
                      helper.make_node("Div", [x, s], [d]), helper.make_node("Round", [d], [r]),
                      helper.make_node("Mul", [r, s], [o])])
        return o

    for node in graph.node:
        kind = None
        if node.op_type == "MatMul" and node.input[1] in inits:
            kind = {(384, 384): "output", (384, 1536): "up", (1536, 384): "down"}.get(tuple(inits[node.input[1]].dims))
        elif node.op_type == "Attention":
            kind = "attention"
        if kind in kinds:
            node.input[0] = quantized(node.input[0])
            count += 1
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, str(dst))
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=2000, help="pack docs compared (10000: all of packs.py's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--speed-texts", type=int, default=500)
    parser.add_argument("--variants", default="all,attention,output,up,down")
    parser.add_argument("--per-token", default="", help="per-token activation variants to probe for quality")
    args = parser.parse_args()
    load_before = os.getloadavg()
    today = MiniLMEmbedder(threads=1)
    if not today.fused:
        raise SystemExit("the fused model is not installed here (make model; embed/artifact.py): nothing to compare")
    texts = pack_texts(args.texts)
    figures: dict = {"texts": len(texts), "load_average_before": [round(x, 1) for x in load_before],
                     "bar": "min cosine >= 0.999 against today's vectors", "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        embedders = {"today_float32": today}
        rewritten = {}
        # the variants rewrite float initializers: the fused model built without int8 weight storage (compact.py)
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tools.model.build import build

        source = Path(tmp) / "float-weights"
        build(source, MiniLMEmbedder(threads=1, fuse=False), compact=lambda model: (0, 0))
        for name in args.variants.split(","):
            path = Path(tmp) / f"{name}.onnx"
            rewritten[name] = quantize(source / "model.onnx", path, KINDS[name])
            e = MiniLMEmbedder(threads=1)
            e._narrow = e._open(str(path))  # the same embedder (tokenizing, batches, pooling), int8 compute
            embedders[name] = e
        rates: dict[str, list[float]] = {k: [] for k in embedders}
        sample = texts[:args.speed_texts]
        for _ in range(args.rounds):
            for label, e in embedders.items():  # alternated, so load slows each alike
                cpu = time.process_time()
                e.embed(sample)
                rates[label].append(len(sample) / (time.process_time() - cpu))
        ref = today.embed(texts)
        figures["today_texts_per_cpu_second"] = [round(min(rates["today_float32"]), 1),
                                                 round(max(rates["today_float32"]), 1)]
        for name, (count, err) in rewritten.items():
            cos = (embedders[name].embed(texts) * ref).sum(axis=1)
            speed = [round(min(rates[name]), 1), round(max(rates[name]), 1)]
            figures["variants"][name] = {
                "int8_nodes": count, "weight_recovery_error": err, "texts_per_cpu_second": speed,
                "speed_over_today": round(float(np.median(rates[name]) / np.median(rates["today_float32"])), 2),
                "min_cosine": round(float(cos.min()), 6), "p1_cosine": round(float(np.percentile(cos, 1)), 6),
                "mean_cosine": round(float(cos.mean()), 6), "meets_bar": bool(cos.min() >= 0.999)}
        for name in filter(None, args.per_token.split(",")):
            path = Path(tmp) / f"per_token_{name}.onnx"
            count = per_token_probe(today.model_path, path, KINDS[name])
            e = MiniLMEmbedder(threads=1)
            e._session = e._open(str(path))
            cos = (e.embed(texts) * ref).sum(axis=1)
            figures.setdefault("per_token_quality_probe", {})[name] = {
                "quantized_inputs": count, "min_cosine": round(float(cos.min()), 6),
                "p1_cosine": round(float(np.percentile(cos, 1)), 6), "mean_cosine": round(float(cos.mean()), 6),
                "meets_bar": bool(cos.min() >= 0.999)}
            print(f"per-token {name}: min cosine {cos.min():.6f}", flush=True)
    figures["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    report("embed_int8", figures)


if __name__ == "__main__":
    main()
