"""ContextGraph: every method of seed 003's reference, with shapes and values."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agentcontext import ContextGraph, NotFoundError, ValidationError, Workspace
from agentcontext.model import Node


def iso(days: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).isoformat()


@pytest.fixture
def graph() -> ContextGraph:
    g = ContextGraph(advanced_analytics=True)
    g.add_node("Python", "language", properties={"paradigm": "multi-paradigm"})
    g.add_node("FastAPI", "framework", properties={"language": "Python"})
    g.add_edge("Python", "FastAPI", "enables")
    return g


def test_seed_quickstart(graph: ContextGraph) -> None:
    decision_id = graph.record_decision(
        category="technology_choice",
        scenario="Web API framework selection",
        reasoning="FastAPI's async support and auto-docs match our requirements",
        outcome="selected_fastapi",
        confidence=0.92,
        entities=["Python", "FastAPI"],
    )
    similar = graph.find_precedents_by_scenario("web framework", limit=3)
    stats = graph.stats()
    assert isinstance(decision_id, str) and decision_id
    assert [s["decision_id"] for s in similar] == [decision_id]
    assert stats["node_count"] == 3 and stats["node_types"]["decision"] == 1
    # the decision's entity edges point at the existing nodes, not at new copies
    assert stats["node_types"] == {"language": 1, "framework": 1, "decision": 1}
    assert stats["edge_count"] == 3


def test_in_memory_graph_keeps_nothing_on_disk() -> None:
    g = ContextGraph()
    assert g.store.url.endswith(":memory:")
    assert g.workspace.store is g.store


def test_add_node_find_node_shape_and_update_versions(graph: ContextGraph) -> None:
    found = graph.find_node("Python")
    assert found is not None
    assert found["id"] == "Python" and found["type"] == "language" and found["content"] == "Python"
    assert found["properties"] == {"paradigm": "multi-paradigm"} == found["metadata"]
    assert found["version"] == 1 and found["valid_from"] is None
    assert graph.find_node("Rust") is None
    graph.add_node("Python", "language", properties={"paradigm": "multi-paradigm"})  # unchanged: same version
    assert graph.find_node("Python")["version"] == 1
    graph.add_node("Python", "language", content="A language", properties={"typing": "dynamic"})
    assert graph.find_node("Python")["version"] == 2
    assert graph.find_node("Python")["properties"] == {"typing": "dynamic"}
    assert [v["version"] for v in graph.node_history("Python")] == [1, 2]


def test_add_edge_repeat_updates_instead_of_duplicating(graph: ContextGraph) -> None:
    graph.add_edge("Python", "FastAPI", "enables", weight=0.4)
    edges = graph.find_edges("enables")
    assert len(edges) == 1 and edges[0]["weight"] == 0.4
    assert edges[0]["source"] == "Python" and edges[0]["target"] == "FastAPI" and edges[0]["type"] == "enables"
    graph.add_edge("Python", "FastAPI", "inspires")  # another type is another edge
    assert graph.stats()["edge_count"] == 2


def test_add_edge_creates_missing_endpoints(graph: ContextGraph) -> None:
    graph.add_edge("FastAPI", "Starlette", "built_on", weight=0.8)
    assert graph.find_node("Starlette")["type"] == "entity"


def test_bulk_add_nodes_and_edges_accept_both_key_forms() -> None:
    g = ContextGraph()
    n = g.add_nodes([{"node_id": "a", "node_type": "t"}, {"id": "b", "type": "t", "properties": {"x": 1}},
                     {"id": "c", "type": "u", "valid_from": "2020-01-01T00:00:00Z"}])
    e = g.add_edges([{"source_id": "a", "target_id": "b", "edge_type": "r"},
                     {"source": "b", "target": "c", "type": "r", "weight": 0.5},
                     {"source": "b", "target": "c", "type": "r", "weight": 0.6}])  # same edge twice: last wins
    assert (n, e) == (3, 2)
    assert g.find_node("b")["properties"] == {"x": 1}
    assert g.find_edges(source_id="b")[0]["weight"] == 0.6
    with pytest.raises(ValidationError):
        g.add_nodes([{"type": "t"}])
    with pytest.raises(ValidationError):
        g.add_edges([{"source": "a"}])
    with pytest.raises(ValidationError):
        g.add_edges([{"source": "a", "target": "b", "weight": "heavy"}])


def test_find_nodes_and_find_edges_paginate_in_stable_order() -> None:
    g = ContextGraph()
    g.add_nodes([{"id": f"n{i:02d}", "type": "even" if i % 2 == 0 else "odd"} for i in range(20)])
    g.add_edges([{"source": f"n{i:02d}", "target": f"n{i + 1:02d}", "type": "next"} for i in range(19)])
    evens = g.find_nodes("even")
    assert [n["id"] for n in evens] == [f"n{i:02d}" for i in range(0, 20, 2)]
    assert [n["id"] for n in g.find_nodes("even", skip=2, limit=3)] == ["n04", "n06", "n08"]
    assert len(g.find_nodes()) == 20
    page = g.find_edges("next", skip=5, limit=4)
    assert len(page) == 4 and all(e["type"] == "next" for e in page)
    assert len(g.find_edges("next")) == 19 and g.find_edges("missing") == []


def test_deep_pages_agree_with_the_full_listing() -> None:
    g = ContextGraph()
    g.add_nodes([{"id": f"n{i:05d}", "type": "a" if i % 3 else "b"} for i in range(3000)])
    everything = [n["id"] for n in g.find_nodes("a")]
    assert len(everything) == 2000
    for skip in (0, 999, 1000, 1500, 1990):
        assert [n["id"] for n in g.find_nodes("a", skip=skip, limit=25)] == everything[skip: skip + 25]
    g.add_node("n00000x", "a")  # the cached order follows changes
    assert g.find_nodes("a", skip=1000, limit=1)[0]["id"] == [n["id"] for n in g.find_nodes("a")][1000]


def test_find_active_nodes_uses_validity_windows() -> None:
    g = ContextGraph()
    g.add_node("old", "policy", valid_from="2020-01-01T00:00:00Z", valid_until="2021-01-01T00:00:00Z")
    g.add_node("current", "policy", valid_from="2021-01-01T00:00:00Z")
    g.add_node("always", "policy")
    g.add_node("other", "rule")
    now = {n["id"] for n in g.find_active_nodes("policy")}
    then = {n["id"] for n in g.find_active_nodes("policy", at_time=datetime(2020, 6, 1, tzinfo=timezone.utc))}
    assert now == {"current", "always"}
    assert then == {"old", "always"}
    with pytest.raises(ValidationError):
        g.add_node("bad", "policy", valid_from="2022-01-01T00:00:00Z", valid_until="2021-01-01T00:00:00Z")


def test_query_is_ranked_full_text_search() -> None:
    g = ContextGraph()
    g.add_node("k8s", "tool", content="Kubernetes orchestrates containers across a cluster")
    g.add_node("docker", "tool", content="Docker builds container images")
    g.add_node("pg", "db", content="PostgreSQL is a relational database")
    hits = g.query("container orchestration cluster")
    assert [h["id"] for h in hits][:2] == ["k8s", "docker"]
    assert hits[0]["score"] > hits[1]["score"] > 0
    assert set(hits[0]) >= {"id", "node", "score", "content"} and hits[0]["node"]["type"] == "tool"
    assert g.query("container", skip=1, limit=1)[0]["id"] in {"k8s", "docker"}
    assert g.query("zebra") == []


def test_stats_and_density() -> None:
    g = ContextGraph()
    assert g.density() == 0.0 and g.stats()["node_count"] == 0
    g.add_edges([{"source": "a", "target": "b", "type": "x"}, {"source": "b", "target": "c", "type": "y"},
                 {"source": "c", "target": "a", "type": "y"}])
    s = g.stats()
    assert s == {"node_count": 3, "edge_count": 3, "node_types": {"entity": 3}, "edge_types": {"x": 1, "y": 2},
                 "density": 0.5}
    assert g.density() == 0.5


def test_clear_resets_everything(graph: ContextGraph) -> None:
    graph.clear()
    assert graph.stats()["node_count"] == 0 and graph.find_node("Python") is None and graph.tombstones() == []
    graph.add_node("again", "x")
    assert graph.stats()["node_count"] == 1


def test_clear_on_a_workspace_graph_purges_only_its_namespace(tmp_path) -> None:
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    ws.store.put_nodes([Node(id="mem_1", kind="memory", namespace="memory", content="kept")])
    g = ContextGraph(workspace=ws, name="kg")
    g.add_node("a", "x")
    g.clear()
    assert g.stats()["node_count"] == 0
    assert ws.store.get_node("mem_1").content == "kept"
    ws.close()


def chain_graph() -> ContextGraph:
    g = ContextGraph()
    g.add_edges([
        {"source": "python", "target": "fastapi", "type": "enables", "weight": 0.9},
        {"source": "fastapi", "target": "starlette", "type": "built_on", "weight": 0.8},
        {"source": "starlette", "target": "asgi", "type": "implements", "weight": 0.5},
        {"source": "asgi", "target": "uvicorn", "type": "served_by", "weight": 0.9},
        {"source": "uvicorn", "target": "uvloop", "type": "uses", "weight": 0.9},
        {"source": "python", "target": "typing", "type": "has", "weight": 0.2},
    ])
    return g


def test_get_neighbors_basic_shape_and_filters() -> None:
    g = chain_graph()
    one = g.get_neighbors("python", hops=1)
    assert [(n["id"], n["relationship"], n["weight"], n["hop"]) for n in one] == [
        ("fastapi", "enables", 0.9, 1), ("typing", "has", 0.2, 1)]
    assert set(one[0]) >= {"id", "node_id", "type", "content", "properties", "relationship", "weight", "hop"}
    assert "distance_band" not in one[0]
    assert [n["id"] for n in g.get_neighbors("python", hops=2)] == ["fastapi", "typing", "starlette"]
    assert [n["id"] for n in g.get_neighbors("python", hops=3, min_weight=0.3)] == ["fastapi", "starlette", "asgi"]
    assert [n["id"] for n in g.get_neighbors("python", hops=5, relationship_types=["enables", "built_on"])] == [
        "fastapi", "starlette"]
    assert [n["id"] for n in g.get_neighbors("starlette", hops=1, direction="in")] == ["fastapi"]
    assert [n["id"] for n in g.get_neighbors("python", hops=2, skip=1, limit=1)] == ["typing"]
    assert g.get_neighbors("python", hops=0) == []
    with pytest.raises(NotFoundError):
        g.get_neighbors("nowhere", hops=1)


def test_seed_distance_metadata_example() -> None:
    graph = chain_graph()
    neighbors = graph.get_neighbors("python", hops=3, include_distance_metadata=True, min_weight=0.3)
    lines = [f"{n['node_id']:15s}  band={n['distance_band']:10s}  decay={n['confidence_decay']:.3f}  "
             f"hops={n['hop_count']}" for n in neighbors]
    assert len(lines) == 3
    by_id = {n["node_id"]: n for n in neighbors}
    assert by_id["fastapi"]["distance_band"] == "direct" and by_id["starlette"]["distance_band"] == "near"
    assert by_id["asgi"]["distance_band"] == "mid-range"
    assert by_id["asgi"]["hop_count"] == 3
    assert by_id["asgi"]["path_to_anchor"] == ["python", "fastapi", "starlette", "asgi"]
    # decay multiplies the weights along the path: with equal weights it is weight ** hop_count
    assert by_id["asgi"]["confidence_decay"] == pytest.approx(0.9 * 0.8 * 0.5)
    far = graph.get_neighbors("python", hops=5, include_distance_metadata=True)
    assert {n["node_id"]: n["distance_band"] for n in far}["uvloop"] == "distant"


def test_confidence_decay_is_weight_power_hops_on_uniform_weights() -> None:
    g = ContextGraph()
    g.add_edges([{"source": f"n{i}", "target": f"n{i + 1}", "type": "r", "weight": 0.7} for i in range(6)])
    for n in g.get_neighbors("n0", hops=6, include_distance_metadata=True):
        assert n["confidence_decay"] == pytest.approx(0.7 ** n["hop_count"])


def test_get_neighbor_distances_orders_by_hop_then_decay() -> None:
    g = ContextGraph()
    g.add_edges([{"source": "a", "target": "b", "type": "r", "weight": 0.3},
                 {"source": "a", "target": "c", "type": "r", "weight": 0.9},
                 {"source": "b", "target": "d", "type": "r", "weight": 1.0},
                 {"source": "c", "target": "e", "type": "r", "weight": 0.1}])
    got = g.get_neighbor_distances("a", hops=2)
    assert [n["node_id"] for n in got] == ["c", "b", "d", "e"]
    assert [round(n["confidence_decay"], 3) for n in got] == [0.9, 0.3, 0.3, 0.09]
    assert [n["node_id"] for n in g.get_neighbor_distances("a", hops=2, min_confidence=0.25)] == ["c", "b", "d"]


def test_traversal_skips_retracted_and_expired_edges_unless_as_of() -> None:
    g = ContextGraph()
    g.add_edge("a", "b", "r")
    g.add_edge("a", "c", "r", valid_until=iso(-1))  # expired yesterday
    g.add_edge("a", "d", "r", valid_from=iso(1))  # valid from tomorrow
    g.add_edge("a", "e", "r", valid_from=iso(-2), valid_until=iso(2))
    before_retraction = datetime.now(timezone.utc)
    g.retract_edge("a", "b", "r")
    assert [n["id"] for n in g.get_neighbors("a")] == ["e"]
    then = [n["id"] for n in g.get_neighbors("a", as_of=before_retraction)]
    assert then == ["b", "e"]
    with pytest.raises(NotFoundError):  # the graph as it stood before "a" was recorded
        g.get_neighbors("a", as_of=iso(-1.5))
    assert g.shortest_path("a", "b") is None and g.shortest_path("a", "e") == ["a", "e"]


def test_retract_node_keeps_history_and_purge_leaves_tombstone() -> None:
    g = ContextGraph()
    g.add_edge("a", "b", "r")
    g.add_edge("b", "c", "r")
    before = datetime.now(timezone.utc)
    assert g.retract_node("b") == 1
    assert g.find_node("b") is None and g.get_neighbors("a") == []
    assert g.find_node("b", as_of=before)["id"] == "b"
    assert [n["id"] for n in g.get_neighbors("a", hops=2, as_of=before)] == ["b", "c"]
    assert [v["retracted_at"] is not None for v in g.node_history("b")] == [False, True]
    out = g.purge_node("c", reason="GDPR request")
    assert out["nodes"] == 1 and out["edges"] == 1 and out["tombstone"]["reason"] == "GDPR request"
    assert g.find_node("c", as_of=before) is None and g.node_history("c") == []
    assert [t["node_id"] for t in g.tombstones()] == ["c"]
    again = g.purge_node("c")
    assert again["nodes"] == 0 and again["tombstone"]["id"] == g.store_id("c")


def test_shortest_path_and_hop_distances() -> None:
    g = chain_graph()
    assert g.shortest_path("python", "uvloop") == ["python", "fastapi", "starlette", "asgi", "uvicorn", "uvloop"]
    assert g.shortest_path("python", "uvloop", max_hops=3) is None
    assert g.shortest_path("uvloop", "python") is None
    assert g.shortest_path("uvloop", "python", direction="both")[0] == "uvloop"
    assert g.hop_distances("python", max_hops=2) == {"python": 0, "fastapi": 1, "typing": 1, "starlette": 2}


def test_analytics_pagerank_centrality_communities_cached_until_change() -> None:
    g = ContextGraph()
    left = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")]
    right = [("x", "y"), ("y", "z"), ("z", "x"), ("x", "z")]
    g.add_edges([{"source": s, "target": t, "type": "r"} for s, t in left + right + [("c", "x")]])
    pr = g.pagerank()
    assert sum(pr.values()) == pytest.approx(1.0) and len(pr) == 6
    assert list(pr.values()) == sorted(pr.values(), reverse=True)
    assert g.pagerank(top_k=2) == dict(list(pr.items())[:2])
    deg = g.centrality("degree")
    assert deg["c"] == pytest.approx(4 / 5) and deg["x"] == pytest.approx(4 / 5)
    btw = g.centrality("betweenness")
    assert max(btw, key=btw.get) in {"c", "x"}
    comm = g.detect_communities()
    assert comm["count"] == 2 and sorted(map(sorted, comm["communities"])) == [["a", "b", "c"], ["x", "y", "z"]]
    assert comm["membership"]["a"] == comm["membership"]["b"] != comm["membership"]["y"]
    assert comm["modularity"] > 0.3
    assert g.detect_communities("leiden")["count"] == 2
    assert set(g.get_node_centrality("c")) == {"degree", "in_degree", "out_degree", "pagerank", "betweenness",
                                               "closeness"}
    assert g.pagerank() is not pr and g.pagerank() == pr  # cached values, fresh dicts
    g.add_edge("b", "y", "r")
    assert g.centrality("degree")["b"] == pytest.approx(3 / 5)  # recomputed after the change
    with pytest.raises(ValidationError):
        g.centrality("eigen-something")


def test_analytics_flags_are_honoured() -> None:
    g = ContextGraph(advanced_analytics=False, community_detection=False)
    g.add_edge("a", "b", "r")
    with pytest.raises(ValidationError):
        g.pagerank()
    with pytest.raises(ValidationError):
        g.detect_communities()


def test_workspace_graph_sees_memories_and_docs_as_nodes(tmp_path) -> None:
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    ws.store.put_nodes([Node(id="mem_1", kind="memory", namespace="memory", content="Alice joined Acme")])
    g = ContextGraph(workspace=ws)
    g.add_node("Acme", "company")
    g.add_edge("mem_1", "Acme", "mentions")  # an existing store id is used as is, not copied
    assert g.find_node("mem_1")["type"] == "memory"
    assert [n["id"] for n in g.get_neighbors("Acme", direction="in")] == ["mem_1"]
    assert g.stats()["node_types"] == {"memory": 1, "company": 1}
    named = ContextGraph(workspace=ws, name="other")  # a named graph sees only its own namespace
    assert named.stats()["node_count"] == 0
    ws.close()


def test_build_from_conversations_links_entities() -> None:
    g = ContextGraph()
    out = g.build_from_conversations([
        {"id": "c1", "messages": [{"role": "user", "content": "Apple Inc. hired Alice"},
                                  {"role": "agent", "content": "Noted: Alice works at Apple"}],
         "entities": [{"id": "e1", "text": "Apple Inc.", "type": "ORG"},
                      {"id": "e2", "text": "Alice", "type": "PERSON"}],
         "relationships": [{"source": "e2", "target": "e1", "type": "works_at"}]},
        {"id": "c2", "messages": [{"role": "user", "content": "Apple shipped a phone"}],
         "entities": [{"id": "e3", "text": "Apple", "type": "ORG"}]},
    ])
    assert out["conversations"] == ["c1", "c2"] and out["messages"] == 3
    assert out["entities"]["e3"] == out["entities"]["e1"] == "e1" and out["entities_merged"] == 1
    assert out["relationships"] == 1
    assert out["nodes_added"] == 2 + 3 + 2 and out["node_count"] == 7
    assert [n["id"] for n in g.get_neighbors("e1", direction="in", relationship_types=["mentions"])][:2] == [
        "c1", "c1#m0"]
    assert g.find_edges("works_at")[0]["source"] == "e2"
    assert [n["id"] for n in g.get_neighbors("c1#m0", relationship_types=["next"])] == ["c1#m1"]
    plain = ContextGraph().build_from_conversations([{"id": "c", "content": "x", "entities": ["Apple", "Apple Inc."]}],
                                                    link_entities=False)
    assert plain["entities_merged"] == 0 and plain["node_count"] == 3


def test_concurrent_writers_and_readers(tmp_path) -> None:
    import threading

    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    g = ContextGraph(workspace=ws, name="threads")
    g.add_node("hub", "x")
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(40):
                g.add_edge("hub", f"w{k}-{i}", "r")
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                ids = [n["id"] for n in g.get_neighbors("hub")]
                assert len(ids) == len(set(ids))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)] + [
        threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(g.get_neighbors("hub")) == 120
    ws.close()
