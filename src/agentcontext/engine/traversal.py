"""Traversal engine: a CSR adjacency built from the store, BFS with distance metadata, shortest paths.

Everything is iterative (no recursion), so very deep graphs are fine. The CSR arrays are a derived
structure: ``load_adjacency`` builds them from ``store.adjacency()`` and the caller caches them by
the store's change counter (``Workspace.cached``).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Container, Iterator, Sequence

import numpy as np

from ..store.base import EdgeStore


@dataclass
class CSR:
    """Directed adjacency in compressed sparse row form, plus the reverse direction on demand."""

    ids: list[str]
    index: dict[str, int]
    ptr: np.ndarray  # int64, len n+1
    dst: np.ndarray  # int32
    weight: np.ndarray  # float64
    etype: np.ndarray  # int32 codes into ``types``
    types: list[str]
    # edges with a validity window: CSR position -> (valid_from, valid_until) as sortable ISO text
    timed: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    _reverse: "CSR | None" = None
    _rev_pos: np.ndarray | None = None  # reverse position -> forward position

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def m(self) -> int:
        return int(self.dst.shape[0])

    def sources(self) -> np.ndarray:
        """The source index of every edge (aligned with ``dst``)."""
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.ptr))

    def reverse(self) -> tuple["CSR", np.ndarray]:
        """The transposed adjacency and, for each of its edges, the forward edge position."""
        if self._reverse is None:
            src = self.sources()
            order = np.lexsort((src, self.dst))  # by dst, then src
            counts = np.bincount(self.dst, minlength=self.n)
            ptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(counts, out=ptr[1:])
            self._reverse = CSR(self.ids, self.index, ptr, src[order].astype(np.int32), self.weight[order],
                                self.etype[order], self.types)
            self._rev_pos = order.astype(np.int64)
        assert self._rev_pos is not None
        return self._reverse, self._rev_pos


def load_adjacency(store: EdgeStore, namespace: str | Sequence[str] | None = None, as_of: str | None = None,
                   node_ids: Sequence[str] | None = None, only: Container[str] | None = None) -> CSR:
    """Build the CSR from the store: every edge active now (or as it stood ``as_of``, valid then).

    ``node_ids`` adds isolated nodes so analytics count them; edges may name nodes outside it, unless ``only``
    is given: then only edges with both ends in ``only`` are kept (the part of the graph a reader may see).
    """
    # now: edge_columns() rows carry each edge's validity; as_of: adjacency() has only the edges valid then
    rows: list[tuple] = (store.edge_columns(namespace) if as_of is None
                         else store.adjacency(namespace=namespace, as_of=as_of, valid_at=as_of))
    if only is not None:
        rows = [r for r in rows if r[0] in only and r[1] in only]
    m = len(rows)
    timed_at: list[int] = []  # row numbers of edges with a validity window
    col_from: tuple = ()
    col_until: tuple = ()
    if m and as_of is None:
        col_src, col_dst, col_type, col_weight, col_pos, col_from, col_until = zip(*rows)
        timed_at = [i for i, (a, b) in enumerate(zip(col_from, col_until)) if a is not None or b is not None]
    elif m:
        col_src, col_dst, col_type, col_weight, col_pos = zip(*rows)
    else:
        col_src = col_dst = col_type = col_weight = col_pos = ()
    # node index = text order of the ids (as the store sorts them), so index order is declared order too
    ids = sorted(set(node_ids or ()).union(col_src, col_dst))
    index = {nid: i for i, nid in enumerate(ids)}
    types = sorted(set(col_type))
    type_index = {t: i for i, t in enumerate(types)}
    src = np.fromiter(map(index.__getitem__, col_src), dtype=np.int32, count=m)
    dst = np.fromiter(map(index.__getitem__, col_dst), dtype=np.int32, count=m)
    etype = np.fromiter(map(type_index.__getitem__, col_type), dtype=np.int32, count=m)
    weight = np.fromiter(col_weight, dtype=np.float64, count=m)
    pos = np.fromiter(col_pos, dtype=np.int64, count=m)
    del rows, col_src, col_dst, col_type, col_weight, col_pos
    n = len(ids)
    # each node's edges in declared order: (position, target, type), as the store lists them
    order = np.lexsort((etype, dst, pos, src)) if m else np.zeros(0, dtype=np.int64)
    src, dst, weight, etype = src[order], dst[order], weight[order], etype[order]
    counts = np.bincount(src, minlength=n) if m else np.zeros(n, dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    csr = CSR(ids, index, ptr, dst, weight, etype, types)
    if col_from:  # validity came with the rows: map row numbers to CSR positions
        position_of = np.empty(m, dtype=np.int64)
        position_of[order] = np.arange(m)
        for i in timed_at:
            csr.timed[int(position_of[i])] = (col_from[i], col_until[i])
    return csr


def blocked_edges(csr: CSR, at: str) -> set[int]:
    """Forward positions of edges whose validity window does not contain ``at``."""
    return {p for p, (vf, vu) in csr.timed.items() if (vf is not None and vf > at) or (vu is not None and vu <= at)}


@dataclass
class Reached:
    index: int
    hop: int
    parent: int  # -1 for the anchor
    edge: int  # forward edge position used to reach it (-1 for the anchor)
    decay: float  # product of the edge weights along the BFS path


def _steps(csr: CSR, node: int, direction: str, types: set[int] | None, min_weight: float | None,
           blocked: set[int]) -> list[tuple[int, int, float]]:
    """(neighbour, forward edge position, weight) for one node's usable edges, in declared order."""
    out: list[tuple[int, int, float]] = []
    if direction in ("out", "both"):
        a, b = int(csr.ptr[node]), int(csr.ptr[node + 1])
        for k, (nb, w, t) in enumerate(zip(csr.dst[a:b].tolist(), csr.weight[a:b].tolist(),
                                           csr.etype[a:b].tolist())):
            p = a + k
            if (types is None or t in types) and (min_weight is None or w >= min_weight) and p not in blocked:
                out.append((nb, p, w))
    if direction in ("in", "both"):
        rev, rev_pos = csr.reverse()
        a, b = int(rev.ptr[node]), int(rev.ptr[node + 1])
        for k, (nb, w, t) in enumerate(zip(rev.dst[a:b].tolist(), rev.weight[a:b].tolist(),
                                           rev.etype[a:b].tolist())):
            p = int(rev_pos[a + k])
            if (types is None or t in types) and (min_weight is None or w >= min_weight) and p not in blocked:
                out.append((nb, p, w))
    return out


