"""The embeddings behind ``index``: our embedder by default (``embed`` left out or ``"agentcontext"``), or the
caller's LangChain ``Embeddings`` / function, wrapped so vectors are cached in the store by text hash and model."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...embed.cache import embed_texts
from ...errors import ValidationError


class LangChainEmbedder:
    """A LangGraph ``embed`` (an ``Embeddings`` or a function of texts) as our ``Embedder`` protocol."""

    def __init__(self, embeddings: Any, dims: int, name: str | None = None) -> None:
        self.embeddings = embeddings
        self.dimension = int(dims)
        self.name = name or f"langgraph:{type(embeddings).__module__}.{type(embeddings).__qualname__}:{dims}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = np.asarray(self.embeddings.embed_documents(list(texts)), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape != (len(texts), self.dimension):
            raise ValidationError(f"the index's embed returned vectors of shape {vecs.shape}, expected "
                                  f"({len(texts)}, {self.dimension}); set index['dims'] to its dimension",
                                  dims=self.dimension)
        return vecs


def embedder_for(ws: Any, index: dict[str, Any]) -> tuple[Any, bool]:
    """(the embedder, whether it is ours: our scores are hybrid, a caller's are its cosine similarity)."""
    embed = index.get("embed")
    if embed is None or embed == "agentcontext":
        ours = ws.embedder
        dims = index.get("dims")
        if dims is not None and int(dims) != ours.dimension:
            raise ValidationError(f"index dims={dims} but agentcontext's embedder gives {ours.dimension}; leave "
                                  "dims out or pass your own embed", dims=dims)
        return ours, True
    from langgraph.store.base.embed import ensure_embeddings

    if "dims" not in index:
        raise ValidationError("an index with its own embed needs dims (the embedding dimension)")
    return LangChainEmbedder(ensure_embeddings(embed), index["dims"]), False


def vectors(store: Any, embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors for ``texts`` (cached in the store by text hash and model)."""
    vecs = embed_texts(store, embedder, list(texts)).astype(np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)
