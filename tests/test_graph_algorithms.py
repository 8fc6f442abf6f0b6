"""kg_algorithms: link prediction and k-shortest paths against networkx (the oracle) on random graphs; the flags."""
from __future__ import annotations

import sys

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcontext import ContextGraph
from agentcontext.errors import DependencyMissingError, ValidationError

graphs = st.integers(min_value=2, max_value=18).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.floats(min_value=0.05, max_value=1.0, allow_nan=False)), max_size=50)))

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ORACLE = {"adamic_adar": nx.adamic_adar_index, "jaccard": nx.jaccard_coefficient,
          "resource_allocation": nx.resource_allocation_index,
          "preferential_attachment": nx.preferential_attachment}


def build(n: int, edges: list[tuple[int, int, float]]) -> tuple[ContextGraph, nx.DiGraph]:
    g = ContextGraph()
    g.add_nodes([{"id": f"v{i}", "type": "t" if i % 3 else "u"} for i in range(n)])
    weights = {(s, t): w for s, t, w in edges if s != t}
    g.add_edges([{"source": f"v{s}", "target": f"v{t}", "type": "r", "weight": w} for (s, t), w in weights.items()])
    ref = nx.DiGraph()
    ref.add_nodes_from(f"v{i}" for i in range(n))
    ref.add_weighted_edges_from((f"v{s}", f"v{t}", w) for (s, t), w in weights.items())
    return g, ref


def expected_scores(und: nx.Graph, method: str, source: str | None = None) -> dict[tuple[str, str], float]:
    pairs = [(u, v) for u, v in nx.non_edges(und) if source is None or source in (u, v)]
    out = {}
    for u, v, s in ORACLE[method](und, pairs):
        if s > 0:
            if source is not None and v == source:
                u, v = v, u
            out[(u, v) if source is not None else tuple(sorted((u, v)))] = s
    return out


@SETTINGS
@given(graphs, st.sampled_from(sorted(ORACLE)))
def test_predict_links_from_a_node_matches_networkx(data, method) -> None:
    n, edges = data
    g, ref = build(n, edges)
    und = ref.to_undirected()
    for source in ("v0", f"v{n - 1}"):
        got = g.predict_links(source, top_k=n * n, method=method)
        want = expected_scores(und, method, source)
        assert {(r["source"], r["target"]): r["score"] for r in got} == pytest.approx(want)
        scores = [r["score"] for r in got]
        assert scores == sorted(scores, reverse=True)
        top = g.predict_links(source, top_k=3, method=method)
        assert [r["score"] for r in top] == pytest.approx(sorted(want.values(), reverse=True)[:3])


@SETTINGS
@given(graphs, st.sampled_from(sorted(ORACLE)), st.integers(min_value=1, max_value=12))
def test_predict_links_over_the_graph_matches_networkx(data, method, k) -> None:
    n, edges = data
    g, ref = build(n, edges)
    want = expected_scores(ref.to_undirected(), method)
    everything = g.predict_links(top_k=n * n, method=method)
    got = {tuple(sorted((r["source"], r["target"]))): r["score"] for r in everything}
    assert got == pytest.approx(want)
    top = g.predict_links(top_k=k, method=method)
    assert [r["score"] for r in top] == pytest.approx(sorted(want.values(), reverse=True)[:k])
    assert len({tuple(sorted((r["source"], r["target"]))) for r in top}) == len(top)


@SETTINGS
@given(graphs, st.integers(min_value=1, max_value=6), st.booleans())
def test_k_shortest_paths_match_networkx(data, k, weighted) -> None:
    n, edges = data
    g, ref = build(n, edges)
    weight = "weight" if weighted else None
    for direction, view in (("out", ref), ("both", ref.to_undirected())):
        if weighted and direction == "both":
            continue  # a pair joined both ways has two weights; networkx keeps one of them
        for target in (f"v{n - 1}", f"v{n // 2}"):
            got = g.k_shortest_paths("v0", target, k=k, weighted=weighted, direction=direction)
            if not nx.has_path(view, "v0", target):
                assert got == []
                continue
            want = []
            for path in nx.shortest_simple_paths(view, "v0", target, weight=weight):
                want.append(nx.path_weight(view, path, "weight") if weighted else len(path) - 1)
                if len(want) == k:
                    break
            assert [p["length"] for p in got] == pytest.approx(want)
            assert len({tuple(p["path"]) for p in got}) == len(got)
            for p in got:
                assert p["path"][0] == "v0" and p["path"][-1] == target
                assert len(set(p["path"])) == len(p["path"])  # loopless
                assert all(view.has_edge(a, b) for a, b in zip(p["path"], p["path"][1:]))


