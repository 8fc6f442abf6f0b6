"""Every weight of the fused model stored as int8 with its float32 scales, as the shipped model stores them.

onnxruntime's basic optimizer folds the shipped model's int8 weights into float32 initializers, so the fused graph
written from it is ~94 MB. Each of those weights is exactly int8 values times one scale per column (the projections)
or per row (the embedding tables): this pass stores it so again, as ``Cast`` (int8 to float) and ``Mul`` by the
scales in front of the graph, which onnxruntime folds back into the same float32 weights when it opens a session
(the fused model's vectors are unchanged: cosine 1 - 1e-7; the file is ~25 MB). A weight that is not exactly int8
stays as it is. An int8 weight the graph already holds (the int8 feed-forward projections) is reused."""
from __future__ import annotations

import hashlib

import numpy as np

_P = "agentcontext_c_"  # prefix of every name this pass adds
MIN_VALUES = 4096  # smaller weights (biases, norms) stay float32: not worth a node


def int8_split(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``weight`` (2-D float32) as int8 values and float32 scales (one per column, else one per row, shaped to
    broadcast) whose product is exactly ``weight`` up to float rounding, else ``None``."""
    for axis in (0, 1):
        scale = (np.abs(weight).max(axis=axis, keepdims=True) / 127.0).astype(np.float32)
        scale[scale == 0] = 1.0
        q = np.round(weight / scale)
        if np.abs(q).max() > 127:
            continue
        if float(np.abs(q.astype(np.float32) * scale - weight).max()) <= 1e-6 * max(1.0, float(scale.max())):
            return q.astype(np.int8), scale
    return None


def compact_weights(model: object) -> tuple[int, int]:
    """Store ``model``'s (an ``onnx.ModelProto``) exact-int8 float weights as int8 and scales; returns how many were
    stored so and the bytes saved."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    known = {}  # the int8 weights already in the graph, by content
    for init in graph.initializer:
        if init.data_type == TensorProto.INT8:
            known[_key(numpy_helper.to_array(init))] = init.name
    kept, added, nodes = [], [], []
    count = saved = 0
    for init in graph.initializer:
        split = None
        if init.data_type == TensorProto.FLOAT and len(init.dims) == 2 and init.dims[0] * init.dims[1] >= MIN_VALUES:
            split = int8_split(numpy_helper.to_array(init))
        if split is None:
            kept.append(init)
            continue
        q, scale = split
        name = known.get(_key(q))
        if name is None:
            name = known[_key(q)] = f"{_P}{count}_q"
            added.append(numpy_helper.from_array(q, name))
            saved += q.size * 3
        else:
            saved += q.size * 4
        added.append(numpy_helper.from_array(scale, f"{_P}{count}_scale"))
        nodes += [helper.make_node("Cast", [name], [f"{_P}{count}_f"], to=TensorProto.FLOAT, name=f"{_P}{count}_cast"),
                  helper.make_node("Mul", [f"{_P}{count}_f", f"{_P}{count}_scale"], [init.name],
                                   name=f"{_P}{count}_scale_mul")]
        saved -= scale.size * 4
        count += 1
    if count:
        rest = list(graph.node)
        del graph.node[:]
        graph.node.extend(nodes + rest)
        del graph.initializer[:]
        graph.initializer.extend(kept + added)
    return count, saved


def _key(values: np.ndarray) -> tuple:
    return values.shape, hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()
