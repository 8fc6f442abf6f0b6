"""lint's redundant edges (engine/closure.redundant_edges) against a breadth-first search from every
prerequisite of every node, on random DAGs: the same edges with the same witness paths."""
import random
from collections import deque

import pytest

from agentcontext.engine.closure import redundant_edges
from agentcontext.errors import CycleError


def by_search(deps):
    """The obvious definition: a -> b is redundant when another prerequisite of a reaches b; the witness
    is the first such prerequisite in declared order and the breadth-first path from it."""
    out = []
    for a, children in deps.items():
        children = list(dict.fromkeys(children))
        found = {}
        for via in children:
            parent, queue, seen = {}, deque([via]), {via}
            while queue:
                node = queue.popleft()
                for child in deps.get(node, ()):
                    if child not in seen:
                        seen.add(child)
                        parent[child] = node
                        queue.append(child)
            for b in children:
                if b != via and b in parent and b not in found:
                    path = [b]
                    while path[-1] != via:
                        path.append(parent[path[-1]])
                    found[b] = [a] + list(reversed(path))
        out += [(a, b, found[b]) for b in children if b in found]
    return out


def random_dag(rng, n, p):
    names = [f"d{i}" for i in range(n)]
    rng.shuffle(names)
    deps = {}
    for i, a in enumerate(names):
        below = [names[j] for j in range(i) if rng.random() < p]
        rng.shuffle(below)
        if below or rng.random() < 0.5:
            deps[a] = below
    return deps


@pytest.mark.parametrize("seed", range(40))
def test_the_same_edges_and_paths_as_a_search_from_every_prerequisite(seed):
    rng = random.Random(seed)
    deps = random_dag(rng, rng.randint(2, 40), rng.choice([0.05, 0.15, 0.4]))
    assert sorted(redundant_edges(deps)) == sorted(by_search(deps))


def test_a_chain_with_a_shortcut_and_duplicates():
    deps = {"c": ["b", "a", "a"], "b": ["a"], "a": []}
    assert redundant_edges(deps) == [("c", "a", ["c", "b", "a"])]


def test_a_cycle_is_refused_with_its_path():
    with pytest.raises(CycleError) as info:
        redundant_edges({"a": ["b", "c"], "b": ["c"], "c": ["a"]})
    assert info.value.data["cycle"][0] == info.value.data["cycle"][-1]

