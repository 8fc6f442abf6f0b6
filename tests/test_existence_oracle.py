"""No existence oracle: a stranger learns nothing about records it may not read by choosing their ids.

Decision ids, policy ids, exception and approval ids and checkpoint labels each name one record across the
whole workspace. A principal who does not read every namespace ("writer": write on graph:default only) used to
get a ConflictError for an id held by an HR record and success for a free one, which told it the HR record
exists. Now such a principal gets the same refusal for both (``access.require_whole_view``), through Python,
the CLI (a real subprocess) and MCP (a real client session); a graph node id stays free for the caller's view
(each graph writes its own namespace). The graph's parts act for the view a principal opened, so Node2Vec
vectors never name a node it may not see either.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentcontext import access
from agentcontext.decisions.checkpoints import Checkpoints
from agentcontext.decisions.models import ApprovalChain, Policy, PolicyException
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.errors import AccessDeniedError
from agentcontext.graph.context_graph import ContextGraph, workspace_graph
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory

from .conftest import CLI
from .test_mcp import call, run

HIDDEN, FREE = "hr_raise", "never_used_anywhere"


@pytest.fixture
def hr(ws):
    """HR's records (a decision, a policy, a checkpoint) in graph:hr; "writer" may write graph:default only."""
    graph = ContextGraph(workspace=ws, name="hr")
    graph.add_node("dana", "person", content="Dana, an engineer")
    DecisionRecorder(graph).record_decision("salary", "Raise for Dana", "Budget allows it", "approved", 0.9,
                                            decision_id=HIDDEN)
    PolicyEngine(graph_store=graph).add_policy(Policy(HIDDEN, "Raises", "Raises need a review.", {}, "salary"))
    Checkpoints().keep(graph, HIDDEN)
    ContextGraph(workspace=ws).add_edge("alice", "acme", "works_at")
    access.grant(ws, "writer", "graph:default", "write")
    return ws


def refusal(call_with) -> tuple[str, str]:
    """(error type, message) of a call made once with the hidden id and once with a free one: they must match."""
    answers = []
    for chosen in (HIDDEN, FREE):
        with pytest.raises(AccessDeniedError) as caught:
            call_with(chosen)
        answers.append((type(caught.value).__name__, str(caught.value)))
    assert answers[0] == answers[1]
    return answers[0]


def test_a_stranger_choosing_ids_gets_one_answer_through_python(hr):
    ws = hr
    writer = ContextGraph(workspace=ws, principal="writer")
    before = ws.store.count_nodes()
    _, message = refusal(lambda did: DecisionRecorder(writer).record_decision(
        "refund", "Probe", "", "approved", 0.5, decision_id=did))
    assert "decision_id out" in message and HIDDEN not in message
    refusal(lambda did: DecisionRecorder(writer).record_decisions([{
        "category": "refund", "scenario": "Probe", "outcome": "approved", "confidence": 0.5, "decision_id": did}]))
    engine = PolicyEngine(graph_store=writer)
    refusal(lambda pid: engine.add_policy(Policy(pid, "Probe", "", {}, "refund")))
    refusal(lambda label: Checkpoints().keep(writer, label))
    mine = DecisionRecorder(writer).record_decision("refund", "Laptop refund", "", "approved", 0.5)  # no id chosen
    refusal(lambda eid: engine.record_exception(PolicyException(eid, mine, HIDDEN, "Probe", "lead")))
    refusal(lambda aid: engine.record_approval(ApprovalChain(aid, mine, "lead", "email")))
    assert ws.store.count_nodes() == before + 1  # only the decision recorded without an id
    denied = [r for r in ws.store.audit(principal="writer") if r["outcome"] == "denied"]
    assert len(denied) == 12 and {r["detail"]["reason"] for r in denied} == {"chosen id"}
    hr_view = ContextGraph(workspace=ws, name="hr")
    assert DecisionRecorder(hr_view).get_decision(HIDDEN).scenario == "Raise for Dana"
    assert Checkpoints().get(hr_view, HIDDEN)["namespace"] == "graph:hr"


def test_the_owner_still_chooses_ids_and_sees_the_conflict(hr):
    owner = ContextGraph(workspace=hr)
    assert DecisionRecorder(owner).record_decision("refund", "Mine", "", "approved", 0.5, decision_id=FREE) == FREE
    access.grant(hr, "auditor", "*", "read")
    access.grant(hr, "auditor", "graph:default", "write")  # reads everything: nothing is hidden from it
    auditor = ContextGraph(workspace=hr, principal="auditor")
    assert DecisionRecorder(auditor).record_decision("refund", "Theirs", "", "approved", 0.5,
                                                     decision_id="dec_auditor") == "dec_auditor"


def test_a_graph_node_id_stays_free_for_the_callers_view(hr):
    writer = ContextGraph(workspace=hr, principal="writer")
    writer.add_node("dana", "person", content="Dana from the default graph")  # HR holds a "dana" too
    assert writer.find_node("dana")["content"] == "Dana from the default graph"
    assert ContextGraph(workspace=hr, name="hr").find_node("dana")["content"] == "Dana, an engineer"


