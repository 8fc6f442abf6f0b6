"""Path-finding over the CSR adjacency: shortest paths (fewest edges or least total weight) and Yen's k
shortest simple paths.

Paths are lists of nodes: CSR indices (``neighbours``), or store ids (``StoreNeighbours``, which asks a
store such as PostgreSQL for a batch of nodes' edges at a time instead of holding the whole adjacency).
``weighted=False`` counts edges; ``weighted=True`` adds the edge weights as lengths (Dijkstra; weights must
be >= 0), where two nodes joined by several edges (of different types) use the lightest. ``direction`` is
``out`` (follow edges), ``in`` (against them) or ``both`` (either way). Everything is iterative; one call
keeps the neighbour lists it touches.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Callable, Hashable, Iterable, Sequence

from ..errors import ValidationError
from ..store.base import EdgeStore
from .traversal import CSR, _steps, check_direction, usable

Neighbours = Callable[[Any], dict[Any, float]]
Prefetch = Callable[[Iterable[Any]], None]
PREFETCH = 64  # Dijkstra asks for the edges of this many queued nodes at once


def neighbours(csr: CSR, direction: str, types: set[int] | None = None,
               blocked: set[int] | frozenset[int] = frozenset()) -> Neighbours:
    """A memoised ``node -> {neighbour: lightest weight}`` over the usable edges (no self loops)."""
    if direction not in ("out", "in", "both"):
        raise ValidationError(f"unknown direction {direction!r}; use out, in or both", direction=direction)
    memo: dict[int, dict[int, float]] = {}
    block = blocked if isinstance(blocked, set) else set(blocked)

    def of(node: int) -> dict[int, float]:
        hit = memo.get(node)
        if hit is None:
            hit = {}
            for nb, _pos, w in _steps(csr, node, direction, types, None, block):
                if nb != node and (nb not in hit or w < hit[nb]):
                    hit[nb] = w
            memo[node] = hit
        return hit

    return of


class StoreNeighbours:
    """``node -> {neighbour: lightest weight}`` over store ids, asked of the store (``edges_touching``) for a batch
    of nodes per query and memoised for the call: the path-finding's read on a server-side store, in the order
    and with the weights ``neighbours`` gives over the CSR (out-edges, then in-edges, each in declared order;
    expired edges, self loops and edges outside ``namespace`` left out)."""

    def __init__(self, store: EdgeStore, namespace: str | None, direction: str, types: Sequence[str] | None,
                 now: str) -> None:
        check_direction(direction)
        self.store, self.namespace, self.direction, self.now = store, namespace, direction, now
        self.types = None if types is None else list(types)
        self.memo: dict[str, dict[str, float]] = {}
        self.queries = 0

    def prefetch(self, nodes: Iterable[str]) -> None:
        todo = sorted({n for n in nodes if n not in self.memo})
        if not todo:
            return
        found: dict[str, dict[str, float]] = {n: {} for n in todo}
        if self.types is None or self.types:
            sides = [side for side, wanted in (("src", ("out", "both")), ("dst", ("in", "both")))
                     if self.direction in wanted]
            for side in sides:
                self.queries += 1
                for s, d, _t, w, ns, vf, vu in self.store.edges_touching(todo, side, self.types):
                    if s == d or (self.namespace is not None and ns != self.namespace) or not usable(vf, vu, self.now):
                        continue
                    node, nb = (s, d) if side == "src" else (d, s)
                    hit = found[node]
                    if nb not in hit or w < hit[nb]:
                        hit[nb] = w
        self.memo.update(found)

    def __call__(self, node: str) -> dict[str, float]:
        if node not in self.memo:
            self.prefetch([node])
        return self.memo[node]


def _cost(path: list[Any], nbrs: Neighbours, weighted: bool) -> float:
    return sum(nbrs(a)[b] for a, b in zip(path, path[1:])) if weighted else float(len(path) - 1)


def shortest(nbrs: Neighbours, source: Hashable, target: Hashable, weighted: bool = False,
             max_hops: int | None = None, banned_nodes: set[Any] | frozenset[Any] = frozenset(),
             banned_edges: set[tuple[Any, Any]] | frozenset[tuple[Any, Any]] = frozenset(),
             prefetch: Prefetch | None = None) -> list[Any] | None:
    """One shortest path avoiding ``banned_nodes`` and ``banned_edges`` (BFS, or Dijkstra when weighted).

    ``prefetch(nodes)`` is told, before a node's neighbours are read, which nodes will be read soon (the BFS level,
    the head of Dijkstra's queue), so a store-backed ``nbrs`` asks for them in one query."""
    if source == target:
        return [source]
    parent: dict[Any, Any] = {source: -1}
    if not weighted:
        depth = {source: 0}
        queue = deque([source])
        fetched = -1  # the deepest BFS level already prefetched
        while queue:
            node = queue.popleft()
            if max_hops is not None and depth[node] >= max_hops:
                continue
            if prefetch is not None and depth[node] > fetched:
                fetched = depth[node]
                prefetch([x for x in (node, *queue) if max_hops is None or depth[x] < max_hops])
            for nb in nbrs(node):
                if nb in parent or nb in banned_nodes or (node, nb) in banned_edges:
                    continue
                parent[nb] = node
                depth[nb] = depth[node] + 1
                if nb == target:
                    return _walk_back(parent, target)
                queue.append(nb)
        return None
    dist = {source: 0.0}
    hops = {source: 0}
    done: set[int] = set()
    heap = [(0.0, 0, source)]
    while heap:
        d, _h, node = heapq.heappop(heap)
        if node in done:
            continue
        if node == target:
            return _walk_back(parent, target)
        done.add(node)
        if max_hops is not None and hops[node] >= max_hops:
            continue
        if prefetch is not None:
            prefetch([node, *(entry[2] for entry in heap[:PREFETCH])])
        for nb, w in nbrs(node).items():
            if w < 0:
                raise ValidationError("weighted paths need edge weights >= 0", weight=w)
            if nb in done or nb in banned_nodes or (node, nb) in banned_edges:
                continue
            nd = d + w
            if nb not in dist or nd < dist[nb]:
                dist[nb], parent[nb], hops[nb] = nd, node, hops[node] + 1
                heapq.heappush(heap, (nd, hops[nb], nb))
    return None