def type_codes(csr: CSR, relationship_types: Sequence[str] | None) -> set[int] | None:
    if relationship_types is None:
        return None
    wanted = set(relationship_types)
    return {i for i, t in enumerate(csr.types) if t in wanted}


def bfs(csr: CSR, start: int, hops: int, direction: str = "out", types: set[int] | None = None,
        min_weight: float | None = None, blocked: set[int] | frozenset[int] = frozenset()) -> list[Reached]:
    """Breadth-first search from ``start`` up to ``hops`` edges; the anchor itself is not returned.

    Each node is reached once, by the first (shortest, then declared-order) path.
    """
    if direction not in ("out", "in", "both"):
        from ..errors import ValidationError

        raise ValidationError(f"unknown direction {direction!r}; use out, in or both", direction=direction)
    blocked_set = blocked if isinstance(blocked, set) else set(blocked)
    seen = {start: Reached(start, 0, -1, -1, 1.0)}
    order: list[Reached] = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        here = seen[node]
        if here.hop >= hops:
            continue
        for nb, pos, w in _steps(csr, node, direction, types, min_weight, blocked_set):
            if nb in seen:
                continue
            reached = Reached(nb, here.hop + 1, node, pos, here.decay * w)
            seen[nb] = reached
            order.append(reached)
            queue.append(nb)
    return order


def path_to(reached: dict[int, Reached], target: int) -> list[int]:
    """The anchor-to-target index path recorded by ``bfs`` (iterative walk up the parents)."""
    path = [target]
    node = reached[target]
    while node.parent != -1:
        path.append(node.parent)
        node = reached[node.parent]
    path.reverse()
    return path


def shortest_path(csr: CSR, source: int, target: int, max_hops: int | None = None, direction: str = "out",
                  blocked: set[int] | frozenset[int] = frozenset()) -> list[int] | None:
    """An unweighted shortest path (fewest edges) as node indices, or None if unreachable."""
    if source == target:
        return [source]
    limit = csr.n if max_hops is None else max_hops
    parent = {source: -1}
    frontier = [source]
    depth = 0
    blocked = blocked if isinstance(blocked, set) else set(blocked)
    while frontier and depth < limit:
        depth += 1
        nxt: list[int] = []
        for node in frontier:
            for nb, _pos, _w in _steps(csr, node, direction, None, None, blocked):
                if nb in parent:
                    continue
                parent[nb] = node
                if nb == target:
                    path = [nb]
                    while parent[path[-1]] != -1:
                        path.append(parent[path[-1]])
                    return path[::-1]
                nxt.append(nb)
        frontier = nxt
    return None


def distance_band(hops: int) -> str:
    """Seed 003's bands: direct (1), near (2), mid-range (3-4), distant (5+)."""
    if hops <= 1:
        return "direct"
    if hops == 2:
        return "near"
    if hops <= 4:
        return "mid-range"
    return "distant"


