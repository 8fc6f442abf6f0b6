"""Graph intelligence over what the principal reads, and nothing else: the structure behind a decision's Node2Vec
vector, its precedents' structural and proximity scores, link prediction, paths and structural similarity is the
principal's part of the graph. A principal who reads ``graph:default`` only gets, bit for bit, what it gets in a
workspace where the records it may not read (memories of ``memory:secret`` linked to the entities, an edge of
``graph:secret`` between them) were never written, whichever way it holds the graph: a ``DecisionRecorder`` given
``principal=`` over the owner's graph, or the graph ``acting_as`` it."""
from __future__ import annotations

import pytest

from agentcontext import ContextGraph, Workspace, access
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.memory import AgentMemory
from agentcontext.model import Edge

SCENARIO = "Choose the billing database"


def world(open_ws, hidden: bool):
    ws = open_ws()
    graph = ContextGraph(workspace=ws)
    graph.add_nodes([{"id": x, "type": "entity"} for x in ("acme", "globex", "initech", "umbrella")])
    graph.add_edges([{"source": "acme", "target": "initech", "type": "partner_of"},
                     {"source": "globex", "target": "umbrella", "type": "partner_of"}])
    recorder = DecisionRecorder(graph)
    recorder.record_decision("technology", SCENARIO, "transactions", "postgresql", 0.9, entities=["acme"],
                             decision_id="d1")
    recorder.record_decision("technology", "Choose the billing queue", "ordering", "kafka", 0.9,
                             entities=["globex"], decision_id="d2")
    if hidden:
        secret = AgentMemory(workspace=ws, namespace="secret", retention_policy="unlimited", entity_graph=graph)
        secret.batch_store([{"content": f"private note {i}", "metadata": {"entities": ["acme", "globex"]}}
                            for i in range(20)])
        ws.store.put_edges([Edge(src=graph.store_id("acme"), type="secretly_owns", dst=graph.store_id("globex"),
                                 namespace="graph:secret"),
                            # a link graph:secret holds from a decision to an entity: its record, not p's
                            Edge(src="d2", type="involves", dst=graph.store_id("acme"), namespace="graph:secret")])
    access.grant(ws, "p", "graph:default", "read")
    return ws, graph


def seen_by_p(graph, recorder):
    d1 = recorder.get_decision("d1", with_embedding=True)
    found = recorder.find_precedents(SCENARIO, structural="node2vec", entities=["acme"], proximity_weight=0.5,
                                     max_hops=2)
    linked = recorder.find_precedents(SCENARIO, entities=["acme"])  # structural = shared links
    view = graph.acting_as("p")
    return {"embedding": d1.node2vec_embedding,
            "precedents": [(d.decision_id, d.metadata["structural_score"], d.metadata["proximity_score"],
                            d.metadata["similarity"]) for d in found],
            "linked": [(d.decision_id, d.metadata["structural_score"], d.metadata["shared_links"],
                        d.metadata["similarity"]) for d in linked],
            "links": view.predict_links(top_k=10),
            "paths": view.k_shortest_paths("acme", "globex", k=3, direction="both"),
            "similar": view.structurally_similar("acme", top_k=5)}


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("held", ["principal", "acting_as"])
def test_what_p_gets_does_not_depend_on_what_it_may_not_read(tmp_path, request, held, backend):
    got = {}
    for hidden in (False, True):
        if backend == "postgres":
            url = request.getfixturevalue("pg_server").url()
            ws, graph = world(lambda url=url: Workspace.open(url=url), hidden)
        else:
            ws, graph = world(lambda hidden=hidden: Workspace.open(
                home=tmp_path / f"{held}-{hidden}" / ".agentcontext", create=True), hidden)
        recorder = DecisionRecorder(graph, principal="p") if held == "principal" else DecisionRecorder(
            graph.acting_as("p"))
        got[hidden] = seen_by_p(graph, recorder)
        if hidden:  # the owner's view does change: the hidden records are real
            owner = DecisionRecorder(graph).find_precedents(SCENARIO, structural="node2vec", entities=["acme"],
                                                            proximity_weight=0.5, max_hops=2)
            assert {d.decision_id: d.metadata["proximity_score"] for d in owner}["d2"] > 0
            linked = DecisionRecorder(graph).find_precedents(SCENARIO, entities=["acme"])
            assert {d.decision_id: d.metadata["structural_score"] for d in linked}["d2"] > 0
        ws.close()
    assert got[True]["embedding"] is not None and got[True]["precedents"]
    assert got[True] == got[False]


def test_links_of_namespaces_p_may_not_read_take_no_place_of_its_own(ws):
    """A limited read of a decision's structural links pages past those of namespaces p may not read, so many of
    them cannot push out the link p reads (find_precedents' pull of decisions that share the query's entities)."""
    graph = ContextGraph(workspace=ws)
    graph.add_nodes([{"id": "acme", "type": "entity"}])
    DecisionRecorder(graph).record_decision("technology", SCENARIO, "", "postgresql", 0.9, entities=["acme"],
                                            decision_id="d1")
    acme = graph.store_id("acme")
    ws.store.put_edges([Edge(src=f"a{i:03d}", type="involves", dst=acme, namespace="graph:secret")
                        for i in range(30)])  # their sources sort before d1
    access.grant(ws, "p", "graph:default", "read")
    links = DecisionRecorder(graph, principal="p").structural_links(dst=[acme], limit=5)
    assert [(e.src, e.namespace) for e in links] == [("d1", "graph:default")]
    assert len(DecisionRecorder(graph).structural_links(dst=[acme], limit=5)) == 5  # the owner's first five
