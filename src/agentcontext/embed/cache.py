"""Embedding through the store's cache: text is keyed by content hash, so it is embedded once."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import ValidationError
from ..model import content_hash
from ..store.base import Store
from .base import Embedder

Progress = Callable[[int, int], None]


def _check(embedder: Embedder, vectors: np.ndarray, count: int) -> None:
    if vectors.shape != (count, embedder.dimension):
        raise ValidationError(
            f"embedder {embedder.name!r} returned shape {vectors.shape}, expected ({count}, {embedder.dimension})",
            model=embedder.name)


def embed_texts(store: Store, embedder: Embedder, texts: Sequence[str], batch: int = 256) -> np.ndarray:
    """Vectors for ``texts``, computing (and caching in the store) only the ones not seen before."""
    hashes = [content_hash(t) for t in texts]
    known = store.get_vectors(list(dict.fromkeys(hashes)), embedder.name)
    todo = {h: t for h, t in zip(hashes, texts) if h not in known}
    if todo:
        items = list(todo.items())
        for start in range(0, len(items), batch):
            part = items[start: start + batch]
            vecs = embedder.embed([t for _, t in part])
            _check(embedder, vecs, len(part))
            fresh = {h: v for (h, _), v in zip(part, vecs)}
            store.put_vectors(fresh, embedder.name)
            known.update(fresh)
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.stack([known[h] for h in hashes]).astype(np.float32, copy=False)


def new_vectors(store: Store, embedder: Embedder, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors (by content hash) of the ``texts`` the store has none for, computed now and not written (the
    caller writes them with what it stores)."""
    hashes = list(dict.fromkeys(content_hash(t) for t in texts))
    known = store.get_vectors(hashes, embedder.name)
    todo = {h: t for h, t in zip((content_hash(t) for t in texts), texts) if h not in known}
    if not todo:
        return {}
    vecs = embedder.embed(list(todo.values()))
    _check(embedder, vecs, len(todo))
    return dict(zip(todo, vecs))


def embed_missing(store: Store, embedder: Embedder, namespace: str | Sequence[str] | None = None,
                  progress: Progress | None = None, batch: int = 256) -> int:
    """Compute vectors for every active node in ``namespace`` whose text has none yet."""
    missing = store.missing_vectors(embedder.name, namespace)
    total = len(missing)
    for start in range(0, total, batch):
        part = missing[start: start + batch]
        vecs = embedder.embed([t for _, t in part])
        _check(embedder, vecs, len(part))
        store.put_vectors({h: v for (h, _), v in zip(part, vecs)}, embedder.name)
        if progress:
            progress(min(start + batch, total), total)
    return total
