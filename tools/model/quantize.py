"""The feed-forward output projections of the fused model computed in int8, one activation scale per token.

The shipped model stores its weights in int8 and onnxruntime computes with them dequantized to float32. Each
layer's feed-forward output projection (``MatMul`` of the 1536-wide GELU output by a [1536, 384] weight) is ~1/3 of
the model's multiply-adds. This rewrite runs it as ``MatMulInteger`` (uint8 activations x the model's own int8
weights, exact integer sums): each token's row is quantized with its own scale (its largest magnitude / 127), so a
text's vector does not depend on what it is batched or padded with. The first token ([CLS]) and the last real one
([SEP]) of every text stay in float32: their rows carry the model's large outlier channels, which one scale per row
cannot hold, and in a short text (a query) they are most of the mean-pooled vector (measured: quantizing them too
gave the empty text cosine 0.9968 against the float model, "hi" 0.9989; keeping them, >= 0.999 on every probe set).

Only the FFN output projections are rewritten: int8 activations on the attention or FFN input projections cost
more cosine than they save time (benchmarks/embed_int8.py --per-token). The quality gate (cosine >= ``MIN_COSINE``
of agentcontext.embed.artifact against the plain model's vectors on the probe texts) is checked by the build
(tools/model/build.py)."""
from __future__ import annotations

import numpy as np

QUANTIZE_VERSION = 1
_P = "agentcontext_q_"  # prefix of every name this rewrite adds


def int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``weight`` as int8 values times one float32 scale per column, when that holds exactly (the model's own
    int8 weights, dequantized), else ``None``."""
    scale = np.abs(weight).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.round(weight / scale)
    if np.abs(q).max() > 127 or float(np.abs(q * scale - weight).max()) > 1e-6 * max(1.0, float(scale.max())):
        return None
    return q.astype(np.int8), scale.astype(np.float32)


def quantize_ffn_down(model: object, hidden: int, float_below: int) -> int:
    """Rewrite each ``MatMul`` by a constant [4 * hidden, hidden] weight whose values are exact int8 columns into
    per-token int8 compute (the first and last real token of each text in float32) for model runs at least
    ``float_below`` tokens wide; narrower runs keep the float ``MatMul`` (an ``If`` on the run's width: the caller
    batches texts shorter than ``float_below`` apart from longer ones). Returns how many were rewritten."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    inits = {i.name: i for i in graph.initializer}
    if "attention_mask" not in {i.name for i in graph.input}:
        return 0
    new_inits: list = []
    out: list = []

    def const(name: str, value: np.ndarray) -> str:
        new_inits.append(numpy_helper.from_array(value, _P + name))
        return _P + name

    def node(into: list, op: str, inputs: list[str], output: str, **attrs) -> str:
        into.append(helper.make_node(op, inputs, [_P + output], name=_P + output, **attrs))
        return _P + output

    rewritten = 0
    s: dict[str, str] = {}
    for original in graph.node:
        weight = None
        if original.op_type == "MatMul" and original.input[1] in inits:
            weight = numpy_helper.to_array(inits[original.input[1]])
        split = int8_columns(weight) if weight is not None and weight.shape == (4 * hidden, hidden) else None
        if split is None:
            out.append(original)
            continue
        if not s:  # once: whether this run is quantized, which rows are a text's first and last real token
            mask, one = "attention_mask", const("one", np.array(1, np.int64))
            axis1, end = const("axis1", np.array([1], np.int64)), const("axis_end", np.array([-1], np.int64))
            width = node(out, "Gather", [node(out, "Shape", [mask], "mask_shape"), one], "width", axis=0)
            cum = node(out, "CumSum", [mask, one], "cum")
            total = node(out, "ReduceSum", [mask, axis1], "total", keepdims=1)
            real = node(out, "Cast", [mask], "real", to=TensorProto.BOOL)
            last = node(out, "And", [node(out, "Equal", [cum, total], "at_total"), real], "is_last")
            s = {"cond": node(out, "GreaterOrEqual", [width, const("float_below", np.array(float_below, np.int64))],
                              "quantized"),
                 "first": node(out, "Unsqueeze", [node(out, "Equal", [cum, one], "is_first"), end], "first3"),
                 "last": node(out, "Unsqueeze", [last, end], "last3"),
                 "last_index": node(out, "Sub", [total, one], "last_index"), "axis1": axis1,
                 "zero": const("zero", np.array(0, np.int64)), "start": const("start", np.array([0], np.int64)),
                 "stop": const("stop", np.array([2], np.int64)),
                 "rows": const("rows", np.array([-1, 4 * hidden], np.int64)),
                 "wide": const("wide", np.array([hidden], np.int64)), "zp": const("zp", np.array(128, np.uint8)),
                 "wz": const("wz", np.array(0, np.int8)), "tiny": const("tiny", np.array(1e-12, np.float32)),
                 "k127": const("k127", np.array(127.0, np.float32))}
        x, w, p = original.input[0], original.input[1], f"{rewritten}_"
        wq, ws = const(p + "w", split[0]), const(p + "ws", split[1])
        q: list = []  # the int8 branch
        flat = node(q, "Reshape", [x, s["rows"]], p + "flat")  # [tokens, 4h]
        amax = node(q, "ReduceMax", [node(q, "Abs", [flat], p + "abs")], p + "amax", axes=[1], keepdims=0)
        scale = node(q, "Max", [node(q, "Div", [amax, s["k127"]], p + "s0"), s["tiny"]], p + "scale")  # per token
        zps = node(q, "Expand", [s["zp"], node(q, "Shape", [scale], p + "n")], p + "zps")
        acc = node(q, "MatMulInteger", [node(q, "QuantizeLinear", [flat, scale, zps], p + "xq", axis=0), wq,
                                        s["zp"], s["wz"]], p + "acc")
        y = node(q, "Mul", [node(q, "Mul", [node(q, "Cast", [acc], p + "accf", to=TensorProto.FLOAT),
                                            node(q, "Unsqueeze", [scale, s["axis1"]], p + "scol")], p + "y0"), ws],
                 p + "y1")
        batch_seq = node(q, "Slice", [node(q, "Shape", [x], p + "xs"), s["start"], s["stop"]], p + "bs")
        y = node(q, "Reshape", [y, node(q, "Concat", [batch_seq, s["wide"]], p + "shape", axis=0)], p + "y")
        head = node(q, "MatMul", [node(q, "Gather", [x, s["zero"]], p + "x_first", axis=1), w], p + "y_first")
        tail = node(q, "MatMul", [node(q, "GatherND", [x, s["last_index"]], p + "x_last", batch_dims=1), w],
                    p + "y_last")
        y = node(q, "Where", [s["last"], node(q, "Unsqueeze", [tail, s["axis1"]], p + "y_last3"), y], p + "y2")
        y = node(q, "Where", [s["first"], node(q, "Unsqueeze", [head, s["axis1"]], p + "y_first3"), y], p + "y3")
        f: list = []  # the float branch: the original product
        node(f, "MatMul", [x, w], p + "float")
        value = helper.make_tensor_value_info
        out.append(helper.make_node(
            "If", [s["cond"]], list(original.output), name=_P + p + "if",
            then_branch=helper.make_graph(q, _P + p + "int8", [], [value(y, TensorProto.FLOAT, None)]),
            else_branch=helper.make_graph(f, _P + p + "fp32", [], [value(_P + p + "float", TensorProto.FLOAT, None)])))
        rewritten += 1
    if rewritten:
        del graph.node[:]
        graph.node.extend(out)
        graph.initializer.extend(new_inits)
    return rewritten
