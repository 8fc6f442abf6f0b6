"""The Node2Vec implementation as it was before it was vectorised (commit 3b98636): the baseline of
benchmarks/node2vec.py, kept only to be measured against. Pure-Python walks, np.add.at updates."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Node2VecParams:
    dimensions: int = 32
    walk_length: int = 20
    num_walks: int = 10
    p: float = 1.0
    q: float = 1.0
    window: int = 4
    negatives: int = 5
    epochs: int = 3
    learning_rate: float = 0.025
    seed: int = 0

    def check(self) -> None:
        for name in ("dimensions", "walk_length", "num_walks", "window", "negatives", "epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r})")
        for name in ("p", "q", "learning_rate"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name} must be a positive number (got {value!r})")


def walks(neighbours: list[np.ndarray], params: Node2VecParams, rng: np.random.Generator) -> list[np.ndarray]:
    """``num_walks`` biased walks of up to ``walk_length`` nodes from every node that has a neighbour."""
    sets = [set(map(int, nb)) for nb in neighbours]
    starts = np.array([v for v, nb in enumerate(neighbours) if len(nb)], dtype=np.int64)
    out: list[np.ndarray] = []
    inv_p, inv_q = 1.0 / params.p, 1.0 / params.q
    uniform = params.p == 1.0 and params.q == 1.0
    for _ in range(params.num_walks):
        for start in rng.permutation(starts):
            walk = [int(start)]
            nb = neighbours[walk[0]]
            walk.append(int(nb[rng.integers(len(nb))]))
            while len(walk) < params.walk_length:
                prev, cur = walk[-2], walk[-1]
                nb = neighbours[cur]
                if uniform:
                    walk.append(int(nb[rng.integers(len(nb))]))
                    continue
                near = sets[prev]
                weights = np.fromiter((inv_p if x == prev else (1.0 if x in near else inv_q) for x in nb.tolist()),
                                      dtype=np.float64, count=len(nb))
                walk.append(int(nb[rng.choice(len(nb), p=weights / weights.sum())]))
            out.append(np.asarray(walk, dtype=np.int64))
    return out


def _pairs(all_walks: list[np.ndarray], window: int) -> np.ndarray:
    """(center, context) pairs of every walk within ``window`` steps."""
    chunks = []
    for walk in all_walks:
        n = len(walk)
        for offset in range(1, min(window, n - 1) + 1):
            a, b = walk[:-offset], walk[offset:]
            chunks.append(np.stack([a, b], axis=1))
            chunks.append(np.stack([b, a], axis=1))
    return np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)


def skipgram(all_walks: list[np.ndarray], n: int, params: Node2VecParams, rng: np.random.Generator,
             batch: int = 512) -> np.ndarray:
    """(n, dimensions) float32 vectors learned by SGNS over the walks (rows of unseen nodes are zero)."""
    dim = params.dimensions
    vectors = ((rng.random((n, dim)) - 0.5) / dim).astype(np.float32)
    context = np.zeros((n, dim), dtype=np.float32)
    pairs = _pairs(all_walks, params.window)
    seen = np.zeros(n, dtype=bool)
    if len(pairs) == 0:
        return np.zeros((n, dim), dtype=np.float32)
    counts = np.bincount(pairs[:, 0], minlength=n).astype(np.float64)
    seen[counts > 0] = True
    noise = counts ** 0.75
    noise /= noise.sum()
    total = params.epochs * len(pairs)
    done = 0
    for _ in range(params.epochs):
        order = rng.permutation(len(pairs))
        for start in range(0, len(order), batch):
            chosen = pairs[order[start: start + batch]]
            lr = params.learning_rate * max(1e-4, 1.0 - done / total)
            done += len(chosen)
            centers, positives = chosen[:, 0], chosen[:, 1]
            negs = rng.choice(n, size=(len(chosen), params.negatives), p=noise)
            targets = np.concatenate([positives[:, None], negs], axis=1)  # (b, 1 + k)
            labels = np.zeros(targets.shape, dtype=np.float32)
            labels[:, 0] = 1.0
            u = vectors[centers]  # (b, d)
            v = context[targets]  # (b, 1 + k, d)
            scores = np.einsum("bd,bkd->bk", u, v)
            grad = (labels - 1.0 / (1.0 + np.exp(-np.clip(scores, -30, 30)))) * lr  # (b, 1 + k)
            np.add.at(vectors, centers, np.einsum("bk,bkd->bd", grad, v))
            np.add.at(context, targets, grad[:, :, None] * u[:, None, :])
    vectors[~seen] = 0.0
    return vectors


def node2vec(neighbours: list[np.ndarray], params: Node2VecParams) -> np.ndarray:
    """Unit-length (n, dimensions) float32 structural embeddings of the nodes of an undirected graph."""
    params.check()
    rng = np.random.default_rng(params.seed)
    vectors = skipgram(walks(neighbours, params, rng), len(neighbours), params, rng)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
