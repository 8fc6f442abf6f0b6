"""Precedents through the doors, over what the principal reads: the MCP ``find_precedents`` tool (a real
``mcp.Client`` session) and the web console's precedent form (``GET /decisions?scenario=``, Starlette's test client
over the real app) give a principal who reads ``graph:default`` only the same answer, scores included, as in a
workspace where the records it may not read were never written. Those records (memories of ``memory:secret``
linked to the entities, an edge of ``graph:secret`` between them, a link ``graph:secret`` holds from a decision to
an entity the scenario names, an entity of ``graph:secret`` the scenario names) are real: the owner's answer
changes with them. test_precedent_scope.py checks the Python API."""
from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from agentcontext import ContextGraph, Workspace, access
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory
from agentcontext.model import Edge, Node
from agentcontext.web import create_app

from .test_mcp import call, run
from .test_web_security import login

SCENARIO = "Choose the billing database for acme and umbrella"
WHEN = "2026-01-05T10:00:00+00:00"  # fixed, so two workspaces' answers can be compared whole


def world(home, hidden: bool):
    """Two decisions of graph:default; with ``hidden``, records of namespaces the reader ``p`` may not read."""
    ws = Workspace.open(home=home / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    graph.add_nodes([{"id": x, "type": "entity"} for x in ("acme", "globex")])
    recorder = DecisionRecorder(graph)
    recorder.record_decision("technology", "Choose the billing database", "transactions", "postgresql", 0.9,
                             entities=["acme"], decision_id="d1", timestamp=WHEN)
    recorder.record_decision("technology", "Choose the billing queue", "ordering", "kafka", 0.9,
                             entities=["globex"], decision_id="d2", timestamp=WHEN)
    if hidden:
        secret = AgentMemory(workspace=ws, namespace="secret", retention_policy="unlimited", entity_graph=graph)
        secret.batch_store([{"content": f"private note {i}", "metadata": {"entities": ["acme", "globex"]}}
                            for i in range(10)])
        acme, globex = graph.store_id("acme"), graph.store_id("globex")
        ws.store.put_nodes([Node(id="graph:secret/umbrella", kind="entity", namespace="graph:secret", key="umbrella",
                                 title="umbrella")])
        ws.store.put_edges([Edge(src=acme, type="secretly_owns", dst=globex, namespace="graph:secret"),
                            Edge(src="d2", type="involves", dst=acme, namespace="graph:secret"),
                            Edge(src="d2", type="involves", dst="graph:secret/umbrella", namespace="graph:secret")])
    access.grant(ws, "p", "graph:default", "read")
    return ws


def over_mcp(ws, who):
    async def script(client):
        return await call(client, "find_precedents", {"scenario": SCENARIO, "limit": 5})

    failed, out = run(build_server(ws, principal=who), script)
    assert not failed, out
    return out["precedents"]


def precedents_table(html: str) -> str:
    return re.search(r'<table class="grid" id="precedents">.*?</table>', html, re.S).group(0)


def over_web(ws, who):
    app = create_app(ws, allowed_hosts=["testserver"])
    if who is None:
        client = TestClient(app)
        client.get(f"/login?launch={app.state.console.sessions.launch_token}")
    else:
        client, _ = login(app, access.create_token(ws, who)["token"])
    response = client.get("/decisions", params={"scenario": SCENARIO})
    assert response.status_code == 200
    table = precedents_table(response.text)
    rows = re.findall(r'<tr><td>([0-9.]+)</td>\s*<td><a href="/decisions/([^"]+)"', table)
    return table, rows


def pick(answer):
    """What a test compares the owner's answer on: (decision id, score) best first."""
    if isinstance(answer, tuple):  # the web page: (the table's html, its (score, id) rows)
        return [(i, s) for s, i in answer[1]]
    return [(d["decision_id"], d["metadata"]["similarity"]) for d in answer]


@pytest.mark.parametrize("door", [over_mcp, over_web], ids=["mcp", "web"])
def test_a_readers_precedents_through_the_door_ignore_what_it_may_not_read(tmp_path, door):
    got, owner = {}, None
    for hidden in (False, True):
        ws = world(tmp_path / f"hidden-{hidden}", hidden)
        got[hidden] = door(ws, "p")
        if hidden:
            owner = door(ws, None)
        ws.close()
    assert pick(got[False]) and [i for i, _ in pick(got[False])] == ["d1", "d2"]
    assert got[True] == got[False]  # bit for bit: ids, scores, every field (the page's whole table)
    assert pick(owner) != pick(got[True])  # the hidden records are real: the owner's scores move with them


def test_the_mcp_answer_carries_the_scores_a_reader_may_see(tmp_path):
    """The reader's structural score of d2 counts only links of namespaces it reads."""
    ws = world(tmp_path, hidden=True)
    seen = {d["decision_id"]: d["metadata"] for d in over_mcp(ws, "p")}
    everything = {d["decision_id"]: d["metadata"] for d in over_mcp(ws, None)}
    ws.close()
    assert seen["d2"]["structural_score"] == 0.0 and seen["d2"]["shared_links"] == []
    assert everything["d2"]["structural_score"] > 0 and everything["d2"]["shared_links"] == ["graph:default/acme",
                                                                                   "graph:secret/umbrella"]


def test_a_readers_decision_search_takes_no_causal_link_it_may_not_read(tmp_path):
    """query_decisions' causal neighbours (the console's decision search, GET /decisions?q=) come over links of
    namespaces the reader reads only: a ``caused`` edge graph:secret holds from d1 to d2 pulls d2 in for the
    owner alone."""
    def search(hidden: bool):
        ws = Workspace.open(home=tmp_path / f"q-{hidden}" / ".agentcontext", create=True)
        recorder = DecisionRecorder(ContextGraph(workspace=ws))
        for did, scenario, outcome in (("d1", "Choose the billing database", "postgresql"),
                                       ("d2", "Paint the office walls", "blue"),
                                       ("d3", "Pick the coffee brand for the kitchen", "lavazza")):
            recorder.record_decision("technology", scenario, "", outcome, 0.9, decision_id=did, timestamp=WHEN)
        if hidden:
            ws.store.put_edges([Edge(src="d1", type="caused", dst="d2", namespace="graph:secret")])
        access.grant(ws, "p", "graph:default", "read")
        client, _ = login(create_app(ws, allowed_hosts=["testserver"]), access.create_token(ws, "p")["token"])
        page = client.get("/decisions", params={"q": "billing database"})
        table = re.search(r'<table class="grid" id="found">.*?</table>', page.text, re.S).group(0)
        api = [(d.decision_id, d.metadata["hops"]) for d in DecisionRecorder(ContextGraph(workspace=ws),
                                                                           principal="p").query_decisions(
            "billing database", limit=2)]
        owner = [d.decision_id for d in recorder.query_decisions("billing database", limit=2)]
        ws.close()
        return table, api, owner

    (table, api, owner), (table_h, api_h, owner_h) = search(False), search(True)
    assert api == api_h == [("d1", 0), ("d3", 0)] and table_h == table
    assert owner == ["d1", "d3"] and owner_h == ["d1", "d2"]  # the link is real: the owner walks it
