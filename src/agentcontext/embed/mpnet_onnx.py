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

GRAPH_VERSION = 1
MIN_COSINE = 0.9999
PROBES = ["Caroline went to the LGBTQ support group yesterday.", "What did Melanie paint last year?",
          "Sure! " * 70, "Ça va? Größe 東京 🙂"]


def _graph(w: dict[str, np.ndarray]) -> object:
    """The ONNX model of MPNet's encoder over the float32 weights ``w`` (safetensors names, torch layouts)."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []
    d, heads = mpnet.DIMENSION, mpnet.HEADS

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=array.dtype), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        y = node("MatMul", [x, init(prefix + ".weight.T", w[prefix + ".weight"].T)], out + ".mm")
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
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["b", "l", d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="agentcontext")


def graph_path(weights_sha: str) -> Path:
    return mpnet.model_cache_dir() / mpnet.NAME / f"model-{weights_sha[:16]}-g{GRAPH_VERSION}.onnx"


def probes_path(graph: Path) -> Path:
    return graph.with_suffix(".probes.npy")


def build(weights: Path, target: Path) -> Path:
    """Write the ONNX graph of ``weights`` to ``target`` atomically (~440 MB), and beside it the numpy forward's
    vectors of ``PROBES`` (mpnet.py), which every load checks the graph against."""
    try:
        import onnx
    except ImportError as exc:
        raise DependencyMissingError(f"building the onnxruntime form of {mpnet.NAME} needs the onnx package ({exc}): "
                                     "pip install onnx", missing="onnx") from exc
    model = _graph(mpnet.load_safetensors(weights))
    target.parent.mkdir(parents=True, exist_ok=True)
    ref = mpnet.mpnet_embedder().embed(PROBES)
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
    """all-mpnet-base-v2 through onnxruntime (768 dims; the same vectors as ``MPNetEmbedder``, cosine >= 0.9999)."""

    name = mpnet.NAME
    dimension = mpnet.DIMENSION
    batch = 16

    def __init__(self, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        files = mpnet.model_files()  # both files checked by their sha256
        path = graph_path(file_sha256(files["model.safetensors"]))
        if not (path.exists() and probes_path(path).exists()):
            build(files["model.safetensors"], path)
        self._table = tensor(files["model.safetensors"], "encoder.relative_attention_bias.weight")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or available_cores()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self._tokenizer.enable_truncation(mpnet.MAX_TOKENS)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()
        self._check(path)

    def _check(self, path: Path) -> None:
        """The graph's probe vectors against the numpy forward's, saved when it was built (once per process)."""
        if str(path) in _checked:
            return
        ref = np.load(probes_path(path))
        got = self.embed(PROBES)
        cos = (ref * got).sum(axis=1)
        if float(cos.min()) < MIN_COSINE:
            raise ValidationError(f"the onnxruntime form of {mpnet.NAME} gives other vectors than its weights "
                                  f"(cosine {float(cos.min()):.5f}); delete {mpnet.model_cache_dir() / mpnet.NAME} "
                                  "to rebuild it", cosine=float(cos.min()))
        _checked.add(str(path))

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


_checked: set[str] = set()
_shared = process_wide(MPNetOnnxEmbedder)


def mpnet_onnx_embedder() -> MPNetOnnxEmbedder:
    """The process-wide onnxruntime all-mpnet-base-v2 embedder, loaded (and its graph built) on first use."""
    return _shared()
