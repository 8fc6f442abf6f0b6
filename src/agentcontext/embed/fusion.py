"""The default model with its self-attention fused into onnxruntime's ``Attention`` kernel, made once per model
file and cached.

The shipped model was exported by torch's dynamo exporter: each layer's attention is three projections, head
reshapes and transposes, a scaled ``MatMul``, a mask built with ``Where`` and a ``Softmax`` guarded by ``IsNaN``.
Neither onnxruntime's own graph optimizer nor ``onnxruntime.transformers``' BERT optimizer recognises that shape
(the latter fuses only ``BiasGelu``, which measured no faster), so this module rewrites it: one
``com.microsoft.Attention`` node per layer (Q, K and V weights concatenated into one matmul, the padding mask
as its ``mask_index``). Everything else in the graph is left as onnxruntime's basic optimizer folds it (the int8
weights dequantized once, to the float32 values the model computes with today).

In the same file each layer's feed-forward output projection runs in int8 with one activation scale per token for
model runs at least ``FLOAT_BELOW`` tokens wide (quantize.py: ~1/3 of the model's multiply-adds, 1.13x; texts
shorter than that, such as queries, are computed exactly as before).

The derived file is made from the local model file at first use (nothing is downloaded), checked against the
plain model on probe texts and written atomically into the model cache under a name keyed by the source file's
sha256, onnxruntime's version and this module's ``FUSION_VERSION`` (and quantize.py's). The quality bar: cosine
>= ``MIN_COSINE`` (0.999) against the plain model on every probe (padding, truncation, non-ASCII text), and
>= ``SAME_COSINE`` on the probes narrower than ``FLOAT_BELOW`` (there only the attention is fused, float noise).
The vector model id stays the same: a store's vectors written by the plain or an earlier fused model and the
vectors of this one measured cosine >= 0.999 on every probe set (the pack texts, the Nenjo snapshot, LoCoMo dev
turns and questions, short, non-ASCII and truncated texts: docs pack "performance"). The derived model's own probe
vectors travel in the file's metadata, and every load re-checks them strictly (``SAME_COSINE``), so a damaged cache
file is discarded and rebuilt, never trusted. When the int8 part cannot be built or does not pass, the file holds
the attention fusion alone. When anything else fails (the ``onnx`` package missing, an unfamiliar graph, a cache
folder that cannot be written, a check that does not pass) the plain model is used and
the reason is logged once per process."""
from __future__ import annotations

import base64
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from .model_files import file_sha256
from .quantize import FLOAT_BELOW, QUANTIZE_VERSION, quantize_ffn_down

log = logging.getLogger(__name__)

FUSION_VERSION = 2
MIN_COSINE = 0.999  # the quality bar: derived against plain vectors, on every probe text
SAME_COSINE = 0.99999  # computed the same way, up to float noise (~1e-7): the float path, and every load's re-check
PROBES = ["", "a", "The cat sat on the mat", "naïve café, 日本語のテキスト and emoji 🙂",
          "how do agents rotate tokens when the billing quota is reached? " * 5,
          "how do agents rotate tokens when the billing quota is reached? " * 3, "word " * 400]
SHORT_PROBES = 4  # the first ones, narrower than FLOAT_BELOW tokens (tests/test_embed_fusion.py checks it)
LOAD_PROBES = 5  # re-checked at every load: the short ones and one of the int8 width (the rest when the file is made)
_META_KEY = "agentcontext.probe_vectors"
_warned: set[str] = set()
_warn_lock = threading.Lock()

Embed = Callable[[object, list[str]], np.ndarray]  # (session, texts) -> pooled, normalised vectors


class FusionError(Exception):
    """The graph is not the shape this rewrite knows, or the fused model does not reproduce the plain one."""


