"""Access that holds on every path (issue 13, section 2): every traversal checks each node it returns and never
walks through what the caller may not read; the Python classes are checked like the CLI and MCP when given a
principal; ids are scoped to their namespace, so no capability writes another's records.

The workspace here: the workspace graph (``graph:default``) and an HR graph (``graph:hr``) with decisions of its
own, one default decision informed by an HR one and involving an HR entity, memories that mention a graph
entity, a ``lib:`` pack, and ``reader`` who may read ``graph:default`` only.
"""
from __future__ import annotations

import json
import socket
import subprocess
import time
from contextlib import contextmanager

import numpy as np
import pytest

from agentcontext import AgentContext, access
from agentcontext.decisions.causal import CausalChainAnalyzer
from agentcontext.decisions.explain import trace_decision_explainability
from agentcontext.decisions.models import Policy
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.errors import (AccessDeniedError, ConflictError, NotFoundError, ReadOnlyError,
                                 ValidationError)
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.flash import flash
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory
from agentcontext.vector_store import VectorStore

from .test_mcp import call, run
from .test_mcp_transports import AGENTCONTEXT, env_for, free_port, http_session, stdio_session

SECRET = "Dana's bonus is secret"  # text of an HR decision nobody outside HR may read


def memory(ws, principal=None, entity_graph=None):
    return AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                       principal=principal, entity_graph=entity_graph)


@pytest.fixture
def hws(ws):
    return seed(ws)


def seed(ws):
    hr = ContextGraph(workspace=ws, name="hr")
    hr.add_node("dana", "person", content="Dana, an engineer")
    rec_hr = DecisionRecorder(hr)
    rec_hr.record_decision("salary", "Raise for Dana after her review", "Budget allows it", "approved", 0.9,
                           decision_id="hr_raise")
    rec_hr.record_decision("salary", "Bonus for Dana after the raise", SECRET, "approved", 0.9,
                           caused_by=["hr_raise"], decision_id="hr_bonus")
    default = ContextGraph(workspace=ws)
    default.add_edge("alice", "acme", "works_at")
    rec = DecisionRecorder(default)
    rec.record_decision("refund", "Refund for a laptop returned late", "Outside the window", "denied", 0.8,
                        entities=["laptop", "graph:hr/dana"], informed_by=["hr_raise"], decision_id="dec_late")
    rec.record_decision("refund", "Escalated laptop refund", "Manager review", "escalated", 0.9,
                        caused_by=["dec_late"], decision_id="dec_escalated")
    mem = memory(ws, entity_graph=default)
    mem.store("Alice met Bob at the Acme offsite", metadata={"entities": ["alice", "bob"]})
    packs.create_pack(ws, "open")
    packs.put_doc(ws, "lib:open", "guide", title="Guide", content="The guide.", embed=False)
    access.grant(ws, "reader", "graph:default", "read")
    return ws


# --- every traversal checks each node it returns ------------------------------------------------------


def chain_calls(client):
    async def script():
        return (await call(client, "get_causal_chain", {"decision_id": "hr_bonus"}),
                await call(client, "get_causal_chain", {"decision_id": "dec_escalated", "max_depth": 10}))
    return script()


def assert_no_hr(found, chain):
    """What a graph:default reader gets for an HR decision and for a default chain that leads into HR."""
    is_error, data = found
    assert is_error and data["error"]["type"] == "NotFoundError", data
    assert SECRET not in json.dumps(data) and "hr_raise" not in json.dumps(data)
    is_error, data = chain
    assert not is_error, data
    assert [d["decision_id"] for d in data["chain"]] == ["dec_late"]  # never crosses into graph:hr
    assert SECRET not in json.dumps(data) and "hr_raise" not in json.dumps(data)


def test_causal_chain_never_crosses_into_another_graph_over_mcp(hws):
    assert_no_hr(*run(build_server(hws, principal="reader"), chain_calls))
    # The owner still sees the whole chain.
    _, data = run(build_server(hws), chain_calls)[1]
    assert [d["decision_id"] for d in data["chain"]] == ["dec_late", "hr_raise"]


