"""The default model's self-attention rewritten into onnxruntime's ``Attention`` kernel (a build step: tools/model).

The shipped model was exported by torch's dynamo exporter: each layer's attention is three projections, head
reshapes and transposes, a scaled ``MatMul``, a mask built with ``Where`` and a ``Softmax`` guarded by ``IsNaN``.
Neither onnxruntime's own graph optimizer nor ``onnxruntime.transformers``' BERT optimizer recognises that shape
(the latter fuses only ``BiasGelu``, which measured no faster), so this module rewrites it: one
``com.microsoft.Attention`` node per layer (Q, K and V weights concatenated into one matmul, the padding mask
as its ``mask_index``). Everything else in the graph is left as onnxruntime's basic optimizer folds it.
tools/model/build.py runs it, checks the result and packs it; the runtime only loads it (agentcontext.embed.artifact).
"""
from __future__ import annotations

import numpy as np

FUSION_VERSION = 2


class FusionError(Exception):
    """The graph is not the shape this rewrite knows, or the fused model does not reproduce the plain one."""


def fuse_attention(model: object, num_heads: int) -> int:
    """Rewrite each self-attention block of ``model`` (an ``onnx.ModelProto`` after basic optimisation) into one
    ``com.microsoft.Attention`` node of ``num_heads`` heads; returns how many were fused. Raises ``FusionError``
    on a block that looks like attention but is not the known shape (the caller then keeps the plain model)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    inits = {i.name: i for i in graph.initializer}
    consumers: dict[str, list] = {}
    producer: dict[str, object] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producer[name] = node

    def const(name: str) -> np.ndarray | None:
        return numpy_helper.to_array(inits[name]) if name in inits else None

    def single(name: str, op: str):
        found = [n for n in consumers.get(name, []) if n.op_type == op]
        return found[0] if len(found) == 1 else None

    def scalar(node) -> float | None:  # the constant factor of a Mul by a scalar
        values = [const(i) for i in node.input] if node is not None and node.op_type == "Mul" else []
        found = [float(v.ravel()[0]) for v in values if v is not None and v.size == 1]
        return found[0] if len(found) == 1 else None

    mask = "agentcontext_attention_mask_int32"
    replaced: dict[str, object] = {}  # output tensor -> the Attention node that now produces it
    new_inits = []
    for x, users in list(consumers.items()):
        projections = []  # (weight, bias, the head transpose after the projection)
        for mm in users:
            weight = const(mm.input[1]) if mm.op_type == "MatMul" and mm.input[0] == x else None
            if weight is None or weight.ndim != 2:
                continue
            add = single(mm.output[0], "Add")
            bias = const(next((i for i in add.input if i != mm.output[0]), "")) if add is not None else None
            reshape = single(add.output[0], "Reshape") if bias is not None else None
            transpose = single(reshape.output[0], "Transpose") if reshape is not None else None
            if transpose is not None and bias.shape == (weight.shape[1],):
                projections.append((weight, bias, transpose))
        if len(projections) != 3:
            continue
        roles: dict[str, tuple] = {}
        for weight, bias, transpose in projections:
            perm = [list(a.ints) for a in transpose.attribute if a.name == "perm"]
            if perm != [[0, 2, 1, 3]]:
                raise FusionError(f"unexpected head transpose {perm} after {x}")
            for user in consumers.get(transpose.output[0], []):
                if user.op_type == "MatMul" and user.input[1] == transpose.output[0]:
                    roles["v"] = (weight, bias, user)
                elif user.op_type == "Mul":
                    scores = [n for n in consumers.get(user.output[0], []) if n.op_type == "MatMul"
                              and n.input[0] == user.output[0]]
                    if scores:
                        roles["q"] = (weight, bias, scores[0], scalar(user))
                elif user.op_type == "Reshape":  # K goes on through a reshape and transpose to K^T, then its scale
                    roles["k"] = (weight, bias, user)
        if set(roles) != {"q", "k", "v"}:
            continue
        width = roles["q"][0].shape[1]
        if width % num_heads:
            raise FusionError(f"hidden size {width} is not a multiple of {num_heads} heads")
        q_scale, k_scale = roles["q"][3], scalar(producer.get(roles["q"][2].input[1]))
        expected = 1.0 / np.sqrt(width // num_heads)
        if q_scale is None or k_scale is None or abs(q_scale * k_scale - expected) > 1e-5 * expected:
            raise FusionError(f"attention scores after {x} are not scaled by 1/sqrt(head size)")
        out_transpose = single(roles["v"][2].output[0], "Transpose")
        out_reshape = single(out_transpose.output[0], "Reshape") if out_transpose is not None else None
        if out_reshape is None:
            raise FusionError(f"the attention output after {x} is not reshaped back to [batch, seq, hidden]")
        w_name, b_name = f"agentcontext_qkv_weight_{len(replaced)}", f"agentcontext_qkv_bias_{len(replaced)}"
        new_inits += [numpy_helper.from_array(np.concatenate([roles[r][0] for r in "qkv"], axis=1), w_name),
                      numpy_helper.from_array(np.concatenate([roles[r][1] for r in "qkv"]), b_name)]
        replaced[out_reshape.output[0]] = helper.make_node(
            "Attention", [x, w_name, b_name, mask], [out_reshape.output[0]],
            name=f"agentcontext_attention_{len(replaced)}", domain="com.microsoft", num_heads=num_heads)
    if not replaced:
        return 0
    nodes = [helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32, name="agentcontext_mask")]
    nodes += [n for n in graph.node if not set(n.output) & set(replaced)] + list(replaced.values())
    graph.initializer.extend(new_inits)
    _keep_live_sorted(graph, nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):  # type: ignore[attr-defined]
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))  # type: ignore[attr-defined]
    return len(replaced)


def _keep_live_sorted(graph, nodes: list) -> None:
    """Replace ``graph``'s nodes by the ``nodes`` the outputs need, in topological order; drop unused weights."""
    producer = {out: n for n in nodes for out in n.output}
    live: dict[int, object] = {}
    stack = [o.name for o in graph.output]
    while stack:
        node = producer.get(stack.pop())
        if node is not None and id(node) not in live:
            live[id(node)] = node
            stack.extend(node.input)
    ready = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    ordered, pending = [], [n for n in nodes if id(n) in live]
    while pending:
        waiting = []
        for node in pending:
            if all(i in ready for i in node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            raise FusionError("the rewritten graph has a cycle")
        pending = waiting
    used = {i for n in ordered for i in n.input}
    weights = [i for i in graph.initializer if i.name in used]
    del graph.node[:]
    graph.node.extend(ordered)
    del graph.initializer[:]
    graph.initializer.extend(weights)
