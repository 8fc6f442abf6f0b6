"""Two embedding models as one: a vector whose dot product with a query's is a mix of the two models' cosines
(issue 29: MiniLM + all-mpnet-base-v2, chosen by leave-one-conversation-out on the LoCoMo dev split,
benchmarks/locomo_fit_models.py ``--pairs minilm+mpnet``).

The second model's cosine is first moved to the first's mean and spread (``scale * cos + offset``, from every
(question, turn) cosine of the dev split: no labels), then mixed: ``(1 - mix) * cos1 + mix * (scale * cos2 +
offset)``. A stored text's vector is ``[sqrt(1 - mix) a, sqrt(mix scale) b, sqrt(|mix offset|)] / n`` and a query's
the same with the last value times the sign of the offset, so the dot product is that mix over ``n ** 2 = (1 - mix)
+ mix scale + |mix offset|`` (every vector of unit length): the fusion weights fitted for the pair
(engine/fusion.py ``MODEL_WEIGHTS``) put ``n ** 2`` back in the dense weight.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

# MiniLM + all-mpnet-base-v2 (embed/models.py MINILM_MPNET): MPNet's cosines moved to MiniLM's (0.998 cos - 0.031:
# means 0.138 -> 0.107, spreads 0.105 both) and mixed 0.6 (every LOCO fold chose it)
MIX, SCALE, OFFSET = 0.6, 0.9985, -0.0312


def norm2(mix: float, scale: float, offset: float) -> float:
    """The pair's dot product is the mixed cosine over this (module docstring)."""
    return (1 - mix) + mix * scale + abs(mix * offset)


class PairEmbedder:
    """``first`` and ``second`` (embedders with ``name``, ``dimension``, ``embed``) as one embedder of
    ``first.dimension + second.dimension + 1`` dimensions, named ``name``; queries through ``embed_query``."""

    def __init__(self, name: str, first: object, second: object, mix: float, scale: float, offset: float) -> None:
        self.name, self.first, self.second = name, first, second
        self.dimension = int(first.dimension) + int(second.dimension) + 1  # type: ignore[attr-defined]
        self.norm2 = norm2(mix, scale, offset)
        n = math.sqrt(self.norm2)
        self._a, self._b = math.sqrt(1 - mix) / n, math.sqrt(mix * scale) / n
        self._c, self._sign = math.sqrt(abs(mix * offset)) / n, 1.0 if offset >= 0 else -1.0

    def _both(self, texts: Sequence[str], query: bool) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        parts = []
        for model in (self.first, self.second):
            if query and hasattr(model, "embed_query"):
                parts.append(np.stack([model.embed_query(t) for t in texts]))
            else:
                parts.append(np.asarray(model.embed(texts), dtype=np.float32))  # type: ignore[attr-defined]
        a, b = (p / np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12) for p in parts)
        out[:, :a.shape[1]] = self._a * a
        out[:, a.shape[1]:-1] = self._b * b
        out[:, -1] = self._c * (self._sign if query else 1.0)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._both(texts, False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._both([text], True)[0]
