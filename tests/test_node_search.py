"""graph/node_search.py on the embedded store: a node the query names (or whose words it holds) beyond the dense
pool is scored by its stored vector here, not by ``Store.similarities`` (an optional capability SQLite lacks)."""
from __future__ import annotations

from agentcontext import ContextGraph


def test_a_named_node_beyond_the_dense_pool_is_found_on_sqlite():
    graph = ContextGraph()
    graph.add_nodes([{"node_id": f"topic-{i}", "node_type": "concept",
                      "content": f"Quarterly capacity planning for storage cluster number {i}"} for i in range(80)])
    graph.add_node("Zanzibar", "place", content="An island")
    hits = graph.search_nodes("storage capacity planning near Zanzibar", limit=5)
    assert "Zanzibar" in [h["id"] for h in graph.search_nodes("Zanzibar storage capacity planning", limit=90)]
    assert len(hits) == 5 and all(0.0 <= h["score"] <= 1.0 for h in hits)
