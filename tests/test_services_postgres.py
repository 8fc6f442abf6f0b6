"""Services on PostgreSQL ask the server (``SERVER_QUERIES``, ``VECTOR_SEARCH``) and answer as on SQLite: graph
walks and paths by frontier queries, precedents and vector search ranked in the server. Every test builds the same
data in both backends and forbids the bulk reads that would mirror the server in this process."""
from __future__ import annotations

import random

import numpy as np
import pytest

from agentcontext.decisions.causal import CausalChainAnalyzer
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.store import open_store
from agentcontext.vector_store import VectorStore
from agentcontext.workspace import Workspace

pytestmark = pytest.mark.postgres
BULK = ("adjacency", "edge_columns", "node_ids", "load_vectors", "node_index")


def forbid_bulk_reads(monkeypatch, store) -> None:
    def refuse(name):
        def fail(*args, **kwargs):
            raise AssertionError(f"{name}() mirrors the server in this process")
        return fail

    for name in BULK:
        monkeypatch.setattr(store, name, refuse(name))


@pytest.fixture
def workspaces(pg_url, tmp_path):
    lite = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    pg = Workspace(open_store(pg_url), embedder=lite.embedder)
    yield lite, pg
    lite.close()
    pg.close()


def random_graph(graph: ContextGraph, seed: int = 5, n: int = 80) -> None:
    rng = random.Random(seed)
    graph.add_nodes([{"node_id": f"v{i}", "node_type": "entity", "content": f"node {i}"} for i in range(n)])
    edges = []
    for i in range(n * 3):
        a, b = rng.randrange(n), rng.randrange(n)
        if a == b:
            continue
        edge = {"source_id": f"v{a}", "target_id": f"v{b}", "edge_type": rng.choice(["knows", "uses", "part_of"]),
                "weight": round(rng.uniform(0.1, 1.0), 2)}
        if i % 17 == 0:
            edge["valid_until"] = "2001-01-01T00:00:00+00:00"  # expired: never walked
        edges.append(edge)
    graph.add_edges(edges)


def test_walks_and_paths_ask_the_server_frontier_by_frontier(workspaces, monkeypatch):
    lite_ws, pg_ws = workspaces
    lite, pg = ContextGraph(workspace=lite_ws, name="g"), ContextGraph(workspace=pg_ws, name="g")
    random_graph(lite)
    random_graph(pg)
    forbid_bulk_reads(monkeypatch, pg_ws.store)
    rng = random.Random(9)
    for _ in range(12):
        node = f"v{rng.randrange(80)}"
        for kwargs in ({"hops": 1}, {"hops": 3, "direction": "both"}, {"hops": 2, "direction": "in"},
                       {"hops": 3, "relationship_types": ["knows", "uses"], "min_weight": 0.4},
                       {"hops": 2, "include_distance_metadata": True}):
            assert pg.get_neighbors(node, **kwargs) == lite.get_neighbors(node, **kwargs), (node, kwargs)
        assert pg.hop_distances(node) == lite.hop_distances(node)
        other = f"v{rng.randrange(80)}"
        for kwargs in ({}, {"direction": "both"}, {"max_hops": 2}):
            assert pg.shortest_path(node, other, **kwargs) == lite.shortest_path(node, other, **kwargs)
    pg.add_edges([{"source_id": "v1", "target_id": "new", "edge_type": "knows"}])  # endpoints resolved point-wise
    assert pg.find_node("new") is not None and pg.shortest_path("v1", "new") == ["v1", "new"]


def decisions(recorder: DecisionRecorder) -> list[str]:
    rows = [("ops", "Rotate database credentials every quarter", "compliance asks for it"),
            ("ops", "Rotate API keys for the payment provider", "a key leaked in a log"),
            ("pricing", "Offer a discount to churning enterprise customers", "retention beats acquisition"),
            ("pricing", "Raise prices for the starter plan", "costs went up"),
            ("hiring", "Hire a second on-call engineer", "pager load is too high"),
            ("ops", "Move backups to another region", "a regional outage lost a day of data")]
    ids = [recorder.record_decision(category=c, scenario=s, reasoning=r, outcome="done", confidence=0.8)
           for c, s, r in rows]
    recorder.graph.add_edge(ids[1], ids[0], edge_type="informed")
    recorder.graph.add_edge(ids[5], ids[1], edge_type="caused")
    return ids


def test_precedents_are_ranked_in_the_server(workspaces, monkeypatch):
    lite_ws, pg_ws = workspaces
    lite = DecisionRecorder(ContextGraph(workspace=lite_ws, name="d"))
    pg = DecisionRecorder(ContextGraph(workspace=pg_ws, name="d"))
    ids = decisions(lite)
    assert decisions(pg) != ids  # new ids: compare by position
    forbid_bulk_reads(monkeypatch, pg_ws.store)

    def ranked(rec, found, mine):  # (position of the decision, score); ties at 0 are ordered by the random ids
        return [(mine.index(d.decision_id) if d.metadata["combined_score"] > 0 else None,
                 round(d.metadata["combined_score"], 4)) for d in found]

    pg_ids = [n.id for n in pg_ws.store.find_nodes(kind="decision", order="recorded")]
    lite_ids = [n.id for n in lite_ws.store.find_nodes(kind="decision", order="recorded")]
    for query, kwargs in [("rotate the credentials", {}), ("customer discount", {"category": "pricing"}),
                          ("on call", {"category": "none-such"}), ("backups", {"limit": 2})]:
        a = ranked(lite, lite.find_precedents(query, **kwargs), lite_ids)
        b = ranked(pg, pg.find_precedents(query, **kwargs), pg_ids)
        assert a == b, (query, kwargs)
    chain = CausalChainAnalyzer(graph=pg.graph)
    assert [d.decision_id for d in chain.get_causal_chain(pg_ids[0], "upstream")] == [pg_ids[1], pg_ids[5]]


def test_vector_store_searches_and_counts_in_the_server(workspaces, monkeypatch):
    lite_ws, pg_ws = workspaces
    lite, pg = VectorStore(workspace=lite_ws), VectorStore(workspace=pg_ws)
    for ws in (lite_ws, pg_ws):
        from agentcontext.memory import AgentMemory

        AgentMemory(workspace=ws).batch_store([f"fact number {i} about {w}" for i, w in
                                               enumerate(["cats", "dogs", "trains", "rivers", "jazz", "tea"])])
    forbid_bulk_reads(monkeypatch, pg_ws.store)
    assert pg.count() == lite.count() == 6
    for query in ("music", "animals", np.asarray(lite_ws.embed_query("boats"))):
        a = [(r["content"], round(r["score"], 4)) for r in lite.search(query, limit=3)]
        b = [(r["content"], round(r["score"], 4)) for r in pg.search(query, limit=3)]
        assert a == b