def _walk_back(parent: dict[Any, Any], target: Any) -> list[Any]:
    path = [target]
    while parent[path[-1]] != -1:
        path.append(parent[path[-1]])
    return path[::-1]


def k_shortest(nbrs: Neighbours, source: Hashable, target: Hashable, k: int, weighted: bool = False,
               max_hops: int | None = None, prefetch: Prefetch | None = None) -> list[tuple[list[Any], float]]:
    """Yen's algorithm: up to ``k`` loopless paths, shortest first, each with its length (``prefetch`` as for
    ``shortest``)."""
    if k < 1:
        raise ValidationError(f"k must be >= 1 (got {k})", k=k)
    first = shortest(nbrs, source, target, weighted, max_hops, prefetch=prefetch)
    if first is None:
        return []
    found: list[tuple[list[Any], float]] = [(first, _cost(first, nbrs, weighted))]
    if source == target:
        return found
    seen = {tuple(first)}
    candidates: list[tuple[float, int, list[Any]]] = []
    counter = 0
    while len(found) < k:
        last = found[-1][0]
        for i in range(len(last) - 1):
            spur, root = last[i], last[: i + 1]
            banned_edges = {(p[i], p[i + 1]) for p, _ in found if len(p) > i + 1 and p[: i + 1] == root}
            banned_nodes = set(root[:-1])
            budget = None if max_hops is None else max_hops - i
            if budget is not None and budget <= 0:
                continue
            tail = shortest(nbrs, spur, target, weighted, budget, banned_nodes, banned_edges, prefetch)
            if tail is None:
                continue
            path = root[:-1] + tail
            key = tuple(path)
            if key in seen:
                continue
            seen.add(key)
            counter += 1
            heapq.heappush(candidates, (_cost(path, nbrs, weighted), counter, path))
        if not candidates:
            break
        cost, _, path = heapq.heappop(candidates)
        found.append((path, cost))
    return found