def test_k_shortest_paths_respects_max_hops_and_types() -> None:
    g = ContextGraph()
    g.add_edges([{"source": a, "target": b, "type": t} for a, b, t in [
        ("a", "b", "x"), ("b", "c", "x"), ("a", "c", "y"), ("c", "d", "x"), ("a", "d", "y")]])
    assert [p["path"] for p in g.k_shortest_paths("a", "d", k=5)] == [
        ["a", "d"], ["a", "c", "d"], ["a", "b", "c", "d"]]
    assert [p["path"] for p in g.k_shortest_paths("a", "d", k=5, max_hops=2)] == [["a", "d"], ["a", "c", "d"]]
    assert [p["path"] for p in g.k_shortest_paths("a", "d", k=5, relationship_types=["x"])] == [
        ["a", "b", "c", "d"]]
    assert g.k_shortest_paths("d", "a", k=2) == []
    assert [p["path"] for p in g.k_shortest_paths("d", "a", k=1, direction="in")] == [["d", "a"]]


def test_predict_links_filters_by_node_type() -> None:
    g = ContextGraph()
    g.add_nodes([{"id": "alice", "type": "person"}, {"id": "bob", "type": "person"},
                 {"id": "acme", "type": "company"}, {"id": "initech", "type": "company"}])
    g.add_edges([{"source": "alice", "target": "acme", "type": "works_at"},
                 {"source": "bob", "target": "acme", "type": "works_at"},
                 {"source": "bob", "target": "initech", "type": "works_at"}])
    found = g.predict_links("alice", method="jaccard")
    assert [(r["target"], r["score"]) for r in found] == [("bob", 0.5)]
    assert g.predict_links("alice", method="jaccard", node_type="company") == []
    assert [r["target"] for r in g.predict_links("alice", method="preferential_attachment",
                                                 node_type="company")] == ["initech"]


def test_predict_links_refuses_bad_arguments() -> None:
    g = ContextGraph()
    g.add_edge("a", "b")
    with pytest.raises(ValidationError, match="unknown link prediction method"):
        g.predict_links("a", method="katz")
    with pytest.raises(ValidationError, match="top_k"):
        g.predict_links("a", top_k=0)
    with pytest.raises(Exception, match="not in graph"):
        g.predict_links("nobody")


def test_kg_algorithms_off_refuses_paths_and_predictions() -> None:
    g = ContextGraph(kg_algorithms=False)
    g.add_edge("a", "b")
    for call in (lambda: g.predict_links("a"), lambda: g.k_shortest_paths("a", "b"),
                 lambda: g.shortest_path("a", "b")):
        with pytest.raises(ValidationError, match="kg_algorithms"):
            call()
    assert g.get_neighbors("a") and g.pagerank()  # traversal and analytics are other flags


def test_unknown_graph_options_are_refused() -> None:
    with pytest.raises(TypeError):
        ContextGraph(kg_algoritms=True)  # a misspelt flag is an error, not silently ignored


def test_a_flag_whose_library_is_missing_fails_at_construction(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "igraph", None)  # import igraph now raises ImportError
    with pytest.raises(DependencyMissingError, match=r"agentcontext\[analytics\]") as err:
        ContextGraph()
    assert err.value.data["flag"] == "advanced_analytics"
    g = ContextGraph(advanced_analytics=False, centrality_analysis=False, community_detection=False)
    g.add_edge("a", "b")
    assert g.shortest_path("a", "b") == ["a", "b"]


def test_agent_context_flags_reach_the_graph_it_builds(tmp_path) -> None:
    from agentcontext import AgentContext, VectorStore

    path = tmp_path / "g.json"
    src = ContextGraph()
    src.add_edges([{"source": "a", "target": "b"}, {"source": "b", "target": "c"}])
    src.save_to_file(str(path))
    vs = VectorStore(backend="inmemory")
    ctx = AgentContext(vector_store=vs, kg_algorithms=False, advanced_analytics=False)
    ctx.load_graph(str(path))
    graph = ctx.knowledge_graph
    assert (graph.kg_algorithms, graph.advanced_analytics, graph.node_embeddings) == (False, False, True)
    with pytest.raises(ValidationError, match="kg_algorithms"):
        graph.predict_links("a")
    with pytest.raises(ValidationError, match="advanced_analytics"):
        graph.pagerank()
    on = AgentContext(vector_store=VectorStore(backend="inmemory"))
    on.load_graph(str(path))
    assert on.knowledge_graph.predict_links("a", method="jaccard")[0]["target"] == "c"
    given = ContextGraph(kg_algorithms=False)
    assert AgentContext(vector_store=vs, knowledge_graph=given).kg_algorithms is False
    with pytest.raises(ValidationError, match="disagrees"):
        AgentContext(vector_store=vs, knowledge_graph=given, kg_algorithms=True)
    with pytest.raises(TypeError):
        AgentContext(vector_store=vs, kg_algoritms=True)


@pytest.mark.parametrize("build", [
    lambda: __import__("agentcontext").VectorStore(backend="inmemory", dimention=384),
    lambda: __import__("agentcontext").ContextRetriever(use_graph_expanson=False),
    lambda: __import__("agentcontext").EntityLinker(similarity_treshold=0.9),
    lambda: ContextGraph().build_from_conversations([], link_entitites=False),
])
def test_no_constructor_accepts_and_ignores_an_option(build) -> None:
    with pytest.raises(TypeError):  # each took **options and dropped them; a misspelt option is an error now
        build()
