"""Link prediction over the CSR adjacency: Adamic-Adar, Jaccard, resource allocation, preferential attachment.

The classic neighbourhood indexes, on the undirected simple graph behind the CSR (an edge in either
direction, of any type that is counted, makes two nodes neighbours; self loops are ignored), as
networkx defines them:

- ``jaccard``                 |N(u) & N(v)| / |N(u) | N(v)|
- ``adamic_adar``             sum over common neighbours w of 1 / log(deg(w))
- ``resource_allocation``     sum over common neighbours w of 1 / deg(w)
- ``preferential_attachment`` deg(u) * deg(v)

Candidates are the pairs that are not already neighbours. The first three are zero without a common
neighbour, so only nodes two hops apart are scored; preferential attachment ranks every non-adjacent
pair, enumerated in decreasing degree product so the top k never needs all n^2 pairs. Cost: about the
sum of squared degrees for the neighbourhood indexes over the whole graph (node_id=None), the size of
the two-hop neighbourhood for one node.

``predict_near`` scores one node's candidates from its two-hop neighbourhood alone, asked of a store
(``edges_touching``, three batched frontier queries a side: the node, its neighbours, the candidates'
degrees), so a server-side store (PostgreSQL) is never mirrored; it gives the same scores, in the same
order, as ``predict`` over the CSR. Preferential attachment ranks a node against every other node by
degree, which is not local: it needs the whole graph.
"""
from __future__ import annotations

import heapq
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import ValidationError
from ..store.base import EdgeStore
from .traversal import CSR, usable

METHODS = ("adamic_adar", "jaccard", "resource_allocation", "preferential_attachment")


def neighbour_sets(csr: CSR, types: set[int] | None = None, blocked: set[int] | frozenset[int] = frozenset()
                   ) -> list[np.ndarray]:
    """For every node, the sorted unique indices of its undirected neighbours (no self loops)."""
    src, dst = csr.sources(), csr.dst
    keep = src != dst
    if types is not None:
        keep &= np.isin(csr.etype, np.fromiter(types, dtype=np.int32, count=len(types)))
    if blocked:
        keep[np.fromiter(blocked, dtype=np.int64, count=len(blocked))] = False
    a, b = src[keep].astype(np.int64), dst[keep].astype(np.int64)
    both_a, both_b = np.concatenate([a, b]), np.concatenate([b, a])
    if both_a.size:
        pairs = np.unique(both_a * csr.n + both_b)
        both_a, both_b = pairs // csr.n, pairs % csr.n
    ptr = np.zeros(csr.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(both_a, minlength=csr.n), out=ptr[1:])
    return [both_b[ptr[i]: ptr[i + 1]] for i in range(csr.n)]


def _weights(method: str, degree: np.ndarray) -> np.ndarray:
    """What one common neighbour of each degree contributes (Adamic-Adar and resource allocation)."""
    deg = degree.astype(np.float64)
    if method == "resource_allocation":
        return np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    logs = np.log(deg, out=np.zeros_like(deg), where=deg > 0)
    return np.divide(1.0, logs, out=np.zeros_like(deg), where=logs > 0)


