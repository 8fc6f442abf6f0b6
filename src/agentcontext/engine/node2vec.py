"""Node2Vec structural embeddings (Grover & Leskovec 2016) in numpy: biased random walks + skip-gram.

``walks`` takes second-order random walks over an undirected neighbour list: from ``v``, having come
from ``t``, the next node ``x`` is drawn with weight ``1/p`` when ``x == t`` (return), ``1`` when
``x`` is also a neighbour of ``t`` (stay close, BFS-like) and ``1/q`` otherwise (move out, DFS-like).
``skipgram`` learns one vector per node from the walks with negative sampling (SGNS, word2vec's
objective): a node's vector predicts the nodes within ``window`` steps of it in a walk, against
``negatives`` nodes drawn from the unigram^0.75 distribution. Deterministic for a given ``seed``.
Nodes that appear in no walk (isolated ones) get a zero vector.
"""
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
        for name, value in (("dimensions", self.dimensions), ("walk_length", self.walk_length),
                            ("num_walks", self.num_walks), ("window", self.window), ("negatives", self.negatives),
                            ("epochs", self.epochs)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r})")
        for name, value in (("p", self.p), ("q", self.q), ("learning_rate", self.learning_rate)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name} must be a positive number (got {value!r})")


def _flat(neighbours: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ptr, flat, degree): the neighbour lists as one array, node ``v``'s at ``flat[ptr[v]:ptr[v + 1]]``."""
    degree = np.fromiter((len(nb) for nb in neighbours), dtype=np.int64, count=len(neighbours))
    ptr = np.zeros(len(neighbours) + 1, dtype=np.int64)
    np.cumsum(degree, out=ptr[1:])
    flat = np.concatenate([np.asarray(nb, dtype=np.int64) for nb in neighbours]) if neighbours and ptr[-1] \
        else np.zeros(0, dtype=np.int64)
    return ptr, flat, degree


def walks(neighbours: list[np.ndarray], params: Node2VecParams, rng: np.random.Generator) -> np.ndarray:
    """``num_walks`` biased walks of ``walk_length`` nodes from every node that has a neighbour, as one
    (walks, walk_length) array: round r holds a fresh permutation of the start nodes.

    Every walker takes its step at once (numpy over all walks). With p = q = 1 the next node is uniform over
    the neighbours; otherwise by rejection sampling (propose a uniform neighbour ``x``, accept it with
    probability weight(x) / max weight, retry the rejected walkers), which draws exactly the weights above
    without building a table per (previous, current) pair. ``x`` is a neighbour of the previous node when
    ``prev * n + x`` is among the sorted edge keys. Neighbour lists must be sorted (``neighbour_sets`` are)."""
    n = len(neighbours)
    ptr, flat, degree = _flat(neighbours)
    starts = np.flatnonzero(degree > 0)
    length = params.walk_length
    if starts.size == 0:
        return np.zeros((0, length), dtype=np.int64)
    out = np.empty((params.num_walks * starts.size, length), dtype=np.int64)
    out[:, 0] = np.concatenate([rng.permutation(starts) for _ in range(params.num_walks)])

    def uniform_step(cur: np.ndarray) -> np.ndarray:
        pick = np.minimum((rng.random(cur.size) * degree[cur]).astype(np.int64), degree[cur] - 1)
        return flat[ptr[cur] + pick]

    if length > 1:
        out[:, 1] = uniform_step(out[:, 0])
    uniform = params.p == 1.0 and params.q == 1.0
    keys = np.repeat(np.arange(n, dtype=np.int64), degree) * n + flat  # sorted: rows by node, each row sorted
    inv_p, inv_q = 1.0 / params.p, 1.0 / params.q
    top = max(inv_p, 1.0, inv_q)
    for t in range(2, length):
        cur = out[:, t - 1]
        if uniform:
            out[:, t] = uniform_step(cur)
            continue
        prev = out[:, t - 2]
        chosen = np.empty(cur.size, dtype=np.int64)
        todo = np.arange(cur.size)
        while todo.size:
            x, back = uniform_step(cur[todo]), prev[todo]
            key = back * n + x
            pos = np.minimum(np.searchsorted(keys, key), keys.size - 1)
            weight = np.where(x == back, inv_p, np.where(keys[pos] == key, 1.0, inv_q))
            accept = rng.random(todo.size) * top < weight
            chosen[todo[accept]] = x[accept]
            todo = todo[~accept]
        out[:, t] = chosen
    return out


def _pairs(all_walks: np.ndarray, window: int) -> np.ndarray:
    """(center, context) pairs of the walks (rows of one array) within ``window`` steps, both ways."""
    chunks = []
    length = all_walks.shape[1]
    for offset in range(1, min(window, length - 1) + 1):
        a, b = all_walks[:, :-offset].ravel(), all_walks[:, offset:].ravel()
        chunks.append(np.stack([a, b], axis=1))
        chunks.append(np.stack([b, a], axis=1))
    return np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)


