"""The int8 MPNet graph's construction (embed/mpnet_onnx.py ``_graph``, issue 29): SmoothQuant's per-channel factors
and the GELU's unsigned lift keep the float product, and they bring a layer whose inputs carry outlier channels (as
MPNet's LayerNorm outputs do: a few channels 30-60x the median) closer to the float forward than plain per-token int8.
Random weights of one MPNet layer, so the test runs where MPNet is not installed (CI)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from agentcontext.embed import mpnet, mpnet_onnx  # noqa: E402

D, FF, VOCAB = mpnet.DIMENSION, 3072, 64


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def dense(out: int, inp: int) -> np.ndarray:
        return (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": rng.standard_normal((VOCAB, D)).astype(np.float32),
         "embeddings.position_embeddings.weight": rng.standard_normal((64, D)).astype(np.float32) * 0.1,
         "encoder.relative_attention_bias.weight": rng.standard_normal((mpnet.BUCKETS, mpnet.HEADS)).astype(np.float32)}
    p = "encoder.layer.0."
    for name in ("q", "k", "v", "o"):
        w[p + f"attention.attn.{name}.weight"] = dense(D, D)
        w[p + f"attention.attn.{name}.bias"] = np.zeros(D, np.float32)
    w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = dense(FF, D), np.zeros(FF, np.float32)
    w[p + "output.dense.weight"], w[p + "output.dense.bias"] = dense(D, FF), np.zeros(D, np.float32)
    for norm in ("embeddings.LayerNorm", p + "attention.LayerNorm", p + "output.LayerNorm"):
        gamma = np.ones(D, np.float32)
        gamma[[5, 300, 555]] = 40.0  # outlier channels, as MPNet's
        w[norm + ".weight"], w[norm + ".bias"] = gamma, np.zeros(D, np.float32)
    return w


def _tokenizer() -> object:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {f"w{i}": i for i in range(2, VOCAB)} | {"[UNK]": 0, "<pad>": 1}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(f"w{i}" for i in rng.integers(2, VOCAB, size=rng.integers(4, 30))) for _ in range(n)]


def _pooled(model: object, tok: object, w: dict[str, np.ndarray], texts: list[str]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    table = w["encoder.relative_attention_bias.weight"]
    out = []
    for enc in tok.encode_batch(texts):
        n = len(enc.ids)
        feeds = {"input_ids": np.array([enc.ids], np.int64),
                 "position_ids": np.arange(n, dtype=np.int64)[None] + mpnet.PAD + 1,
                 "attn_bias": np.ascontiguousarray(table[mpnet.relative_buckets(n)].transpose(2, 0, 1)[None])}
        h = session.run(["hidden"], feeds)[0][0].mean(0)
        out.append(h / np.linalg.norm(h))
    return np.stack(out)


def test_smoothing_and_the_gelu_lift_bring_the_int8_graph_closer_to_the_float_one(monkeypatch):
    monkeypatch.setattr(mpnet, "LAYERS", 1)
    rng = np.random.default_rng(7)
    w, tok = _weights(rng), _tokenizer()
    texts = _texts(rng, 24)
    peaks = mpnet_onnx.calibrate(w, tok, _texts(rng, 8))  # calibrated on other texts than it is measured on
    assert set(peaks) == set(mpnet_onnx.linear_inputs()) and peaks["x0"].shape == (D,)
    assert peaks["x0"][[5, 300, 555]].min() > 5 * np.median(peaks["x0"])  # the outlier channels are seen
    smooth = mpnet_onnx.smoothing(w, {n: p for n, p in peaks.items() if not n.endswith(".gelu")})
    assert set(smooth) == {"x0", "l0.ctx.merged", "l0.x1"}
    ref = _pooled(mpnet_onnx._graph(w), tok, w, texts)
    plain = _pooled(mpnet_onnx._graph(w, int8=True), tok, w, texts)
    fixed = _pooled(mpnet_onnx._graph(w, int8=True, smooth=smooth, lift=True), tok, w, texts)
    lifted = _pooled(mpnet_onnx._graph(w, int8=True, lift=True), tok, w, texts)
    err = {name: float(1 - (v * ref).sum(axis=1).mean()) for name, v in
           (("plain", plain), ("fixed", fixed), ("lifted", lifted))}
    assert err["fixed"] < 0.5 * err["plain"], err
    # the lift alone: no worse (its bias correction takes the lift's product back; a wrong one would show here; the
    # random layer's GELU has none of MPNet's sparse peaks, where it helps)
    assert err["lifted"] <= 1.05 * err["plain"], err
    # the second feed-forward projection kept in float: closer still
    kept = _pooled(mpnet_onnx._graph(w, int8=True, smooth=smooth, keep_float=["l0.gelu"]), tok, w, texts)
    assert float(1 - (kept * ref).sum(axis=1).mean()) < err["fixed"], err