@contextmanager
def http_server(home):
    """``agentcontext serve mcp --http`` over ``home`` on a free port; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([AGENTCONTEXT, "serve", "mcp", "--http", "--port", str(port)], env=env_for(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.timeout(180)
def test_causal_chain_never_crosses_into_another_graph_over_stdio_and_http(hws, tmp_path):
    home = tmp_path / ".agentcontext"
    assert_no_hr(*stdio_session(home, chain_calls, "--as", "reader"))
    token = access.create_token(hws, "reader")["token"]
    with http_server(home) as url:
        assert_no_hr(*http_session(url, token, chain_calls))


def test_decision_reads_never_return_another_graphs_records(hws):
    g = ContextGraph(workspace=hws, principal="reader")
    with pytest.raises(NotFoundError) as info:
        DecisionRecorder(g).get_decision("hr_bonus")
    assert SECRET not in info.value.message
    with pytest.raises(NotFoundError):
        CausalChainAnalyzer(g).get_causal_chain("hr_raise", "downstream")
    report = trace_decision_explainability(g, "dec_late")
    text = json.dumps(report, default=str)
    assert "hr_raise" not in text and "graph:hr" not in text
    assert [e["entity_id"] for e in report["entities"]] == ["laptop"]
    found = DecisionRecorder(g).query_decisions("laptop refund", max_hops=3)
    assert {d.decision_id for d in found} == {"dec_late", "dec_escalated"}
    for d in DecisionRecorder(g).find_precedents("laptop returned late", entities=["laptop"]):
        assert not any("graph:hr" in x for x in d.metadata["shared_links"]), d.metadata
    # The owner (no principal) sees across graphs, as before.
    owner = trace_decision_explainability(ContextGraph(workspace=hws), "dec_late")
    assert [c["decision_id"] for c in owner["causes"]] == ["hr_raise"]


def test_graph_traversals_show_only_what_the_principal_may_read(hws):
    g = ContextGraph(workspace=hws, principal="reader")
    hidden = {m["id"] for m in memory(hws).list_memories()} | {"graph:hr/dana", "hr_raise", "hr_bonus"}
    near = {n["id"] for n in g.get_neighbors("alice", hops=3, direction="both")}
    assert near and not near & hidden  # the memory that mentions alice and bob is not shown...
    assert "bob" not in near  # ...nor walked through
    assert g.shortest_path("alice", "bob", direction="both") is None
    assert ContextGraph(workspace=hws).shortest_path("alice", "bob", direction="both") is not None
    assert not set(g.pagerank()) & hidden
    assert not {n["id"] for n in g.find_nodes()} & hidden
    assert g.find_node("hr_bonus") is None and g.find_node("graph:hr/dana") is None
    with pytest.raises(NotFoundError):
        g.get_neighbors("hr_raise")
    assert g.stats()["node_count"] == len(g.find_nodes())


def test_graph_algorithms_walk_only_what_the_principal_may_read(hws):
    hidden = {m["id"] for m in memory(hws).list_memories()} | {"graph:hr/dana", "hr_raise", "hr_bonus"}
    owner = ContextGraph(workspace=hws)
    assert owner.k_shortest_paths("alice", "bob", direction="both")  # through the memory that names both
    for g in (ContextGraph(workspace=hws, principal="reader"), owner.acting_as("reader")):
        assert g.k_shortest_paths("alice", "bob", direction="both") == []
        links = g.predict_links(top_k=50)
        assert not {x for link in links for x in (link["source"], link["target"])} & hidden
    stranger = ContextGraph(workspace=hws, principal="stranger")
    for call_it in (lambda: stranger.k_shortest_paths("alice", "acme"), lambda: stranger.predict_links()):
        with pytest.raises(AccessDeniedError):
            call_it()
    assert [r["outcome"] for r in hws.store.audit(principal="stranger")] == ["denied", "denied"]


def test_cross_graph_navigation_never_enters_a_graph_the_principal_may_not_read(hws):
    owner_default, owner_hr = ContextGraph(workspace=hws), ContextGraph(workspace=hws, name="hr")
    there = owner_default.link_graph(owner_hr, "alice", "dana")
    owner_hr.link_graph(owner_default, "dana", "bob")  # the only way from alice to bob runs through graph:hr
    assert owner_default.cross_graph_path("alice", owner_hr, "dana")["reachable"]
    assert owner_default.cross_graph_path("alice", owner_default, "bob")["hop_count"] == 2
    g = ContextGraph(workspace=hws, principal="reader")
    with pytest.raises(AccessDeniedError) as info:
        g.navigate_to(there)
    assert info.value.data["pack"] == "graph:hr"
    with pytest.raises(AccessDeniedError):
        g.cross_graph_path("alice", owner_hr, "dana")
    found = g.cross_graph_path("alice", g, "bob")
    assert not found["reachable"] and found["path"] == []


@pytest.mark.postgres
def test_traversals_on_postgres_walk_only_what_the_principal_may_read(pg_url, monkeypatch):
    """PostgreSQL walks and paths run on the server (never mirrored) for a principal who sees everything; the
    SQL does not filter by principal, so a restricted one walks its own filtered adjacency there too."""
    from agentcontext.store.base import Capability
    from agentcontext.workspace import Workspace

    monkeypatch.setenv("AGENTCONTEXT_URL", pg_url)
    ws = Workspace.open()
    try:
        assert Capability.SERVER_QUERIES in ws.store.capabilities
        seed(ws)
        test_graph_traversals_show_only_what_the_principal_may_read(ws)
        test_graph_algorithms_walk_only_what_the_principal_may_read(ws)
        test_cross_graph_navigation_never_enters_a_graph_the_principal_may_not_read(ws)
    finally:
        ws.close()


def test_flash_denial_does_not_name_the_hidden_prerequisite(ws):
    packs.create_pack(ws, "eng")
    packs.put_doc(ws, "lib:eng", "core.secret", content="Internal core secret.", embed=False)
    packs.put_doc(ws, "lib:eng", "api.leaky", content="An API on the secret core.", embed=False,
                  related=[{"type": "depends_on", "target": "core.secret"}])
    access.grant(ws, "apireader", "lib:eng/api.*", "read")
    with pytest.raises(AccessDeniedError) as info:
        flash(ws, "lib:eng", "api.leaky", principal="apireader")
    assert "core.secret" not in json.dumps(info.value.to_dict())
    assert info.value.data["selector"] == "api.leaky"
    assert "core.secret" not in json.dumps(access.audit_log(ws, "apireader"))


# --- the Python API is an interface too -------------------------------------------------------------------


def test_agent_context_with_a_principal_is_checked_like_the_cli_and_mcp(ws):
    owner = AgentContext(vector_store=VectorStore(workspace=ws))
    owner.store("The owner's private note about the merger", user_id="owner")
    access.grant(ws, "bob", "lib:*", "read")  # someone else exists: the workspace is multi-user now
    alice = AgentContext(vector_store=VectorStore(workspace=ws), principal="alice")
    with pytest.raises(AccessDeniedError) as info:
        alice.retrieve("merger")
    assert (info.value.data["pack"], info.value.data["needed"]) == ("memory:default", "read")
    with pytest.raises(AccessDeniedError):
        alice.store("planted by alice")
    with pytest.raises(AccessDeniedError):
        alice.get_memory(owner.retrieve("merger")[0]["id"])
    assert [(r["action"], r["outcome"]) for r in ws.store.audit(principal="alice")] == [
        ("memory.retrieve", "denied"), ("memory.store", "denied"), ("memory.read", "denied")]
    access.grant(ws, "alice", "memory:default", "read")
    assert [r["content"] for r in alice.retrieve("merger")] == [r["content"] for r in owner.retrieve("merger")]
    with pytest.raises(AccessDeniedError):
        alice.forget(user_id="owner")
    assert owner.retrieve("merger")


def test_a_principal_in_a_single_user_workspace_acts_as_before(ws):
    ctx = AgentContext(vector_store=VectorStore(workspace=ws), principal="alice")
    mid = ctx.store("Single-user workspaces keep working")
    assert ctx.get_memory(mid)["content"] == "Single-user workspaces keep working"
    assert ws.store.audit(principal="alice")[-1]["action"] == "memory.store"


def test_services_given_a_principal_check_every_read_and_write(hws):
    ws = hws
    with pytest.raises(AccessDeniedError):
        memory(ws, "reader").list_memories()
    with pytest.raises(AccessDeniedError):
        memory(ws, "reader").store("planted")
    g = ContextGraph(workspace=ws, principal="reader")
    with pytest.raises(AccessDeniedError):
        g.add_node("planted", "entity")
    with pytest.raises(AccessDeniedError):
        DecisionRecorder(g).record_decision("refund", "sneaky", "", "approved", 0.5)
    with pytest.raises(AccessDeniedError):
        PolicyEngine(graph_store=g).add_policy(Policy("p1", "P", "", {}, "refund"))
    with pytest.raises(AccessDeniedError):
        ContextGraph(workspace=ws, name="hr", principal="reader").find_nodes()
    with pytest.raises(AccessDeniedError):
        tools.read_knowledge_doc(ws, "lib:open", "guide", principal="reader")
    assert DecisionRecorder(g).get_decision("dec_late").outcome == "denied"  # reads of graph:default work
    denied = [r["action"] for r in ws.store.audit(principal="reader") if r["outcome"] == "denied"]
    assert len(denied) == 7
    assert ContextGraph(workspace=ws).find_node("planted") is None


def test_policy_exceptions_and_approvals_are_audited_under_the_acting_principal(ws):
    g = ContextGraph(workspace=ws)
    DecisionRecorder(g).record_decision("refund", "Refund", "", "approved", 0.5, decision_id="dec_1")
    PolicyEngine(graph_store=g).add_policy(Policy("p1", "P", "", {"min_confidence": 0.9}, "refund"))
    access.grant(ws, "lead", "graph:default", "write")
    engine = PolicyEngine(graph_store=g, principal="lead")
    engine.record_exception("dec_1", "p1", reason="Loyal customer", approver="the-ceo")
    engine.record_approval("dec_1", approver="the-ceo")
    rows = [(r["principal"], r["action"]) for r in ws.store.audit() if r["action"] in ("policy.exception",
                                                                                         "decision.approval")]
    assert rows == [("lead", "policy.exception"), ("lead", "decision.approval")]
    assert not ws.store.audit(principal="the-ceo")
    assert [e.approver for e in engine.get_exceptions("dec_1")] == ["the-ceo"]  # the approver stays data


# --- ids are scoped to their namespace ---------------------------------------------------------------------


def test_a_memory_cannot_plant_a_doc(ws):
    mem = memory(ws)
    with pytest.raises(ValidationError):
        mem.batch_store([{"id": "lib:hr/policy", "content": "Planted: everyone gets a raise"}])
    with pytest.raises(ValidationError):
        mem.import_data({"memories": [{"id": "lib:hr/policy", "content": "Planted again"}]})
    packs.create_pack(ws, "hr")
    packs.put_doc(ws, "lib:hr", "policy", title="Policy", content="The real policy.", embed=False)
    assert [n.content for n in ws.store.node_versions("lib:hr/policy")] == ["The real policy."]


def test_no_capability_writes_another_capabilitys_records(ws):
    g = ContextGraph(workspace=ws)
    did = DecisionRecorder(g).record_decision("refund", "Refund", "Because", "approved", 0.5)
    mem = memory(ws)
    mid = mem.store("A memory")
    with pytest.raises(ConflictError):  # a memory never overwrites a decision
        mem.batch_store([{"id": did, "content": "Overwritten"}])
    assert DecisionRecorder(g).get_decision(did).scenario == "Refund"
    with pytest.raises(ConflictError):  # a decision never takes a memory's id
        DecisionRecorder(g).record_decision("refund", "Planted", "", "approved", 0.5, decision_id=mid)
    for bad in ("lib:hr/x", "graph:hr/x", "policy:p1", "memory:default/x"):
        with pytest.raises(ValidationError):
            DecisionRecorder(g).record_decision("refund", "Planted", "", "approved", 0.5, decision_id=bad)
    packs.create_pack(ws, "docs")
    packs.put_doc(ws, "lib:docs", "page", content="A page.", embed=False)
    for node_id in ("lib:docs/page", mid):  # the graph's writes stay in its own namespace
        with pytest.raises(ValidationError):
            g.retract_node(node_id)
    assert ws.store.get_node("lib:docs/page") is not None and mem.get_memory(mid) is not None


def test_purge_node_reaches_other_namespaces_only_with_admin_and_never_pkg(ws, write_pack):
    folder = write_pack("core", {"a": ([], "A")}, selector="pkg:acme.tools.knowledge.core")
    packs.install_folder(ws, folder, defer_embeddings=True)
    packs.create_pack(ws, "docs")
    packs.put_doc(ws, "lib:docs", "page", content="A page.", embed=False)
    g = ContextGraph(workspace=ws)
    with pytest.raises(ReadOnlyError):
        g.purge_node("pkg:acme.tools.knowledge.core/a")
    assert ws.store.get_node("pkg:acme.tools.knowledge.core/a") is not None
    access.grant(ws, "eraser", "graph:default", "write")
    eraser = ContextGraph(workspace=ws, principal="eraser")
    for pack in ("lib:docs", "lib:nothing"):  # checked on the id's namespace before any lookup: reveals nothing
        with pytest.raises(AccessDeniedError) as info:
            eraser.purge_node(f"{pack}/page")
        assert (info.value.data["pack"], info.value.data["needed"]) == (pack, "admin")
    access.grant(ws, "eraser", "lib:docs", "write")
    with pytest.raises(AccessDeniedError):
        eraser.purge_node("lib:docs/page")
    assert ws.store.get_node("lib:docs/page") is not None
    access.grant(ws, "eraser", "lib:docs", "admin")
    assert eraser.purge_node("lib:docs/page")["nodes"] == 1


def test_record_decision_takes_a_precomputed_embedding_and_refuses_unknown_arguments(ws):
    g = ContextGraph(workspace=ws)
    vec = np.zeros(ws.embedder.dimension, dtype=np.float32)
    vec[0] = 1.0
    did = DecisionRecorder(g).record_decision("refund", "Refund", "Because", "approved", 0.5,
                                              reasoning_embedding=vec.tolist())
    d = DecisionRecorder(g).get_decision(did, with_embedding=True)
    assert "reasoning_embedding" not in d.metadata and d.reasoning_embedding[0] == pytest.approx(1.0)
    with pytest.raises(ValidationError) as info:
        DecisionRecorder(g).record_decision("refund", "Refund", "", "approved", 0.5, mood="sunny")
    assert info.value.data["arguments"] == ["mood"]


def test_precedent_proximity_never_walks_through_a_hidden_record(hws):
    """proximity_weight scores a decision by graph hops from the query's entities: for a principal those hops
    may only pass through records it may read (a score must not reveal a path through HR)."""
    default = ContextGraph(workspace=hws)
    default.add_node("carol", "person", content="Carol, a manager")
    default.add_edge("carol", "graph:hr/dana", "manages")  # carol -> dana (HR) -> dec_late
    def proximity(graph):
        found = DecisionRecorder(graph).find_precedents("laptop refund", entities=["carol"], proximity_weight=1.0)
        return {d.decision_id: d.metadata["proximity_score"] for d in found}
    assert proximity(default)["dec_late"] == pytest.approx(1 / 3)  # two hops, through Dana
    assert proximity(ContextGraph(workspace=hws, principal="reader")).get("dec_late", 0.0) == 0.0


def test_text_links_go_only_to_entities_the_writer_may_read(hws):
    """Linking a stored memory's text to known entities (issue 11 s3) must not give a writer an edge to an
    entity of a graph it may not read: that edge would tell it the entity exists."""
    access.grant(hws, "reader", "memory:default", "write")
    def linked(principal):
        mem = memory(hws, principal=principal, entity_graph=ContextGraph(workspace=hws))
        mid = mem.store(f"Dana and Alice talked about the offsite ({principal})")
        return {e.dst for e in hws.store.edges(src=[mid], type="mentions")}
    owner = linked(None)
    assert "graph:hr/dana" in owner and any(t.endswith("alice") for t in owner)
    reader = linked("reader")
    assert "graph:hr/dana" not in reader and any(t.endswith("alice") for t in reader)