def test_a_principals_graph_parts_act_for_its_view(hr):
    view = workspace_graph(hr, "writer")
    vectors = view.node2vec(dimensions=8, walk_length=5, num_walks=2, epochs=1)
    assert sorted(vectors) == ["acme", "alice"]
    assert view.structurally_similar("alice", top_k=5, dimensions=8, walk_length=5, num_walks=2, epochs=1)
    assert all(not hit["id"].startswith("graph:hr") for hit in view.structurally_similar(
        "alice", top_k=5, dimensions=8, walk_length=5, num_walks=2, epochs=1))


def test_a_stranger_choosing_ids_gets_one_answer_through_the_cli(hr, tmp_path):
    hr.close()
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTCONTEXT_PRINCIPAL", "AGENTCONTEXT_URL")}
    env["AGENTCONTEXT_HOME"] = str(tmp_path / ".agentcontext")

    def cli(*args):
        proc = subprocess.run([*CLI, "--as", "writer", *args], capture_output=True, text=True, env=env, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    for command in (("policy", "add", "{id}", "--name", "Probe", "--category", "refund"),
                    ("checkpoint", "take", "{id}")):
        hidden, free = (cli(*(part.format(id=chosen) for part in command)) for chosen in (HIDDEN, FREE))
        assert hidden == free and hidden[0] != 0 and "AccessDeniedError" in hidden[2], (command, hidden, free)
    code, out, err = cli("decision", "record", "refund", "Laptop refund", "--outcome", "approved",
                         "--confidence", "0.5", "--json")  # the CLI never lets one choose a decision id
    assert code == 0 and json.loads(out)["decision_id"].startswith("dec_"), err


def test_a_stranger_learns_nothing_through_mcp(hr):
    async def script(client):
        probes = [await call(client, "record_decision", {
            "category": "refund", "scenario": "Probe", "reasoning": "", "outcome": "approved", "confidence": 0.5,
            "decision_id": chosen}) for chosen in (HIDDEN, FREE)]
        plain = await call(client, "record_decision", {"category": "refund", "scenario": "Laptop refund",
                                                       "reasoning": "", "outcome": "approved", "confidence": 0.5})
        return probes, plain

    (hidden, free), (is_error, recorded) = run(build_server(hr, principal="writer"), script)
    assert hidden[0] and free[0]
    assert json.dumps(hidden[1]).replace(HIDDEN, "ID") == json.dumps(free[1]).replace(FREE, "ID")
    assert not is_error and recorded["decision_id"].startswith("dec_")


def test_metadata_entities_link_as_the_memorys_writer(hr):
    """A memory's ``entities`` metadata is resolved as the principal storing it: an HR entity it may not read
    (named by id or by name) is as unknown to it as one that does not exist, so no edge points into graph:hr."""
    ws = hr
    access.grant(ws, "writer", "memory:default", "write")

    def stored(principal, entity):
        mem = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                          principal=principal, entity_graph=ContextGraph(workspace=ws))
        mid = mem.store("A note about the offsite", metadata={"entities": [entity]})
        return [e.dst for e in ws.store.edges(src=[mid], type="mentions")]

    assert stored(None, "graph:hr/dana") == ["graph:hr/dana"]  # the owner reads HR: linked to HR's node
    hidden, missing = stored("writer", "graph:hr/dana"), stored("writer", "graph:hr/nobody")
    assert hidden == ["graph:default/graph:hr/dana"] and missing == ["graph:default/graph:hr/nobody"]
    assert [n.content for n in ws.store.get_nodes(["graph:hr/dana"]).values()] == ["Dana, an engineer"]
    assert all(not dst.startswith("graph:hr/") for dst in stored("writer", "Dana"))
    access.grant(ws, "notes", "memory:default", "write")  # may write memories, not the graph
    with pytest.raises(AccessDeniedError):
        stored("notes", "acme")


def test_a_stranger_choosing_memory_ids_gets_one_answer(hr):
    """A memory id is one name across the workspace too (the HR decision's id could be taken by a memory): a
    batch with ``id`` or an import answers alike for a hidden id and a free one; the writer's own memories it
    sees may still be named by id (an update)."""
    ws = hr
    access.grant(ws, "writer", "memory:default", "write")
    mem = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                      principal="writer")
    _, message = refusal(lambda mid: mem.batch_store([{"id": mid, "content": "probe"}]))
    assert "leave id out" in message
    _, message = refusal(lambda mid: mem.import_data({"memories": [{"id": mid, "content": "probe"}]}))
    assert "graph:hr" not in message and "decision" not in message
    mine = mem.store("Bob prefers tea")
    assert mem.batch_store([{"id": mine, "content": "Bob prefers green tea"}]) == [mine]
    assert mem.get_memory(mine)["content"] == "Bob prefers green tea"
