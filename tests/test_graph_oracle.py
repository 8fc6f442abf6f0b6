"""ContextGraph against networkx on random graphs: BFS distances, shortest paths, PageRank, centrality."""
from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python  # scipy is not installed here

from agentcontext import ContextGraph

graphs = st.integers(min_value=2, max_value=25).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.floats(min_value=0.05, max_value=1.0, allow_nan=False)), max_size=80)))

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(n: int, edges: list[tuple[int, int, float]]) -> tuple[ContextGraph, nx.DiGraph]:
    g = ContextGraph()
    g.add_nodes([{"id": f"v{i}", "type": "t"} for i in range(n)])
    weights = {(s, t): w for s, t, w in edges if s != t}  # one edge per pair, as add_edges keeps the last
    g.add_edges([{"source": f"v{s}", "target": f"v{t}", "type": "r", "weight": w} for (s, t), w in weights.items()])
    ref = nx.DiGraph()
    ref.add_nodes_from(f"v{i}" for i in range(n))
    ref.add_weighted_edges_from((f"v{s}", f"v{t}", w) for (s, t), w in weights.items())
    return g, ref


@SETTINGS
@given(graphs, st.integers(min_value=1, max_value=6))
def test_bfs_distances_match_networkx(data, hops) -> None:
    n, edges = data
    g, ref = build(n, edges)
    for direction, view in (("out", ref), ("in", ref.reverse()), ("both", ref.to_undirected())):
        expected = nx.single_source_shortest_path_length(view, "v0", cutoff=hops)
        assert g.hop_distances("v0", max_hops=hops, direction=direction) == expected
        got = {x["id"]: x["hop"] for x in g.get_neighbors("v0", hops=hops, direction=direction)}
        assert got == {k: v for k, v in expected.items() if k != "v0"}


@SETTINGS
@given(graphs)
def test_shortest_paths_match_networkx(data) -> None:
    n, edges = data
    g, ref = build(n, edges)
    for target in (f"v{i}" for i in range(n)):
        path = g.shortest_path("v0", target)
        if nx.has_path(ref, "v0", target):
            assert path is not None and len(path) - 1 == nx.shortest_path_length(ref, "v0", target)
            assert path[0] == "v0" and path[-1] == target
            assert all(ref.has_edge(a, b) for a, b in zip(path, path[1:]))
        else:
            assert path is None


@SETTINGS
@given(graphs)
def test_distance_metadata_paths_are_real_shortest_paths(data) -> None:
    n, edges = data
    g, ref = build(n, edges)
    lengths = nx.single_source_shortest_path_length(ref, "v0", cutoff=4)
    for x in g.get_neighbors("v0", hops=4, include_distance_metadata=True):
        path = x["path_to_anchor"]
        assert len(path) - 1 == x["hop_count"] == lengths[x["node_id"]]
        decay = 1.0
        for a, b in zip(path, path[1:]):
            decay *= ref[a][b]["weight"]
        assert x["confidence_decay"] == pytest.approx(decay)
        assert x["weight"] == pytest.approx(ref[path[-2]][path[-1]]["weight"])


@SETTINGS
@given(graphs, st.booleans())
def test_pagerank_matches_networkx(data, weighted) -> None:
    n, edges = data
    g, ref = build(n, edges)
    expected = _pagerank_python(ref, alpha=0.85, weight="weight" if weighted else None, tol=1e-12, max_iter=1000)
    got = g.pagerank(weighted=weighted)
    assert set(got) == set(expected)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v, abs=1e-6)


@SETTINGS
@given(graphs)
def test_centrality_matches_networkx(data) -> None:
    n, edges = data
    g, ref = build(n, edges)
    for measure, expected in (("degree", nx.degree_centrality(ref)), ("in_degree", nx.in_degree_centrality(ref)),
                              ("out_degree", nx.out_degree_centrality(ref)),
                              ("betweenness", nx.betweenness_centrality(ref)),
                              ("closeness", nx.closeness_centrality(ref))):
        got = g.centrality(measure)
        for k, v in expected.items():
            assert got[k] == pytest.approx(v, abs=1e-9), (measure, k)


@SETTINGS
@given(graphs, st.integers(min_value=1, max_value=3), st.sampled_from(["out", "in", "both"]),
       st.sampled_from([None, 0.5]), st.sampled_from([None, ["r"], ["r", "s"]]))
def test_store_walk_and_csr_walk_agree_exactly(data, hops, direction, min_weight, types) -> None:
    """Right after a write the walk asks the store; later it uses the CSR: the answers must be identical."""
    n, edges = data
    g, _ = build(n, edges)
    g.add_edges([{"source": f"v{t}", "target": f"v{s}", "type": "s", "weight": w,
                  "valid_until": "2000-01-01T00:00:00Z" if s % 3 == 0 else None} for s, t, w in edges[:10]])
    kwargs = dict(hops=hops, direction=direction, min_weight=min_weight, relationship_types=types,
                  include_distance_metadata=True)
    assert g.workspace.peek(g._cache_key("csr")) is None  # stale: this walk goes through the store
    from_store = g.get_neighbors("v0", **kwargs)
    g.csr()  # build the adjacency: the next walk uses it
    assert g.workspace.peek(g._cache_key("csr")) is not None
    assert g.get_neighbors("v0", **kwargs) == from_store