def scores_from(u: int, nbrs: list[np.ndarray], degree: np.ndarray, method: str,
                contribution: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(candidate indices, scores) for every node two hops from ``u`` that is not its neighbour."""
    mine = nbrs[u]
    if mine.size == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    parts = [nbrs[w] for w in mine.tolist()]
    reach = np.concatenate(parts)
    if method in ("adamic_adar", "resource_allocation"):
        assert contribution is not None
        weights = np.repeat(contribution[mine], [p.size for p in parts])
        cand, inverse = np.unique(reach, return_inverse=True)
        score = np.bincount(inverse, weights=weights, minlength=cand.size)
    else:  # jaccard: common neighbour counts over the union's size
        cand, common = np.unique(reach, return_counts=True)
        score = common / (mine.size + degree[cand] - common)
    drop = (cand == u) | np.isin(cand, mine, assume_unique=True)
    return cand[~drop], score[~drop]


def check(method: str, top_k: int) -> None:
    if method not in METHODS:
        raise ValidationError(f"unknown link prediction method {method!r}; use one of {', '.join(METHODS)}",
                              method=method)
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValidationError(f"top_k must be a positive integer (got {top_k!r})", top_k=top_k)


def predict(csr: CSR, nbrs: list[np.ndarray], method: str, top_k: int, node: int | None = None,
            candidates: np.ndarray | None = None) -> list[tuple[int, int, float]]:
    """The ``top_k`` best (u, v, score) non-adjacent pairs, best first (ties: lower indices first).

    ``node`` scores pairs (node, v) only; ``candidates`` (a boolean mask over nodes) limits the pairs to
    nodes it marks (both ends when ``node`` is None, the other end otherwise). Zero scores are left out."""
    check(method, top_k)
    degree = np.fromiter((a.size for a in nbrs), dtype=np.int64, count=csr.n)
    if method == "preferential_attachment":
        return _preferential(nbrs, degree, top_k, node, candidates)
    contribution = _weights(method, degree) if method != "jaccard" else None
    sources = [node] if node is not None else range(csr.n)
    best: list[tuple[float, int, int]] = []  # min-heap of (score, -u, -v) so ties keep lower indices
    for u in sources:
        if node is None and candidates is not None and not candidates[u]:
            continue
        cand, score = scores_from(u, nbrs, degree, method, contribution)
        keep = score > 0
        if node is None:
            keep &= cand > u  # each unordered pair once
        if candidates is not None:
            keep &= candidates[cand]
        for v, s in zip(cand[keep].tolist(), score[keep].tolist()):
            item = (s, -u, -v)
            if len(best) < top_k:
                heapq.heappush(best, item)
            elif item > best[0]:
                heapq.heapreplace(best, item)
    return [(-u, -v, s) for s, u, v in sorted(best, reverse=True)]


def _pairs_by_product(order: np.ndarray, degree: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """Index pairs (i < j in ``order``) in non-increasing degree product; ``order`` sorts degrees descending."""
    if order.size < 2:
        return
    d = degree[order].tolist()
    heap = [(-d[0] * d[1], 0, 1)]
    while heap:
        neg, i, j = heapq.heappop(heap)
        yield -neg, i, j
        if j + 1 < len(d):
            heapq.heappush(heap, (-d[i] * d[j + 1], i, j + 1))
        if j == i + 1 and j + 1 < len(d):
            heapq.heappush(heap, (-d[i + 1] * d[j + 1], i + 1, j + 1))


def _preferential(nbrs: list[np.ndarray], degree: np.ndarray, top_k: int, node: int | None,
                  candidates: np.ndarray | None) -> list[tuple[int, int, float]]:
    n = degree.size
    if node is not None:
        others = np.ones(n, dtype=bool)
        others[node] = False
        others[nbrs[node]] = False
        if candidates is not None:
            others &= candidates
        idx = np.flatnonzero(others)
        score = degree[idx] * degree[node]
        pick = np.lexsort((idx, -score))[:top_k]
        return [(node, int(idx[i]), float(score[i])) for i in pick if score[i] > 0]
    pool = np.arange(n) if candidates is None else np.flatnonzero(candidates)
    order = pool[np.lexsort((pool, -degree[pool]))]
    out: list[tuple[int, int, float]] = []
    for product, i, j in _pairs_by_product(order, degree):  # ties in degree order, then index order
        if product == 0 or len(out) >= top_k:
            break
        u, v = sorted((int(order[i]), int(order[j])))
        pos = np.searchsorted(nbrs[u], v)
        if pos < nbrs[u].size and nbrs[u][pos] == v:
            continue
        out.append((u, v, float(product)))
    return out


def undirected_sets(store: EdgeStore, namespace: str | None, ids: Sequence[str], types: Sequence[str] | None,
                    now: str) -> dict[str, list[str]]:
    """For each of ``ids``, the sorted store ids of its undirected neighbours (as ``neighbour_sets`` counts
    them: usable edges of ``types`` in ``namespace``, either way, no self loops), asked of the store."""
    found: dict[str, set[str]] = {i: set() for i in ids}
    if ids and (types is None or types):
        wanted = None if types is None else list(types)
        for side in ("src", "dst"):
            for s, d, _t, _w, ns, vf, vu in store.edges_touching(list(ids), side, wanted):
                if s != d and (namespace is None or ns == namespace) and usable(vf, vu, now):
                    if side == "src":
                        found[s].add(d)
                    else:
                        found[d].add(s)
    return {i: sorted(nb) for i, nb in found.items()}


def predict_near(store: EdgeStore, namespace: str | None, node: str, method: str, top_k: int,
                 types: Sequence[str] | None, now: str,
                 allowed: Callable[[list[str]], set[str]] | None = None) -> list[tuple[str, float]]:
    """The ``top_k`` best (candidate store id, score) for ``node`` by a neighbourhood index (not preferential
    attachment), best first, ties by id, read from the store two hops out; ``allowed(candidates)`` keeps only
    the candidates it returns (a node type filter)."""
    check(method, top_k)
    if method == "preferential_attachment":
        raise ValidationError("preferential attachment ranks against every node; use predict over the graph",
                              method=method)
    mine = undirected_sets(store, namespace, [node], types, now)[node]
    if not mine:
        return []
    second = undirected_sets(store, namespace, mine, types, now)
    if method == "jaccard":
        common: dict[str, int] = {}
        for w in mine:
            for v in second[w]:
                common[v] = common.get(v, 0) + 1
        mine_set = set(mine)
        cand = sorted(v for v in common if v != node and v not in mine_set)
        if allowed is not None:
            keep = allowed(cand)
            cand = [v for v in cand if v in keep]
        degree = {v: len(nb) for v, nb in undirected_sets(store, namespace, cand, types, now).items()}
        scored = [(v, common[v] / (len(mine) + degree[v] - common[v])) for v in cand]
    else:
        contribution = _weights(method, np.fromiter((len(second[w]) for w in mine), dtype=np.int64,
                                                    count=len(mine))).tolist()
        score: dict[str, float] = {}
        for w, c in zip(mine, contribution):  # summed in the order predict's bincount sums them
            for v in second[w]:
                score[v] = score.get(v, 0.0) + c
        mine_set = set(mine)
        cand = sorted(v for v in score if v != node and v not in mine_set)
        if allowed is not None:
            keep = allowed(cand)
            cand = [v for v in cand if v in keep]
        scored = [(v, score[v]) for v in cand]
    best = [(v, s) for v, s in scored if s > 0]
    return heapq.nsmallest(top_k, best, key=lambda item: (-item[1], item[0]))
