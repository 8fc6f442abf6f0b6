"""all-mpnet-base-v2 run by onnxruntime: the same forward pass as embed/mpnet.py's numpy one, as an ONNX graph built
from the checked ``model.safetensors`` (nothing downloaded) and cached beside it.

The numpy forward measured 0.3-5 texts/s on this machine's 2 busy cores (benchmarks/results/embed_768*.json); the
same weights in onnxruntime run ~10x faster, which makes the 768-dimension model usable as an option and as the
reranker's model (retrieval_rerank.py). The graph takes ``input_ids``, ``position_ids`` and ``attn_bias`` (MPNet's
shared relative-position bias plus the padding mask, computed in numpy by mpnet.py's ``relative_buckets``: small, and
it keeps the graph to plain ops) and returns the last hidden state; pooling and normalisation stay in numpy. The file
is built at first use into the model cache under a name keyed by the weights' sha256 and ``GRAPH_VERSION``, written
atomically; every load checks probe texts against the numpy forward (cosine >= ``MIN_COSINE``) once per process, so a
damaged or stale file is rebuilt, never trusted."""
from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import DependencyMissingError, ValidationError
from . import mpnet
from .base import available_cores
from .shared import process_wide
from .model_files import file_sha256

NAME_INT8 = f"{mpnet.NAME}-int8"
GRAPH_VERSION = 1
INT8_VERSION = 2  # the int8 graph's own version (its file name: model-<sha>-g<GRAPH_VERSION>-q<INT8_VERSION>.onnx)
MIN_COSINE = 0.9999
# the int8 graph's floor against the float forward, measured (q2: smoothed, the GELU lifted): "Sure! " x 70 0.978,
# the empty text 0.988, "ok" 0.993, sentences 0.997-0.999 (q1, plain per-token int8: 0.967, 0.950, 0.988, 0.99-0.998;
# tests/test_mpnet_int8.py)
MIN_COSINE_INT8 = 0.97
# SmoothQuant's strength (``smoothing``) and the texts its activation peaks are measured on at build time (written
# for this: chat turns, questions, notes, a long turn, other scripts; none from an evaluation set)
SMOOTH_ALPHA = 0.5
KEEP_FLOAT_FF2 = False
GELU_FLOOR = np.float32(0.17)  # GELU's least value is -0.16997
CALIBRATION = [
    "Hey! Good to see you, how have you been lately?", "I finally finished the painting I started last spring.",
    "We took the kids camping by the lake last weekend and it rained the whole time, but they loved it anyway.",
    "When did you move to Boston?", "What does Sam like to do after work?", "Thanks so much, that means a lot to me!",
    "The meeting with the adoption agency is on Friday at 10am; I need the forms signed before then.",
    "Deploy failed: the migration 0042_add_index timed out on the orders table (12M rows).",
    "My grandmother taught me to bake bread when I was seven, and I still use her recipe every Sunday.",
    "Is the conference in Paris or in Lyon this year?", "lol yes", "I'm so proud of you for running that marathon!",
    "Note: the user prefers short answers, metric units and no emojis.",
    "Ich habe gestern ein neues Fahrrad gekauft.", "東京で友達と会いました。", "¿Dónde está la biblioteca?",
    "I've been volunteering at the animal shelter twice a week since March; last month we found homes for 14 dogs "
    "and 9 cats, and the director asked me to help organise the fundraiser in the autumn.",
]
PROBES = ["Caroline went to the LGBTQ support group yesterday.", "What did Melanie paint last year?",
          "Sure! " * 70, "Ça va? Größe 東京 🙂"]


