"""Small builders the spec modules share."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Node


def held(store, vectors) -> np.ndarray:
    """``vectors`` as the store gives them back: float32 holding the values rounded to its ``VECTOR_DTYPE``."""
    return np.asarray(vectors, dtype=np.float32).astype(store.VECTOR_DTYPE).astype(np.float32)


def node(i, ns="ns:a", **kw) -> Node:
    base = dict(id=f"n{i}", kind="doc", namespace=ns, key=f"k{i}", title=f"Title {i}", content=f"body {i}")
    base.update(kw)
    return Node(**base)
