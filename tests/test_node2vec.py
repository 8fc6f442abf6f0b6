"""node_embeddings=True: Node2Vec structural embeddings (engine/node2vec.py), cached by the change counter, in
decisions (Decision.node2vec_embedding, find_precedents(structural=...)); off, they are refused."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from agentcontext import AgentContext, ContextGraph, ValidationError, VectorStore
from agentcontext.engine.node2vec import Node2VecParams, node2vec


def cliques_graph(**flags) -> ContextGraph:
    g = ContextGraph(**flags)
    g.add_edges([{"source": str(a), "target": str(b)} for a, b in nx.ring_of_cliques(4, 6).edges()])
    return g


def test_communities_are_closer_than_strangers_and_results_are_cached() -> None:
    g = cliques_graph()
    vecs = g.node2vec()
    ids = sorted(vecs, key=int)
    m = np.array([vecs[i] for i in ids])
    label = np.array([int(i) // 6 for i in ids])
    sims = m @ m.T
    same = (label[:, None] == label[None, :]) & ~np.eye(len(ids), dtype=bool)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert sims[same].mean() > sims[~same & ~np.eye(len(ids), dtype=bool)].mean() + 0.3
    top = [r["id"] for r in g.structurally_similar("0", top_k=5)]
    assert all(int(i) // 6 == 0 for i in top)  # node 0's nearest are its clique
    assert g.node2vec() == vecs  # the same seed and graph: the cached vectors
    assert g.node2vec(["1", "nope"]) == {"1": vecs["1"]}
    g.add_edge("0", "new")
    again = g.node2vec()
    assert "new" in again and again["1"] != vecs["1"]  # the change counter moved: computed again
    with pytest.raises(ValidationError, match="dimensions"):
        g.node2vec(dimensions=0)
    with pytest.raises(ValidationError):
        g.node2vec(walk_lenght=3)


def test_p_and_q_bias_the_walks_and_isolated_nodes_get_zeros() -> None:
    neighbours = [np.array([1]), np.array([0, 2]), np.array([1]), np.array([], dtype=np.int64)]
    params = Node2VecParams(dimensions=8, num_walks=2, walk_length=6, p=0.25, q=4.0)
    out = node2vec(neighbours, params)
    assert out.shape == (4, 8) and not out[3].any()
    assert np.array_equal(out, node2vec(neighbours, params))  # deterministic for a seed


def test_off_means_refused_everywhere() -> None:
    g = cliques_graph(node_embeddings=False)
    with pytest.raises(ValidationError, match="node_embeddings"):
        g.node2vec()
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=g, decision_tracking=True)
    ctx.record_decision("support", "Refund after 40 days", "policy", "denied", 0.9, entities=["acme"])
    with pytest.raises(ValidationError, match="node_embeddings=True"):
        ctx.find_precedents("Refund after 40 days", structural="node2vec")
    with pytest.raises(ValidationError, match="structural must be"):
        ctx.find_precedents("Refund after 40 days", structural="graph")


def test_decisions_carry_node2vec_vectors_and_precedents_use_them() -> None:
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph(),
                       decision_tracking=True)
    items = []
    for group in range(3):
        pool = [f"g{group}_e{k}" for k in range(4)]
        for k in range(6):
            items.append({"category": "support", "scenario": "Customer asks for a refund", "reasoning": "policy",
                          "outcome": "denied", "confidence": 0.8, "entities": [pool[k % 4], pool[(k + 1) % 4]]})
    ids = ctx.record_decisions(items)
    d = ctx.get_decision(ids[0], with_embedding=True)
    assert d.node2vec_embedding is not None and len(d.node2vec_embedding) == Node2VecParams().dimensions
    query = dict(entities=["g0_e0", "g0_e1"], proximity_weight=0.6, limit=17, exclude=[ids[0]])
    by_links = ctx.find_precedents("Customer asks for a refund", **query)
    by_walks = ctx.find_precedents("Customer asks for a refund", structural="node2vec", **query)
    group0 = set(ids[1:6])
    # a group-0 decision that shares no entity with the query scores 0 by links but > 0 by node2vec
    apart = [x for x in by_walks if x.decision_id in group0 and not x.metadata["shared_links"]]
    assert apart and all(x.metadata["structural_score"] > 0.3 for x in apart)
    assert {x.decision_id for x in by_walks[:5]} == group0
    assert len({x.decision_id for x in by_links[:5]} & group0) <= 5


def test_biased_walks_step_with_the_node2vec_probabilities() -> None:
    """The vectorised walk (rejection sampling) draws the next node with weight 1/p back, 1 to a neighbour of
    the previous node, 1/q further out: from 0 -> 1 here, 0 (back) 2 : 3 (near 0) 1 : 2 (out) 0.5."""
    from agentcontext.engine.node2vec import walks

    neighbours = [np.array([1, 3]), np.array([0, 2, 3]), np.array([1]), np.array([0, 1])]
    params = Node2VecParams(walk_length=3, num_walks=20_000, p=0.5, q=2.0)
    found = walks(neighbours, params, np.random.default_rng(4))
    assert found.shape == (4 * 20_000, 3)
    after = found[(found[:, 0] == 0) & (found[:, 1] == 1), 2]
    share = np.bincount(after, minlength=4) / after.size
    assert share == pytest.approx([2 / 3.5, 0, 0.5 / 3.5, 1 / 3.5], abs=0.02)
    steps = np.stack([found[:, :-1].ravel(), found[:, 1:].ravel()], axis=1)
    assert all(b in neighbours[a] for a, b in {tuple(s) for s in steps.tolist()})  # every step follows an edge
