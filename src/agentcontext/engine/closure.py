"""Dependency closure in reading order (the SemDAG rule), iteratively, plus the lint helpers.

``deps`` maps a node to its prerequisites in declared order. The order produced is exactly the
seed's recursive depth-first post-order (prerequisites first, ties by declared order), but with an
explicit stack so a 100,000-deep chain works.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Container, Iterable, Iterator, Mapping, Sequence

from ..errors import CycleError, MissingModuleError

Deps = Mapping[str, Sequence[str]]


def dependency_order(targets: Iterable[str], deps: Deps, known: Container[str] | Callable[[str], bool],
                     label: Callable[[str], str] = str) -> list[str]:
    """Targets and their transitive prerequisites, each once, every prerequisite before its dependents.

    ``known`` is the set of existing modules (or a predicate). Raises CycleError (``cycle`` = the whole
    path, first repeated last) or MissingModuleError (``missing`` and the ``chain`` that required it).
    """
    exists = known if callable(known) and not isinstance(known, (set, frozenset, dict)) else known.__contains__
    included: set[str] = set()
    order: list[str] = []
    empty: Sequence[str] = ()
    get = deps.get
    for target in targets:
        if target in included:
            continue
        if not exists(target):
            raise MissingModuleError(f"module {label(target)!r} does not exist; check the selector",
                                     missing=label(target), chain=[label(target)], required_by=None)
        stack: list[tuple[str, Iterator[str]]] = [(target, iter(get(target, empty)))]
        on_path: dict[str, int] = {target: 0}  # node -> depth in stack (the "visiting" set)
        while stack:
            node, children = stack[-1]
            for child in children:
                if child in included:
                    continue
                if child in on_path:
                    cycle = [label(n) for n, _ in stack[on_path[child]:]] + [label(child)]
                    raise CycleError(f"dependency cycle: {' -> '.join(cycle)}; remove one of these edges",
                                     cycle=cycle)
                if not exists(child):
                    chain = [label(n) for n, _ in stack] + [label(child)]
                    raise MissingModuleError(
                        f"missing module {label(child)!r}, required by {label(node)!r} "
                        f"(chain: {' -> '.join(chain)}); add it or remove the edge",
                        missing=label(child), required_by=label(node), chain=chain)
                on_path[child] = len(stack)
                stack.append((child, iter(get(child, empty))))
                break
            else:
                stack.pop()
                del on_path[node]
                included.add(node)
                order.append(node)
    return order


def reference_assemble(target: str, deps: Deps, exists: Callable[[str], bool]) -> list[str]:
    """The seed's recursive teaching algorithm, verbatim in Python (for benchmarks and as an oracle)."""
    visiting: set[str] = set()
    included: set[str] = set()
    bundle: list[str] = []

    def visit(name: str) -> None:
        if name in included:
            return
        if name in visiting:
            raise CycleError("Dependency cycle: " + name, cycle=[name])
        if not exists(name):
            raise MissingModuleError("Missing Module: " + name, missing=name, chain=[name])
        visiting.add(name)
        for prerequisite in deps.get(name, ()):
            visit(prerequisite)
        visiting.discard(name)
        included.add(name)
        bundle.append(name)

    visit(target)
    return bundle


def strongly_connected(nodes: Iterable[str], deps: Deps) -> list[list[str]]:
    """Tarjan's algorithm without recursion; returns components with more than one node or a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = deps.get(node, ())
            recurse = False
            for j in range(i, len(children)):
                child = children[j]
                if child not in index:
                    work.append((node, j + 1))
                    work.append((child, 0))
                    recurse = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if recurse:
                continue
            if work and work[-1][1] > 0:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in deps.get(node, ()):
                    out.append(comp)
    return out


def cycle_in(component: Sequence[str], deps: Deps) -> list[str]:
    """One concrete cycle through a strongly connected component, first node repeated at the end."""
    members = set(component)
    start = min(component)
    parent: dict[str, str] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        node = queue.popleft()
        for child in deps.get(node, ()):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if child in members and child not in seen:
                seen.add(child)
                parent[child] = node
                queue.append(child)
    return [start, start]


def shortest_path(src: str, dst: str, deps: Deps) -> list[str] | None:
    """Breadth-first path from ``src`` to ``dst`` following ``deps``; None if unreachable."""
    if src == dst:
        return [src]
    parent: dict[str, str] = {}
    queue = deque([src])
    seen = {src}
    while queue:
        node = queue.popleft()
        for child in deps.get(node, ()):
            if child in seen:
                continue
            parent[child] = node
            if child == dst:
                path = [dst]
                while path[-1] != src:
                    path.append(parent[path[-1]])
                return list(reversed(path))
            seen.add(child)
            queue.append(child)
    return None


def redundant_edges(deps: Deps) -> list[tuple[str, str, list[str]]]:
    """Edges a -> b where b is also reachable from a through another prerequisite (a longer path).

    Returns (a, b, the longer path). Cycles are ignored here (lint reports them separately).
    """
    out = []
    for a, children in deps.items():
        if len(children) < 2:
            continue
        targets = set(children)
        for via in children:
            # Everything reachable from `via` (excluding the direct edge a -> b itself).
            parent: dict[str, str] = {}
            queue = deque([via])
            seen = {via, a}
            while queue:
                node = queue.popleft()
                for child in deps.get(node, ()):
                    if child in seen:
                        continue
                    seen.add(child)
                    parent[child] = node
                    queue.append(child)
            for b in list(targets):
                if b != via and b in parent:
                    path = [b]
                    while path[-1] != via:
                        path.append(parent[path[-1]])
                    out.append((a, b, [a] + list(reversed(path))))
                    targets.discard(b)
    return out
