"""An embedder wrapped with a cache on disk (one npz per model), so a benchmark rerun does not embed again.

    embedder = cached(load_model("e5-small"), Path("/work/recall29-cache"))
    ... use it ...
    embedder.save()

Texts are keyed by their sha1 and by whether they were embedded as a query (a model with ``embed_query``, e5's
"query: " prefix, embeds queries apart) or as stored text. Only benchmarks use it: the library's own cache is the
store's (embed/cache.py, by content hash).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from agentcontext.embed.models import QueryEmbedder


CHUNK, SAVE_EVERY = 32, 512


def _key(text: str, query: bool) -> str:
    return ("q" if query else "p") + hashlib.sha1(text.encode("utf-8")).hexdigest()


class DiskCachedEmbedder:
    """``inner`` with every vector it returns remembered in ``folder/<name>.npz`` (``save`` writes it)."""

    def __init__(self, inner: object, folder: Path) -> None:
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.path = Path(folder) / f"{self.name}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self._vectors = dict(zip(data["keys"].tolist(), data["vectors"]))
        self.loaded, self.embedded, self._saved = len(self._vectors), 0, 0

    def _get(self, texts: Sequence[str], query: bool) -> np.ndarray:
        texts = list(texts)
        keys = [_key(t, query) for t in texts]
        missing = sorted({i for i, k in enumerate(keys) if k not in self._vectors}, key=lambda i: len(texts[i]))
        for start in range(0, len(missing), CHUNK):  # in chunks: a large model's batch of 1,000 turns is GBs
            part = missing[start:start + CHUNK]
            todo = [texts[i] for i in part]
            if query:
                got = np.stack([self.inner.embed_query(t) for t in todo])
            else:
                got = np.asarray(self.inner.embed(todo), dtype=np.float32)
            for i, v in zip(part, got):
                self._vectors[keys[i]] = np.asarray(v, dtype=np.float32)
            self.embedded += len(part)
            if self.embedded - self._saved >= SAVE_EVERY:  # a killed run keeps what it embedded
                self.save()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = self._vectors[k]
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(texts, False)

    def save(self) -> None:
        if not self.embedded and self.path.exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self._vectors[k] for k in keys]))
        tmp.replace(self.path)
        self._saved = self.embedded


class DiskCachedQueryEmbedder(DiskCachedEmbedder):
    def embed_query(self, text: str) -> np.ndarray:
        return self._get([text], True)[0]


def cached(inner: object, folder: Path) -> DiskCachedEmbedder:
    """``inner`` behind a disk cache; a query embedder (``embed_query``) stays one."""
    cls = DiskCachedQueryEmbedder if isinstance(inner, QueryEmbedder) else DiskCachedEmbedder
    return cls(inner, folder)
