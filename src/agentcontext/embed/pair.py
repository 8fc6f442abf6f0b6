"""Two embedding models as one: each text embedded by both, the cosines mixed (issue 29: "two dense models
together").

A store compares vectors by their dot product (every vector L2-normalised; PostgreSQL's cosine distance divides by
the norms anyway), so the mix lives in the vectors themselves. For stored texts ``u = [sqrt(1 - mix) * a,
sqrt(mix * scale) * b, sqrt(-mix * offset)] / n`` and for queries the same with the last value negated, so

    u . v = ((1 - mix) * cos_first + mix * (scale * cos_second + offset)) / n ** 2

``scale`` and ``offset`` move the second model's cosines to the first's mean and spread (``offset`` <= 0: e5's
cosines sit near 0.8 where MiniLM's sit near 0.1, so without it every memory would look related to every query and
the fused score, a relevance, would mean nothing), and ``n ** 2 = (1 - mix) + mix * scale - mix * offset`` keeps
every vector of unit length. Two stored texts compare with ``+mix * offset`` instead (their vectors' last values
agree in sign): only memory-to-memory similarity sees that constant. The dimension is the two models' and one.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import ValidationError
from .models import QueryEmbedder


class PairEmbedder:
    """``first`` and ``second`` mixed (module doc). A query embedder: queries take the negated last value (and
    the second model's query form when it has one)."""

    def __init__(self, name: str, first: object, second: object, mix: float, scale: float, offset: float) -> None:
        if not 0.0 < mix < 1.0 or scale <= 0.0 or offset > 0.0:
            raise ValidationError(f"{name}: mix must be in (0, 1), scale > 0 and offset <= 0 (got {mix}, {scale}, "
                                  f"{offset})", model=name)
        self.name, self.first, self.second = name, first, second
        self.dimension = int(first.dimension) + int(second.dimension) + 1
        norm2 = (1.0 - mix) + mix * scale - mix * offset
        self._parts = (math.sqrt((1.0 - mix) / norm2), math.sqrt(mix * scale / norm2), math.sqrt(-mix * offset / norm2))

    def _join(self, a: np.ndarray, b: np.ndarray, sign: float) -> np.ndarray:
        wa, wb, wc = self._parts
        last = np.full((a.shape[0], 1), sign * wc, dtype=np.float32)
        return np.hstack([wa * a, wb * b, last]).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return self._join(np.asarray(self.first.embed(texts)), np.asarray(self.second.embed(texts)), 1.0)

    def embed_query(self, text: str) -> np.ndarray:
        a = np.asarray(self.first.embed_query(text) if isinstance(self.first, QueryEmbedder)
                       else self.first.embed([text])[0])
        b = np.asarray(self.second.embed_query(text) if isinstance(self.second, QueryEmbedder)
                       else self.second.embed([text])[0])
        return self._join(a[None, :], b[None, :], -1.0)[0]