@dataclass
class Step:
    """One node reached by a traversal, by store id (the same shape whichever engine walked)."""

    sid: str
    hop: int
    parent: str | None
    rel: str
    weight: float
    decay: float


def csr_steps(csr: CSR, reached: list[Reached]) -> list[Step]:
    ids, types = csr.ids, csr.types
    return [Step(ids[r.index], r.hop, ids[r.parent], types[int(csr.etype[r.edge])], float(csr.weight[r.edge]),
                 r.decay) for r in reached]


def sql_bfs(store: EdgeStore, namespace: str | None, start: str, hops: int, direction: str,
            relationship_types: Sequence[str] | None, min_weight: float | None, now: str) -> list[Step]:
    """BFS that asks the store for each frontier's edges: cost follows the neighbourhood, not the graph.

    Used while the CSR is stale (right after a write) and on stores too large to mirror (``SERVER_QUERIES``);
    visits edges in the same order as ``bfs``. The namespace is filtered here, not in SQL: with it there, SQLite
    may pick the namespace index and scan it.
    """
    check_direction(direction)
    order: list[Step] = []
    if hops <= 0:
        return order
    for depth, level in enumerate(frontier_walk(store, namespace, start, direction, relationship_types, min_weight,
                                                now), 1):
        if depth > hops:
            break
        order.extend(level)
    return order


def sql_shortest_path(store: EdgeStore, namespace: str | None, source: str, target: str, max_hops: int | None,
                      direction: str, now: str) -> list[str] | None:
    """``shortest_path`` by frontier queries (store ids): the first path found breadth-first, as the CSR finds it."""
    check_direction(direction)
    if source == target:
        return [source]
    seen: dict[str, Step] = {}
    for depth, level in enumerate(frontier_walk(store, namespace, source, direction, None, None, now), 1):
        if max_hops is not None and depth > max_hops:
            return None
        for step in level:
            seen[step.sid] = step
            if step.sid == target:
                path = [target]
                while seen[path[-1]].parent not in (None, source):
                    path.append(seen[path[-1]].parent)  # type: ignore[arg-type]
                return [source, *reversed(path)]
    return None


def check_direction(direction: str) -> None:
    if direction not in ("out", "in", "both"):
        from ..errors import ValidationError

        raise ValidationError(f"unknown direction {direction!r}; use out, in or both", direction=direction)


def frontier_walk(store: EdgeStore, namespace: str | None, start: str, direction: str,
                  relationship_types: Sequence[str] | None, min_weight: float | None, now: str) -> Iterator[list[Step]]:
    """Breadth-first from ``start``, one store query per direction and level (``edges_touching``): yields the nodes
    first reached at each depth, each by its first edge in declared order; stops when nothing new is reached."""
    check_direction(direction)
    types = list(relationship_types) if relationship_types is not None else None
    if types is not None and not types:
        return
    seen: dict[str, Step] = {start: Step(start, 0, None, "", 1.0, 1.0)}
    frontier = [start]
    depth = 0
    while frontier:
        depth += 1
        outs: dict[str, list[tuple[str, str, float]]] = {}
        ins: dict[str, list[tuple[str, str, float]]] = {}
        if direction in ("out", "both"):
            for s, d, t, w, ns, vf, vu in store.edges_touching(frontier, "src", types, min_weight):
                if (namespace is None or ns == namespace) and usable(vf, vu, now):
                    outs.setdefault(s, []).append((d, t, w))
        if direction in ("in", "both"):
            for s, d, t, w, ns, vf, vu in store.edges_touching(frontier, "dst", types, min_weight):
                if (namespace is None or ns == namespace) and usable(vf, vu, now):
                    ins.setdefault(d, []).append((s, t, w))
        level: list[Step] = []
        for node in frontier:
            here = seen[node]
            for nb, rel, w in outs.get(node, []) + ins.get(node, []):
                if nb in seen:
                    continue
                step = Step(nb, depth, node, rel, w, here.decay * w)
                seen[nb] = step
                level.append(step)
        if not level:
            return
        yield level
        frontier = [step.sid for step in level]


def usable(valid_from: str | None, valid_until: str | None, now: str) -> bool:
    return not ((valid_from is not None and valid_from > now) or (valid_until is not None and valid_until <= now))


def step_path(steps: dict[str, Step], sid: str) -> list[str]:
    """Anchor-to-node store ids along the recorded parents (iterative)."""
    path = [sid]
    node = steps[sid]
    while node.parent is not None:
        path.append(node.parent)
        node = steps[node.parent]
    path.reverse()
    return path
