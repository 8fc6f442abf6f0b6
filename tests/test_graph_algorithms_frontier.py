"""Link prediction and k-shortest paths by frontier queries (what PostgreSQL runs: no adjacency in the process),
against networkx as the oracle on random graphs, on SQLite (the engine functions over the store) and on the real
PostgreSQL server (through ContextGraph, with every bulk read forbidden), and equal to the CSR answers."""
from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcontext.engine import linkpred, paths
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.model import utcnow
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

from .test_graph_algorithms import ORACLE, SETTINGS, build, expected_scores, graphs
from .test_services_postgres import forbid_bulk_reads, random_graph

LOCAL = sorted(set(ORACLE) - {"preferential_attachment"})  # the indexes a two-hop neighbourhood decides
SID = "graph:default/"


def strip(sid: str) -> str:
    return sid[len(SID):]


@SETTINGS
@given(graphs, st.sampled_from(LOCAL))
def test_predict_near_reads_two_hops_of_the_store_and_matches_networkx(data, method) -> None:
    n, edges = data
    g, ref = build(n, edges)
    und = ref.to_undirected()
    for source in ("v0", f"v{n - 1}"):
        got = linkpred.predict_near(g.store, None, SID + source, method, n * n, None, utcnow())
        assert {(source, strip(v)): s for v, s in got} == pytest.approx(expected_scores(und, method, source))
        assert [{"source": source, "target": strip(v), "score": s, "method": method} for v, s in got] == \
            g.predict_links(source, top_k=n * n, method=method)  # the CSR's answer, order and bits
        assert linkpred.predict_near(g.store, None, SID + source, method, 2, None, utcnow()) == got[:2]


@SETTINGS
@given(graphs, st.integers(min_value=1, max_value=6), st.booleans())
def test_store_neighbours_give_yen_the_paths_networkx_finds(data, k, weighted) -> None:
    n, edges = data
    g, ref = build(n, edges)
    weight = "weight" if weighted else None
    for direction, view in (("out", ref), ("both", ref.to_undirected())):
        if weighted and direction == "both":
            continue  # a pair joined both ways has two weights; networkx keeps one of them
        for target in (f"v{n - 1}", f"v{n // 2}"):
            nbrs = paths.StoreNeighbours(g.store, None, direction, None, utcnow())
            got = paths.k_shortest(nbrs, SID + "v0", SID + target, k, weighted, None, nbrs.prefetch)
            rows = [{"path": [strip(x) for x in p], "length": float(c), "hops": len(p) - 1} for p, c in got]
            if target != "v0":
                assert rows == g.k_shortest_paths("v0", target, k=k, weighted=weighted, direction=direction)
            if target == "v0" or not nx.has_path(view, "v0", target):
                continue
            want = []
            for path in nx.shortest_simple_paths(view, "v0", target, weight=weight):
                want.append(nx.path_weight(view, path, "weight") if weighted else len(path) - 1)
                if len(want) == k:
                    break
            assert [r["length"] for r in rows] == pytest.approx(want)


def test_store_neighbours_ask_one_query_per_bfs_level() -> None:
    g = ContextGraph()
    g.add_edges([{"source": f"a{i}", "target": f"a{i + 1}"} for i in range(30)]
                + [{"source": "a0", "target": f"b{i}"} for i in range(40)])
    nbrs = paths.StoreNeighbours(g.store, None, "out", None, utcnow())
    found = paths.k_shortest(nbrs, SID + "a0", SID + "a30", 1, False, None, nbrs.prefetch)
    assert len(found[0][0]) == 31
    assert nbrs.queries <= 31  # one per level (41 nodes reached at the first two levels), never one per node
    assert len(nbrs.memo) > nbrs.queries


@pytest.mark.postgres
def test_on_postgres_predictions_and_paths_come_from_frontier_queries(pg_url, tmp_path, monkeypatch) -> None:
    lite_ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    pg_ws = Workspace(open_store(pg_url), embedder=lite_ws.embedder)
    try:
        lite, pg = ContextGraph(workspace=lite_ws, name="g"), ContextGraph(workspace=pg_ws, name="g")
        random_graph(lite, seed=11, n=60)
        random_graph(pg, seed=11, n=60)
        pg.add_nodes([{"node_id": "lonely", "node_type": "entity"}])
        lite.add_nodes([{"node_id": "lonely", "node_type": "entity"}])
        ref = nx.Graph()
        now = utcnow()
        for e in lite.find_edges(limit=None):
            if e["source"] != e["target"] and not (e.get("valid_until") and e["valid_until"] <= now):
                ref.add_edge(e["source"], e["target"])
        forbid_bulk_reads(monkeypatch, pg_ws.store)
        rng = random.Random(3)
        for _ in range(6):
            node = f"v{rng.randrange(60)}"
            for method in LOCAL:
                got = pg.predict_links(node, top_k=500, method=method)
                assert got == lite.predict_links(node, top_k=500, method=method), (node, method)
                if node in ref:
                    want = expected_scores(ref, method, node)
                    assert {(r["source"], r["target"]): r["score"] for r in got} == pytest.approx(want)
            typed = dict(top_k=5, method="jaccard", relationship_types=["knows", "uses"], node_type="entity")
            assert pg.predict_links(node, **typed) == lite.predict_links(node, **typed)
            other = f"v{rng.randrange(60)}"
            for kwargs in ({"k": 4}, {"k": 3, "weighted": True}, {"k": 4, "direction": "both"},
                           {"k": 3, "max_hops": 3, "direction": "in"}, {"k": 2, "relationship_types": ["knows"]}):
                assert pg.k_shortest_paths(node, other, **kwargs) == lite.k_shortest_paths(node, other, **kwargs), \
                    (node, other, kwargs)
        assert pg.predict_links("lonely") == [] and pg.k_shortest_paths("lonely", "v1") == []
        with pytest.raises(AssertionError, match="mirrors the server"):
            pg.predict_links(top_k=3)  # over the whole graph: the adjacency is loaded, as documented
    finally:
        lite_ws.close()
        pg_ws.close()