def model_cache_dir() -> Path:
    """Where derived model files live: ``AGENTCONTEXT_MODEL_CACHE``, else ``$XDG_CACHE_HOME/agentcontext/models``,
    else ``~/.cache/agentcontext/models``."""
    if os.environ.get("AGENTCONTEXT_MODEL_CACHE"):
        return Path(os.environ["AGENTCONTEXT_MODEL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentcontext" / "models"


def fused_path(source: Path, cache: Path | None = None) -> Path:
    import onnxruntime as ort

    key = f"{file_sha256(source)[:32]}-ort{ort.__version__}-v{FUSION_VERSION}q{QUANTIZE_VERSION}f{FLOAT_BELOW}"
    return (cache or model_cache_dir()) / f"{source.stem}-fused-{key}.onnx"


def warn_once(reason: str) -> None:
    with _warn_lock:
        if reason in _warned:
            return
        _warned.add(reason)
    log.warning("agentcontext: using the plain embedding model (%s); vectors are the same, embedding is slower",
                reason)


def load_fused(source: Path, make_session: Callable[[str], object], embed: Embed, num_heads: int,
               cache: Path | None = None) -> tuple[Path, object] | None:
    """The fused model derived from ``source`` (made and cached on first use) and a session on it, or ``None``
    after logging why (the caller then uses the plain model). ``make_session(path)`` opens a session with the caller's
    options; ``embed(session, texts)`` returns normalised vectors."""
    try:
        target = fused_path(source, cache)
    except OSError as exc:
        warn_once(f"cannot read {source}: {exc}")
        return None
    if target.exists():
        session = _checked(target, make_session, embed)
        if session is not None:
            return target, session
        log.warning("agentcontext: discarding the damaged fused model %s and deriving it again", target)
        target.unlink(missing_ok=True)
    try:
        derive(source, target, make_session, embed, num_heads)
    except ImportError as exc:
        warn_once(f"the onnx package is missing ({exc})")
        return None
    except FusionError as exc:
        warn_once(f"the model graph could not be fused: {exc}")
        return None
    except OSError as exc:
        warn_once(f"the fused model could not be written to {target.parent}: {exc}")
        return None
    session = _checked(target, make_session, embed)
    if session is None:
        warn_once(f"the fused model written to {target} does not reproduce its probe vectors")
        return None
    return target, session


def _checked(path: Path, make_session: Callable[[str], object], embed: Embed) -> object | None:
    """The session on ``path`` if it loads and reproduces the probe vectors stored in it, else ``None``."""
    try:
        session = make_session(str(path))
        meta = session.get_modelmeta().custom_metadata_map  # type: ignore[attr-defined]
        expected = np.frombuffer(base64.b64decode(meta[_META_KEY]), dtype=np.float32).reshape(len(PROBES), -1)
    except (KeyError, ValueError, OSError) as exc:
        log.warning("agentcontext: fused model %s unreadable: %s", path, exc)
        return None
    except Exception as exc:  # onnxruntime's load errors derive from Exception only (a damaged file)
        log.warning("agentcontext: fused model %s does not load: %s", path, exc)
        return None
    got = embed(session, PROBES[:LOAD_PROBES])
    if expected.shape[1:] != got.shape[1:] or float((got * expected[:LOAD_PROBES]).sum(axis=1).min()) < SAME_COSINE:
        return None
    return session


def derive(source: Path, target: Path, make_session: Callable[[str], object], embed: Embed,
           num_heads: int) -> None:
    """Write the fused model for ``source`` to ``target`` (atomically), checked against the plain model."""
    import onnx  # the optional part: without it the plain model is used
    import onnxruntime as ort

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fusing-") as tmp:
        basic = Path(tmp) / "basic.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # portable: no CPU-specific
        options.optimized_model_filepath = str(basic)                                  # kernels at this level
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        model = onnx.load(str(basic))
        fused = fuse_attention(model, num_heads)
        if fused == 0:
            raise FusionError("no self-attention block of the known shape was found")
        plain = embed(make_session(str(source)), PROBES)
        staged = Path(tmp) / "fused.onnx"
        onnx.save(model, str(staged))
        got = embed(make_session(str(staged)), PROBES)
        cosine = float((got * plain).sum(axis=1).min())
        if cosine < SAME_COSINE:  # the attention fusion alone computes the same vectors
            raise FusionError(f"fused vectors differ from the plain model's (minimum cosine {cosine:.6f})")
        hidden = next(i.dims[0] for i in model.graph.initializer if i.name == "agentcontext_qkv_weight_0")
        quantized = Path(tmp) / "quantized.onnx"
        int8 = onnx.load(str(staged))
        if quantize_ffn_down(int8, hidden, FLOAT_BELOW):
            onnx.save(int8, str(quantized))
            try:
                checked = _meets_bar(embed(make_session(str(quantized)), PROBES), plain)
            except Exception as exc:  # onnxruntime's load errors derive from Exception only: keep the fusion alone
                log.warning("agentcontext: the int8 feed-forward projections do not load (%s); fused float only", exc)
                checked = None
            if checked is not None:
                model, got = int8, checked
            else:
                log.warning("agentcontext: the int8 feed-forward projections miss the quality bar; fused float only")
        entry = model.metadata_props.add()
        entry.key, entry.value = _META_KEY, base64.b64encode(got.astype(np.float32).tobytes()).decode("ascii")
        onnx.save(model, str(staged))
        with open(staged, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(staged, target)  # atomic: a reader sees no file or the whole one
    log.info("agentcontext: fused %d attention blocks of %s into %s", fused, source.name, target)


def _meets_bar(got: np.ndarray, plain: np.ndarray) -> np.ndarray | None:
    """``got`` (a derived model's probe vectors) if it meets the quality bar against ``plain``, else ``None``."""
    cosines = (got * plain).sum(axis=1)
    if float(cosines.min()) < MIN_COSINE or float(cosines[:SHORT_PROBES].min()) < SAME_COSINE:
        return None
    return got


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