def _scatter_capped(target: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``target[r] +=`` the sum of the ``values`` given for row ``r``, scaled down to at most ``STEPS_PER_BATCH``
    updates' worth when ``r`` appears more often in the batch.

    Summing a minibatch's updates of a row approximates applying them one after another while a row appears a
    few times a batch; a node that appears many times (a hub, or any node of a small graph) would take one huge
    step instead, which diverged. One ``bincount`` per column (several times faster than ``np.add.at``); past
    ``BINCOUNT_ROWS`` rows, one sort and ``add.reduceat`` instead."""
    n = target.shape[0]
    if n <= BINCOUNT_ROWS:
        count = np.bincount(rows, minlength=n)
        hit = np.flatnonzero(count)
        scale = 1.0 / np.maximum(1.0, count[hit] / STEPS_PER_BATCH)
        columns = np.ascontiguousarray(values.T)
        for j in range(target.shape[1]):
            target[hit, j] += np.bincount(rows, weights=columns[j], minlength=n)[hit] * scale
        return
    order = np.argsort(rows)
    rows, values = rows[order], values[order]
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    sizes = np.diff(np.r_[first, rows.size])
    target[rows[first]] += np.add.reduceat(values, first, axis=0) / np.maximum(1.0, sizes / STEPS_PER_BATCH)[:, None]


STEPS_PER_BATCH = 4
BINCOUNT_ROWS = 50_000


def alias_table(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias tables (``accept``, ``alias``) for drawing indices with the given probabilities in O(1) each:
    draw ``i`` uniformly, keep it with probability ``accept[i]``, else take ``alias[i]``."""
    n = probabilities.size
    scaled = probabilities * n
    accept = np.ones(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        accept[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    return accept, alias


def draw(accept: np.ndarray, alias: np.ndarray, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    i = rng.integers(accept.size, size=shape)
    return np.where(rng.random(shape) < accept[i], i, alias[i])
WALKS_PER_CHUNK = 4096  # walks whose pairs are made and shuffled together (bounds memory, not the result's kind)


def skipgram(all_walks: np.ndarray, n: int, params: Node2VecParams, rng: np.random.Generator,
             batch: int | None = None) -> np.ndarray:
    """(n, dimensions) float32 vectors learned by SGNS over the walks (rows of unseen nodes are zero).

    Each epoch visits the walks in a fresh order, a chunk of walks at a time; a chunk's (center, context) pairs
    are shuffled and learned in minibatches of ``batch`` pairs (default: n clamped to 64..8192, so a node appears
    about once a batch and a large graph amortises numpy's per-call cost)."""
    dim = params.dimensions
    batch = batch or int(min(8192, max(64, n)))
    vectors = ((rng.random((n, dim)) - 0.5) / dim).astype(np.float32)
    context = np.zeros((n, dim), dtype=np.float32)
    if all_walks.shape[0] == 0 or all_walks.shape[1] < 2:
        return np.zeros((n, dim), dtype=np.float32)
    span = min(params.window, all_walks.shape[1] - 1)
    per_walk = sum(2 * (all_walks.shape[1] - k) for k in range(1, span + 1))
    counts = np.zeros(n, dtype=np.float64)  # how often each node is a center: the noise distribution's base
    for k in range(1, span + 1):
        counts += np.bincount(all_walks[:, :-k].ravel(), minlength=n) + np.bincount(all_walks[:, k:].ravel(),
                                                                                    minlength=n)
    seen = counts > 0
    noise = counts ** 0.75
    noise /= noise.sum()
    accept, alias = alias_table(noise)
    total = params.epochs * all_walks.shape[0] * per_walk
    done = 0
    for _ in range(params.epochs):
        order = rng.permutation(all_walks.shape[0])
        for lo in range(0, order.size, WALKS_PER_CHUNK):
            pairs = _pairs(all_walks[order[lo: lo + WALKS_PER_CHUNK]], params.window)
            pairs = pairs[rng.permutation(len(pairs))]
            for start in range(0, len(pairs), batch):
                chosen = pairs[start: start + batch]
                lr = params.learning_rate * max(1e-4, 1.0 - done / total)
                done += len(chosen)
                centers, positives = chosen[:, 0], chosen[:, 1]
                negs = draw(accept, alias, (len(chosen), params.negatives), rng)
                targets = np.concatenate([positives[:, None], negs], axis=1)  # (b, 1 + k)
                labels = np.zeros(targets.shape, dtype=np.float32)
                labels[:, 0] = 1.0
                u = vectors[centers]  # (b, d)
                v = context[targets]  # (b, 1 + k, d)
                scores = np.einsum("bd,bkd->bk", u, v)
                grad = ((labels - 1.0 / (1.0 + np.exp(-np.clip(scores, -30, 30)))) * lr).astype(np.float32)
                _scatter_capped(vectors, centers, np.einsum("bk,bkd->bd", grad, v))
                _scatter_capped(context, targets.ravel(), (grad[:, :, None] * u[:, None, :]).reshape(-1, dim))
    vectors[~seen] = 0.0
    return vectors


def node2vec(neighbours: list[np.ndarray], params: Node2VecParams) -> np.ndarray:
    """Unit-length (n, dimensions) float32 structural embeddings of the nodes of an undirected graph."""
    params.check()
    rng = np.random.default_rng(params.seed)
    vectors = skipgram(walks(neighbours, params, rng), len(neighbours), params, rng)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