def int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` ([in, out]) as int8 values and one float32 scale per output column (symmetric, max / 127)."""
    scale = np.abs(weight).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    return np.clip(np.round(weight / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def linear_inputs() -> dict[str, list[str]]:
    """Every tensor a linear layer reads (``_graph``'s names) -> the weights that read it: q, k and v the previous
    layer's output, o the attention context, the first feed-forward projection the attention block's output, the
    second the GELU."""
    out: dict[str, list[str]] = {}
    for i in range(mpnet.LAYERS):
        p = f"encoder.layer.{i}."
        out["x0" if i == 0 else f"l{i - 1}.x2"] = [p + f"attention.attn.{n}" for n in "qkv"]
        out[f"l{i}.ctx.merged"] = [p + "attention.attn.o"]
        out[f"l{i}.x1"] = [p + "intermediate.dense"]
        out[f"l{i}.gelu"] = [p + "output.dense"]
    return out


def calibrate(w: dict[str, np.ndarray], tokenizer: object, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Each linear layer's input's largest magnitude per channel over ``texts`` (the float graph, one text a run)."""
    import onnxruntime as ort

    names = list(linear_inputs())
    session = ort.InferenceSession(_graph(w, outputs=names).SerializeToString(), providers=["CPUExecutionProvider"])
    table = w["encoder.relative_attention_bias.weight"]
    peaks: dict[str, np.ndarray] = {}
    for enc in tokenizer.encode_batch(list(texts)):  # type: ignore[attr-defined]
        n = len(enc.ids)
        feeds = {"input_ids": np.array([enc.ids], dtype=np.int64),
                 "position_ids": np.arange(n, dtype=np.int64)[None] + mpnet.PAD + 1,
                 "attn_bias": np.ascontiguousarray(table[mpnet.relative_buckets(n)].transpose(2, 0, 1)[None])}
        for name, value in zip(names, session.run(names, feeds)):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return peaks


def smoothing(w: dict[str, np.ndarray], peaks: dict[str, np.ndarray], alpha: float = None) -> dict[str, np.ndarray]:
    """SmoothQuant's factor per channel of each linear layer's input: ``peak ** alpha / weight_peak ** (1 -
    alpha)`` (the weight's largest magnitude over that input channel's row, over every layer reading it)."""
    alpha = SMOOTH_ALPHA if alpha is None else alpha
    out = {}
    for name, readers in linear_inputs().items():
        if name not in peaks:
            continue
        rows = np.max([np.abs(w[r + ".weight"]).max(axis=0) for r in readers], axis=0)  # torch layout [out, in]
        s = np.power(np.maximum(peaks[name], 1e-5), alpha) / np.power(np.maximum(rows, 1e-5), 1 - alpha)
        out[name] = s.astype(np.float32)
    return out


class GraphMismatch(ValidationError):
    """A cached graph whose probe vectors are not its weights' (damaged or stale): it is rebuilt once."""


def _damaged() -> tuple[type[BaseException], ...]:
    """What opening a damaged graph file raises: onnxruntime's load errors, a short probes file, a mismatch."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return (GraphMismatch, ValueError, OSError, EOFError, state.Fail, state.InvalidProtobuf, state.InvalidGraph,
            state.NoSuchFile, state.RuntimeException)


def _graph(w: dict[str, np.ndarray], int8: bool = False, smooth: dict[str, np.ndarray] | None = None,
           outputs: Sequence[str] = (), lift: bool = False, keep_float: Sequence[str] = ()) -> object:
    """The ONNX model of MPNet's encoder over the float32 weights ``w`` (safetensors names, torch layouts).

    ``int8``: every linear layer (q, k, v, o, both feed-forward projections: ~all the multiply-adds of a short text)
    runs as ``MatMulInteger``: its weight as int8 with one scale per output column, its input quantized row by row
    (each token's own scale, its largest magnitude / 127: a text's vector does not depend on what it is batched
    with), exact integer sums scaled back to float32. Attention scores, softmax, LayerNorm and GELU stay float32.
    One quantization of an input serves every layer that reads it (q, k and v read the same rows).

    ``smooth`` (SmoothQuant): an input tensor's name -> one factor per channel: the input is divided by it before
    its rows are quantized and the weight rows that read it multiplied by it (the same product in exact arithmetic),
    so a few channels' large values no longer set every token's int8 step. ``outputs``: intermediate tensors also
    returned (``linear_inputs``' names: the calibration reads them). ``lift``: the GELU's output (>= -0.17) is
    raised by ``GELU_FLOOR`` and quantized unsigned (255 steps over its range, not 127 over half of it), the lift's
    product with the int8 weight taken back from the bias (exact)."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []
    d, heads = mpnet.DIMENSION, mpnet.HEADS
    quantized: dict[str, tuple[str, str]] = {}

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=array.dtype), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def lifted(x: str) -> np.ndarray | None:
        """The per-channel amount added to ``x`` before it is quantized unsigned (``lift``), or None."""
        if not (lift and x.endswith(".gelu")):
            return None
        floor = np.full(w["encoder.layer.0.output.dense.weight"].shape[1], GELU_FLOOR, dtype=np.float32)
        return floor / smooth[x] if smooth and x in smooth else floor

    def rows_uint8(x: str, up: np.ndarray) -> tuple[str, str]:
        """``x + up`` (>= 0) as uint8 (zero point 0) with one scale per row, its peak / 255."""
        raised = node("Add", [x, init(x + ".lift", up)], x + ".lifted")
        peak = node("ReduceMax", [raised, "q.axes"], x + ".peak", keepdims=1)
        scale = node("Max", [node("Mul", [peak, "q.inv255"], x + ".peak255"), "q.tiny"], x + ".scale")
        shifted = node("Add", [node("Div", [raised, scale], x + ".units"), "q.round"], x + ".shifted")
        return node("Cast", [shifted], x + ".u8", to=TensorProto.UINT8), scale

    def rows_int8(x: str) -> tuple[str, str]:
        """``x`` as uint8 (zero point 128) with one scale per row: (values, scales)."""
        name = x
        if name not in quantized:
            if not quantized:
                init("q.axes", np.array([-1], dtype=np.int64))
                init("q.inv127", np.array(1.0 / 127.0, dtype=np.float32))
                init("q.tiny", np.array(1e-12, dtype=np.float32))
                init("q.half", np.array(128.5, dtype=np.float32))  # + 128, rounded by Cast's truncation (>= 1.5)
                init("q.zero", np.array(128, dtype=np.uint8))
                init("q.inv255", np.array(1.0 / 255.0, dtype=np.float32))
                init("q.round", np.array(0.5, dtype=np.float32))
                init("q.zero0", np.array(0, dtype=np.uint8))
            if smooth and x in smooth:
                x = node("Mul", [x, init(x + ".unsmooth", (1.0 / smooth[x]).astype(np.float32))], x + ".smoothed")
            up = lifted(name)
            if up is not None:
                quantized[name] = rows_uint8(x, up)
                return quantized[name]
            peak = node("ReduceMax", [node("Abs", [x], x + ".abs"), "q.axes"], x + ".peak", keepdims=1)
            scale = node("Max", [node("Mul", [peak, "q.inv127"], x + ".peak127"), "q.tiny"], x + ".scale")
            shifted = node("Add", [node("Div", [x, scale], x + ".units"), "q.half"], x + ".shifted")
            quantized[name] = (node("Cast", [shifted], x + ".u8", to=TensorProto.UINT8), scale)
        return quantized[name]

    def linear(x: str, prefix: str, out: str) -> str:
        if not int8 or x in keep_float:
            y = node("MatMul", [x, init(prefix + ".weight.T", w[prefix + ".weight"].T)], out + ".mm")
        else:
            values, scale = rows_int8(x)
            weight = w[prefix + ".weight"].T
            if smooth and x in smooth:
                weight = weight * smooth[x][:, None]
            q, columns = int8_columns(weight)
            up = lifted(x)
            zero = "q.zero" if up is None else "q.zero0"
            sums = node("MatMulInteger", [values, init(prefix + ".weight.q8", q), zero], out + ".sums")
            y = node("Mul", [node("Mul", [node("Cast", [sums], out + ".f", to=TensorProto.FLOAT), scale],
                                  out + ".rows"), init(prefix + ".weight.scale", columns)], out + ".mm")
            if up is not None:  # the lift's product with the weight as quantized, taken back
                bias = (w[prefix + ".bias"] - up @ (q.astype(np.float32) * columns)).astype(np.float32)
                return node("Add", [y, init(prefix + ".bias", bias)], out)
        return node("Add", [y, init(prefix + ".bias", w[prefix + ".bias"])], out)

    def norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, init(prefix + ".weight", w[prefix + ".weight"]),
                                           init(prefix + ".bias", w[prefix + ".bias"])], out, axis=-1,
                    epsilon=mpnet.EPS)

    split = init("heads_shape", np.array([0, 0, heads, d // heads], dtype=np.int64))
    merge = init("merge_shape", np.array([0, 0, d], dtype=np.int64))
    scale = init("scale", np.array(1.0 / np.sqrt(d // heads), dtype=np.float32))
    words = node("Gather", [init("word", w["embeddings.word_embeddings.weight"]), "input_ids"], "words")
    places = node("Gather", [init("pos", w["embeddings.position_embeddings.weight"]), "position_ids"], "places")
    x = norm(node("Add", [words, places], "embedded"), "embeddings.LayerNorm", "x0")
    for i in range(mpnet.LAYERS):
        p = f"encoder.layer.{i}."
        qkv = []
        for n in "qkv":
            t = linear(x, p + f"attention.attn.{n}", f"l{i}.{n}")
            t = node("Reshape", [t, split], f"l{i}.{n}.split")
            qkv.append(node("Transpose", [t], f"l{i}.{n}.heads", perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3]))
        scores = node("Mul", [node("MatMul", [qkv[0], qkv[1]], f"l{i}.qk"), scale], f"l{i}.scaled")
        probs = node("Softmax", [node("Add", [scores, "attn_bias"], f"l{i}.biased")], f"l{i}.probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, qkv[2]], f"l{i}.ctx")], f"l{i}.ctx.t", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge], f"l{i}.ctx.merged")
        attn = node("Add", [linear(ctx, p + "attention.attn.o", f"l{i}.o"), x], f"l{i}.res1")
        x = norm(attn, p + "attention.LayerNorm", f"l{i}.x1")
        h = node("Gelu", [linear(x, p + "intermediate.dense", f"l{i}.ff1")], f"l{i}.gelu")
        x = norm(node("Add", [linear(h, p + "output.dense", f"l{i}.ff2"), x], f"l{i}.res2"), p + "output.LayerNorm",
                 f"l{i}.x2")
    nodes[-1].output[0] = "hidden"
    graph = helper.make_graph(
        nodes, "mpnet", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "l"]),
                         helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["b", "l"]),
                         helper.make_tensor_value_info("attn_bias", TensorProto.FLOAT, ["b", heads, "l", "l"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["b", "l", d])]
        + [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="agentcontext")


def graph_path(weights_sha: str, int8: bool = False) -> Path:
    q = f"-q{INT8_VERSION}" if int8 else ""
    return mpnet.model_cache_dir() / mpnet.NAME / f"model-{weights_sha[:16]}-g{GRAPH_VERSION}{q}.onnx"


def probes_path(graph: Path) -> Path:
    return graph.with_suffix(".probes.npy")


def int8_form(w: dict[str, np.ndarray]) -> dict[str, object]:
    """``_graph``'s int8 options: the inputs of q/k/v, o and the first feed-forward projection smoothed by their
    peaks over ``CALIBRATION`` (the float graph's), the GELU lifted and quantized unsigned (``KEEP_FLOAT_FF2``: the
    second feed-forward projection in float instead)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(mpnet.model_files()["tokenizer.json"]))
    tokenizer.enable_truncation(mpnet.MAX_TOKENS)
    tokenizer.no_padding()
    peaks = {n: p for n, p in calibrate(w, tokenizer, CALIBRATION).items() if not n.endswith(".gelu")}
    gelu = [f"l{i}.gelu" for i in range(mpnet.LAYERS)] if KEEP_FLOAT_FF2 else []
    return {"smooth": smoothing(w, peaks), "lift": True, "keep_float": gelu}


def build(weights: Path, target: Path, int8: bool = False) -> Path:
    """Write the ONNX graph of ``weights`` to ``target`` atomically (~440 MB float, ~180 MB ``int8``), and beside it
    the numpy forward's vectors of ``PROBES`` (mpnet.py), which every load checks the graph against."""
    try:
        import onnx
    except ImportError as exc:
        raise DependencyMissingError(f"building the onnxruntime form of {mpnet.NAME} needs the onnx package ({exc}): "
                                     "pip install onnx", missing="onnx") from exc
    w = mpnet.load_safetensors(weights)
    model = _graph(w, int8=True, **int8_form(w)) if int8 else _graph(w)
    target.parent.mkdir(parents=True, exist_ok=True)
    key = file_sha256(weights)
    if key not in _reference:  # the numpy forward's probe vectors, computed once a process (a rebuild reuses them)
        _reference[key] = mpnet.mpnet_embedder().embed(PROBES)
    ref = _reference[key]
    for final, write in ((probes_path(target), lambda tmp: np.save(open(tmp, "wb"), ref)),
                         (target, lambda tmp: onnx.save_model(model, tmp))):
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        try:
            write(tmp)
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def tensor(path: Path, name: str) -> np.ndarray:
    """One float32 tensor of a safetensors file, read alone (the relative-position table: 1.5 KB of 440 MB)."""
    import json
    import struct

    with open(path, "rb") as fh:
        size = struct.unpack("<Q", fh.read(8))[0]
        spec = json.loads(fh.read(size))[name]
        start, end = spec["data_offsets"]
        fh.seek(8 + size + start)
        return np.frombuffer(fh.read(end - start), dtype=np.float32).reshape(spec["shape"]).copy()


class MPNetOnnxEmbedder:
    """all-mpnet-base-v2 through onnxruntime (768 dims; the same vectors as ``MPNetEmbedder``, cosine >= 0.9999).

    ``int8``: the linear layers in int8 (``_graph``): ~2.5x less CPU a text, vectors within ``MIN_COSINE_INT8`` of
    the float forward on the probes (a model of its own name, ``all-mpnet-base-v2-int8``: a workspace built with one
    keeps it)."""

    dimension = mpnet.DIMENSION
    batch = 16

    def __init__(self, threads: int | None = None, int8: bool = False) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.int8 = int8
        self.name = NAME_INT8 if int8 else mpnet.NAME
        self.floor = MIN_COSINE_INT8 if int8 else MIN_COSINE
        files = mpnet.model_files()  # both files checked by their sha256
        self.path = graph_path(file_sha256(files["model.safetensors"]), int8)
        self._table = tensor(files["model.safetensors"], "encoder.relative_attention_bias.weight")
        self._tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self._tokenizer.enable_truncation(mpnet.MAX_TOKENS)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or available_cores()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.rebuilt = False
        if not (self.path.exists() and probes_path(self.path).exists()):
            build(files["model.safetensors"], self.path, int8)
            self.rebuilt = True
        try:
            self._open(ort, options)
        except _damaged():  # a damaged or stale cached file: built again from the checked weights, never trusted
            if self.rebuilt:
                raise
            build(files["model.safetensors"], self.path, int8)
            self.rebuilt = True
            self._open(ort, options)

    def _open(self, ort: object, options: object) -> None:
        # without onnxruntime's SkipLayerNormalization fusion, as MiniLM (embed/base.py): the int8 graph measured 9%
        # less CPU a text without it (28.9 against 31.6 ms, one thread), the same vectors
        self._session = ort.InferenceSession(str(self.path), options,  # type: ignore[attr-defined]
                                             providers=["CPUExecutionProvider"],
                                             disabled_optimizers=["SkipLayerNormFusion"])
        self._check(self.path)

    def _check(self, path: Path) -> None:
        """The graph's probe vectors against the numpy forward's, saved when it was built (once per process for
        files that have not changed: their size and mtime are part of the key)."""
        key = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in (path, probes_path(path)))
        if key in _checked:
            return
        ref = np.load(probes_path(path))
        got = self.embed(PROBES)
        cos = (ref * got).sum(axis=1)
        if ref.shape != got.shape or float(cos.min()) < self.floor:
            raise GraphMismatch(f"the onnxruntime form of {self.name} gives other vectors than its weights "
                                f"(cosine {float(cos.min()):.5f} < {self.floor}); delete {path} to rebuild it",
                                cosine=float(cos.min()))
        _checked.add(key)

    def _run(self, tokens: list[list[int]], idx: list[int]) -> np.ndarray:
        width = max(len(tokens[i]) for i in idx)
        ids = np.full((len(idx), width), mpnet.PAD, dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            ids[row, :len(tokens[i])] = tokens[i]
            mask[row, :len(tokens[i])] = 1
        positions = np.where(mask > 0, np.cumsum(mask, axis=1) + mpnet.PAD, mpnet.PAD)
        rel = self._relative_bias(width)
        bias = (rel[None] + ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9)).astype(np.float32)
        hidden = self._session.run(None, {"input_ids": ids, "position_ids": positions,  # type: ignore[attr-defined]
                                          "attn_bias": np.ascontiguousarray(bias)})[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def _relative_bias(self, length: int) -> np.ndarray:
        return self._table[mpnet.relative_buckets(length)].transpose(2, 0, 1)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        tokens = [e.ids for e in self._tokenizer.encode_batch([t or " " for t in texts])]
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))
        with self._lock:
            for start in range(0, len(order), self.batch):
                idx = order[start:start + self.batch]
                out[idx] = self._run(tokens, idx)
        return out


_checked: set[tuple] = set()
_reference: dict[str, np.ndarray] = {}  # weights' sha256 -> the numpy forward's vectors of PROBES
_shared = process_wide(MPNetOnnxEmbedder)
_shared_int8 = process_wide(lambda: MPNetOnnxEmbedder(int8=True))


def mpnet_onnx_embedder(int8: bool = False) -> MPNetOnnxEmbedder:
    """The process-wide onnxruntime all-mpnet-base-v2 embedder (``int8``: its int8 graph), loaded (and its graph
    built) on first use."""
    return _shared_int8() if int8 else _shared()
