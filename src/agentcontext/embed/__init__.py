"""Embedders: the ``Embedder`` protocol, the default MiniLM ONNX model and the store-backed cache."""
from __future__ import annotations

from .base import Embedder, default_embedder
from .cache import embed_missing, embed_texts

__all__ = ["Embedder", "default_embedder", "embed_texts", "embed_missing"]
