"""Property tests of the closure engine against networkx on random graphs."""
from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcontext.errors import CycleError
from agentcontext.engine.closure import (dependency_order, reference_assemble, shortest_path,
                                        strongly_connected)


@st.composite
def graphs(draw, acyclic: bool):
    n = draw(st.integers(1, 25))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))
    deps: dict[str, list[str]] = {}
    for a, b in edges:
        if acyclic and a >= b:
            continue
        deps.setdefault(str(a), [])
        if str(b) not in deps[str(a)]:
            deps[str(a)].append(str(b))
    return [str(i) for i in range(n)], deps


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=True), st.data())
def test_dag_order(g, data):
    nodes, deps = g
    target = data.draw(st.sampled_from(nodes))
    order = dependency_order([target], deps, lambda x: x in nodes)
    G = nx.DiGraph([(a, b) for a, bs in deps.items() for b in bs])
    G.add_nodes_from(nodes)
    assert set(order) == nx.descendants(G, target) | {target}
    assert len(order) == len(set(order))
    pos = {x: i for i, x in enumerate(order)}
    for a in order:
        for b in deps.get(a, []):
            assert pos[b] < pos[a]
    assert order == reference_assemble(target, deps, lambda x: x in nodes)


@settings(max_examples=300, deadline=None)
@given(graphs(acyclic=False), st.data())
def test_cycles_reported_with_valid_path(g, data):
    nodes, deps = g
    target = data.draw(st.sampled_from(nodes))
    G = nx.DiGraph([(a, b) for a, bs in deps.items() for b in bs])
    G.add_nodes_from(nodes)
    reach = G.subgraph(nx.descendants(G, target) | {target})
    try:
        order = dependency_order([target], deps, lambda x: x in nodes)
    except CycleError as exc:
        cycle = exc.data["cycle"]
        assert cycle[0] == cycle[-1] and len(cycle) >= 2
        for a, b in zip(cycle, cycle[1:]):
            assert b in deps.get(a, [])
        assert not nx.is_directed_acyclic_graph(reach)
        return
    assert nx.is_directed_acyclic_graph(reach)
    assert set(order) == set(reach.nodes)


@settings(max_examples=200, deadline=None)
@given(graphs(acyclic=False))
def test_scc_matches_networkx(g):
    nodes, deps = g
    G = nx.DiGraph([(a, b) for a, bs in deps.items() for b in bs])
    G.add_nodes_from(nodes)
    expected = {frozenset(c) for c in nx.strongly_connected_components(G)
                if len(c) > 1 or G.has_edge(next(iter(c)), next(iter(c)))}
    assert {frozenset(c) for c in strongly_connected(nodes, deps)} == expected


@settings(max_examples=200, deadline=None)
@given(graphs(acyclic=False), st.data())
def test_shortest_path_matches_networkx(g, data):
    nodes, deps = g
    a, b = data.draw(st.sampled_from(nodes)), data.draw(st.sampled_from(nodes))
    G = nx.DiGraph([(x, y) for x, ys in deps.items() for y in ys])
    G.add_nodes_from(nodes)
    path = shortest_path(a, b, deps)
    if nx.has_path(G, a, b):
        assert path is not None and len(path) == nx.shortest_path_length(G, a, b) + 1
        assert path[0] == a and path[-1] == b
    else:
        assert path is None
