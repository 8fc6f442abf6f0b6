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


class Dag:
    """Prerequisites over integer ids: ``children[i]`` is node ``i``'s tuple of prerequisites in declared
    order; ``exists[i]`` says whether node ``i`` is a module (an edge may name a missing one). Plain tuples
    and a bytearray, not numpy: the walk reads them one element at a time."""

    __slots__ = ("children", "exists")

    def __init__(self, children: list[tuple[int, ...]], exists: bytearray) -> None:
        self.children, self.exists = children, exists

    @property
    def n(self) -> int:
        return len(self.children)


NEW, ON_PATH, DONE = 0, 1, 2


def missing_target(name: str) -> MissingModuleError:
    return MissingModuleError(f"module {name!r} does not exist; check the selector", missing=name, chain=[name],
                              required_by=None)


def closure_order(targets: Iterable[int], dag: Dag, label: Callable[[int], str] = str) -> list[int]:
    """Targets and their transitive prerequisites, each once, every prerequisite before its dependents.

    Exactly the seed's recursive depth-first post-order (prerequisites first, ties by declared order),
    with an explicit stack, so a 100,000-deep chain works. Raises CycleError (``cycle`` = the whole
    path, first repeated last) or MissingModuleError (``missing`` and the ``chain`` that required it).
    """
    children, exists = dag.children, dag.exists
    state = bytearray(dag.n)
    order: list[int] = []
    finish = order.append
    for target in targets:
        if state[target] == DONE:
            continue
        if not exists[target]:
            raise missing_target(label(target))
        # ``node`` is being visited and ``prerequisites`` iterates over its prerequisites; ``above`` holds the
        # same pair for each node on the path above it (locals, not a stack top: this loop is flash's hot path).
        above: list[tuple[int, Iterator[int]]] = []
        climb, back = above.append, above.pop
        node, prerequisites = target, iter(children[target])
        state[target] = ON_PATH
        while True:
            for child in prerequisites:
                seen = state[child]
                if seen:
                    if seen == DONE:
                        continue
                    path = [n for n, _ in above] + [node]
                    cycle = [label(n) for n in path[path.index(child):]] + [label(child)]
                    raise CycleError(f"dependency cycle: {' -> '.join(cycle)}; remove one of these edges",
                                     cycle=cycle)
                if not exists[child]:
                    chain = [label(n) for n, _ in above] + [label(node), label(child)]
                    raise MissingModuleError(
                        f"missing module {label(child)!r}, required by {label(node)!r} "
                        f"(chain: {' -> '.join(chain)}); add it or remove the edge",
                        missing=label(child), required_by=label(node), chain=chain)
                state[child] = ON_PATH
                climb((node, prerequisites))
                node, prerequisites = child, iter(children[child])
                break
            else:
                state[node] = DONE
                finish(node)
                if not above:
                    break
                node, prerequisites = back()
    return order


def dependency_order(targets: Iterable[str], deps: Deps, known: Container[str] | Callable[[str], bool],
                     label: Callable[[str], str] = str) -> list[str]:
    """``closure_order`` over named modules: ``deps`` maps a module to its prerequisites in declared order and
    ``known`` is the set of existing modules (or a predicate). Same order and errors."""
    exists = known if callable(known) and not isinstance(known, (set, frozenset, dict)) else known.__contains__
    targets = list(targets)
    index: dict[str, int] = {}
    names: list[str] = []
    rows: list[tuple[int, ...]] = []
    flags = bytearray()
    empty: Sequence[str] = ()
    todo = list(targets)
    while todo:  # number the modules reachable from the targets
        name = todo.pop()
        if name in index:
            continue
        index[name] = len(names)
        names.append(name)
        flags.append(1 if exists(name) else 0)
        rows.append(())
        todo.extend(deps.get(name, empty) if flags[-1] else ())
    for name, i in index.items():
        if flags[i]:
            rows[i] = tuple(index[child] for child in deps.get(name, empty))
    order = closure_order([index[t] for t in targets], Dag(rows, flags), lambda i: label(names[i]))
    return [names[i] for i in order]


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

    Returns (a, b, the longer path: a, the first prerequisite of a in declared order that reaches b, and
    the shortest path on from it). ``deps`` must be acyclic (lint removes cycles first and reports them
    separately); a cycle raises CycleError. Reachability is one bitset per node, built prerequisites
    first and dropped once every node that needs it is done, so 10,000 docs take milliseconds, not a
    breadth-first search from every prerequisite of every node.
    """
    order = _prerequisites_first(deps)
    bit = {node: 1 << i for i, node in enumerate(order)}
    waiting: dict[str, int] = {}
    for node in order:
        for child in set(deps.get(node, ())):
            waiting[child] = waiting.get(child, 0) + 1
    reach: dict[str, int] = {}  # node -> bitset of the nodes reachable from it (itself excluded)
    found: dict[str, list[tuple[str, str]]] = {}
    for a in order:
        children = list(dict.fromkeys(deps.get(a, ())))
        below = [reach.get(c, 0) for c in children]
        everything = 0
        for c, r in zip(children, below):
            everything |= bit[c] | r
        reach[a] = everything
        if len(children) >= 2:
            pairs = [(via, b) for via, r in zip(children, below) if r
                     for b in children if b != via and r & bit[b]]
            first_via: dict[str, str] = {}
            for via, b in pairs:
                first_via.setdefault(b, via)
            found[a] = sorted(first_via.items(), key=lambda bv: (children.index(bv[1]), children.index(bv[0])))
        for child in children:
            waiting[child] -= 1
            if not waiting[child]:
                reach.pop(child, None)
    out = []
    for a in deps:
        for b, via in found.get(a, ()):
            path = shortest_path(via, b, deps)
            assert path is not None  # b is reachable from via by construction
            out.append((a, b, [a] + path))
    return out


def _prerequisites_first(deps: Deps) -> list[str]:
    """Every node named in ``deps`` (keys and prerequisites), each after all its prerequisites."""
    nodes = list(dict.fromkeys([*deps, *(c for cs in deps.values() for c in cs)]))
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    order: list[str] = []
    for root in nodes:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(deps.get(root, ())))]
        while stack:
            node, rest = stack[-1]
            child = next(rest, None)
            if child is None:
                stack.pop()
                state[node] = 2
                order.append(node)
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(deps.get(child, ()))))
            elif state[child] == 1:
                path = [n for n, _ in stack]
                cycle = path[path.index(child):] + [child]
                raise CycleError(f"cycle {' -> '.join(cycle)}: redundant edges need an acyclic graph", cycle=cycle)
    return order
