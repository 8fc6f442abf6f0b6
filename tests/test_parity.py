"""Parity: one table of operations, each run through Python, the CLI (a real subprocess, ``--json``) and MCP
(an in-process ``mcp.Client`` session), with the three answers compared as data.

Each row (``Op``) says how every interface performs the operation and under which access it is checked
(``needs``: the access name and the level a principal must hold, ``also``: any further grant). Every column
takes a principal (``python(ws, principal)``: the services given it, ``--as`` for the CLI,
``build_server(ws, principal)`` for MCP), and the access checks live in the services, so the table runs as
principals (issue 13, section 2): each checked row as its ``grantee``, holding exactly what the row needs (the
same data on all three), and as a stranger holding no grant
(``test_a_principal_without_the_grant_is_denied_and_audited``: AccessDeniedError naming the grant through
Python, the CLI and MCP, and one audit row per denied call). Listings, filtered rather than denied, run as the
owner.

Reads run against one prepared workspace. A write runs each interface against its own copy of it and compares
what came back (``volatile`` keys, such as new ids and times, left out) and what it left behind (``effect``,
read back through Python).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import anyio
import pytest
from mcp import Client

from agentcontext import access
from agentcontext.decisions.causal import CausalChainAnalyzer
from agentcontext.decisions.checkpoints import Checkpoints, summary
from agentcontext.decisions.explain import trace_decision_explainability
from agentcontext.decisions.models import Policy, decision_data
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.erasure import erase_workspace_entity
from agentcontext.errors import AgentContextError
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge import flash, packs, tools
from agentcontext.mcp_server import ERROR_META, build_server
from agentcontext.workspace_reasoning import workspace_reasoning
from agentcontext.memory import AgentMemory
from agentcontext.workspace import Workspace

from .conftest import CLI

Data = Any
STRANGER = "stranger"  # holds no grant at all in the prepared workspace
DOORS = ("python", "cli", "mcp")
NAMES: dict[str, str] = {}  # values the prepared workspace made (a memory id, a file), filled by ``prepared``


@dataclass(frozen=True)
class Op:
    name: str
    needs: tuple[str, str] | None  # (access name, level); None: a listing, filtered rather than denied
    python: Callable[[Workspace, str | None], Data]  # the Python call, returning the data the CLI prints
    cli: tuple[str, ...]  # after `agentcontext --home HOME`; `--json` is appended; {name} from NAMES
    mcp: tuple[str, dict[str, Any]] | None = None  # (tool, arguments); None: no MCP tool for it (yet)
    mcp_pick: Callable[[dict[str, Any]], Data] = lambda r: r  # the CLI-shaped data in MCP's structured result
    writes: bool = False
    volatile: tuple[str, ...] = ()  # keys whose values differ from run to run (new ids, times)
    effect: Callable[[Workspace, Data], Data] | None = None  # what a write left behind, read through Python
    cli_exit: int = 0  # a check that finds a problem exits 1 (lint, policy check, an incomplete erasure)
    also: tuple[tuple[str, str], ...] = ()  # further grants the operation needs, checked after ``needs``


# --- the Python side ---------------------------------------------------------------------------------------


def memory(ws: Workspace, who: str | None = None) -> AgentMemory:
    """The store `agentcontext memory ...` and the MCP memory tools use, as ``who`` (None: the owner)."""
    return AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited",
                       principal=who)


def graph(ws: Workspace, who: str | None = None) -> ContextGraph:
    """The workspace graph the decision commands and tools use (graph:default), as ``who`` (None: the owner)."""
    return ContextGraph(workspace=ws, principal=who)


def record(ws: Workspace, who: str | None, **kw: Any) -> dict[str, Any]:
    did = DecisionRecorder(graph(ws, who)).record_decision(**kw)
    return {"decision_id": did, "graph": "graph:default"}


def stored_decision(ws: Workspace, out: dict[str, Any]) -> dict[str, Any]:
    row = decision_data(DecisionRecorder(graph(ws)).get_decision(out["decision_id"]))
    captured = row["metadata"].get("captured")
    if captured:  # the calling program is what capture records: it differs by door by design (issue 26 s3)
        row["metadata"]["captured"] = {k: v for k, v in captured.items() if k != "program"}
    return {k: v for k, v in row.items() if k not in ("decision_id", "timestamp", "valid_from")}


def stored_memory(ws: Workspace, out: dict[str, Any]) -> dict[str, Any]:
    row = memory(ws).require(out["id"])
    return {k: v for k, v in row.items() if k not in ("id", "memory_id", "timestamp", "created_at", "updated_at")}


def edit_memory(ws: Workspace, who: str | None) -> dict[str, Any]:
    """What edit_memory returns: the memory after the edit and the version it replaced."""
    mem, before = memory(ws, who), ws.store.get_node(NAMES["memory"])
    mem.update(NAMES["memory"], content="Alice drinks oolong now")
    return {**mem.require(NAMES["memory"]), "previous_version": before.version}


def memory_versions(ws: Workspace, who: str | None) -> dict[str, Any]:
    """What memory_versions returns: every version of the memory, oldest first."""
    current = memory(ws, who).require(NAMES["memory"])
    return {"memory_id": current["id"], "namespace": "memory:default", "versions": [
        {"version": n.version, "content": n.content, "metadata": dict((n.props or {}).get("metadata") or {}),
         "updated_at": (n.props or {}).get("updated_at") or n.recorded_at, "by": n.created_by}
        for n in ws.store.node_versions(NAMES["memory"])]}


def without(row: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(row, dict):
        return {k: without(v, keys) for k, v in row.items() if k not in keys}
    if isinstance(row, list):
        return [without(v, keys) for v in row]
    return row


def check_policy(ws: Workspace, who: str | None) -> dict[str, Any]:
    engine = PolicyEngine(graph_store=graph(ws, who))
    return engine.check_compliance("dec_root", "refund-v1").to_dict()


def add_policy(ws: Workspace, who: str | None) -> dict[str, Any]:
    engine = PolicyEngine(graph_store=graph(ws, who))
    engine.add_policy(Policy("ship-v1", "Shipping", "Shipping needs reasoning.", {"requires_reasoning": True,
                                                                                "min_confidence": 0.5}, "shipping"))
    return engine.get_policy("ship-v1").to_dict()


def take_checkpoint(ws: Workspace, who: str | None) -> dict[str, Any]:
    return Checkpoints().keep(graph(ws, who), "later")  # take and store at once, as the CLI does


REFUND = dict(category="refund", reasoning="Outside the 30-day window.", outcome="denied")
NEW_DECISION = dict(category="refund", scenario="Customer wants a refund for a scratched phone", reasoning="Damage "
                    "caused by the customer.", outcome="denied", confidence=0.8, entities=["phone"],
                    decision_maker="agent-2", caused_by=["dec_root"], metadata={"ticket": "T-9"})
NOTE = "Written through one of three doors."


def write_note(tmp: Path) -> str:
    path = tmp / "note.md"
    path.write_text(NOTE, encoding="utf-8")
    return str(path)


# --- the table -----------------------------------------------------------------------------------------------

OPS: list[Op] = [
    # knowledge (seed 002's tools)
    Op("list packs", None, lambda ws, who: tools.list_knowledge_packs(ws, who),
       ("pack", "list"), ("list_knowledge_packs", {}), lambda r: r["packs"]),
    Op("search a pack", ("lib:open", "read"),
       lambda ws, who: tools.search_knowledge(ws, "lib:open", "onboarding guide", limit=5, principal=who),
       ("search", "lib:open", "onboarding guide", "--limit", "5"),
       ("search_knowledge", {"pack": "lib:open", "query": "onboarding guide", "limit": 5}), lambda r: r["hits"]),
    Op("neighbours of a doc", ("lib:open", "read"),
       lambda ws, who: tools.list_knowledge_neighbors(ws, "lib:open", "guide", principal=who),
       ("neighbors", "lib:open", "guide"), ("list_knowledge_neighbors", {"pack": "lib:open", "selector": "guide"}),
       lambda r: r["neighbors"]),
    Op("read a doc", ("lib:open", "read"), lambda ws, who: tools.read_knowledge_doc(ws, "lib:open", "guide",
                                                                                     principal=who),
       ("read", "lib:open", "guide"), ("read_knowledge_doc", {"pack": "lib:open", "selector": "guide"})),
    Op("flash", ("lib:open", "read"), lambda ws, who: flash.flash(ws, "lib:open", ["guide"], principal=who).to_dict(),
       ("flash", "lib:open", "guide"), ("flash_knowledge", {"pack": "lib:open", "selectors": ["guide"]})),
    Op("create a doc", ("lib:open", "write"),
       lambda ws, who: packs.put_doc(ws, "lib:open", "note", title="Note", summary="A note.", content=NOTE,
                                     expected_version=0, principal=who),
       ("doc", "put", "lib:open", "note", "--title", "Note", "--summary", "A note.", "--file", "{note}",
        "--expected-version", "0"),
       ("create_knowledge_doc", {"pack": "lib:open", "selector": "note", "title": "Note", "summary": "A note.",
                                 "content": NOTE}),
       writes=True, volatile=("at", "updated_at"),
       effect=lambda ws, _: tools.read_knowledge_doc(ws, "lib:open", "note")),
    Op("update a doc", ("lib:open", "write"),
       lambda ws, who: packs.put_doc(ws, "lib:open", "basics", summary="Basics, revised.", expected_version=1,
                                     principal=who),
       ("doc", "put", "lib:open", "basics", "--summary", "Basics, revised.", "--expected-version", "1"),
       ("update_knowledge_doc", {"pack": "lib:open", "selector": "basics", "summary": "Basics, revised.",
                                 "expected_version": 1}),
       writes=True, volatile=("at", "updated_at"),
       effect=lambda ws, _: tools.read_knowledge_doc(ws, "lib:open", "basics")),
    Op("delete a doc", ("lib:open", "write"), lambda ws, who: packs.delete_doc(ws, "lib:open", "guide", who),
       ("doc", "rm", "lib:open", "guide"), ("delete_knowledge_doc", {"pack": "lib:open", "selector": "guide"}),
       writes=True, volatile=("at", "recorded_at"),
       effect=lambda ws, _: [d["selector"] for d in tools.search_knowledge(ws, "lib:open", "", limit=10)]),
    # memory (seed 003's AgentMemory)
    Op("retrieve memories", ("memory:default", "read"),
       lambda ws, who: memory(ws, who).retrieve("what does Alice drink", max_results=2),
       ("memory", "retrieve", "what does Alice drink", "--k", "2"),
       ("retrieve_memories", {"query": "what does Alice drink", "max_results": 2}), lambda r: r["results"]),
    Op("get a memory", ("memory:default", "read"), lambda ws, who: memory(ws, who).require(NAMES["memory"]),
       ("memory", "get", "{memory}"), ("get_memory", {"memory_id": "{memory}"})),
    Op("conversation history", ("memory:default", "read"),
       lambda ws, who: memory(ws, who).get_conversation_history("c1", 50), ("memory", "conversation", "c1"),
       ("conversation_history", {"conversation_id": "c1"}), lambda r: r["memories"]),
    Op("memory versions", ("memory:default", "read"), memory_versions, ("memory", "versions", "{memory}"),
       ("memory_versions", {"memory_id": "{memory}"})),
    Op("edit a memory", ("memory:default", "write"), edit_memory,
       ("memory", "edit", "{memory}", "Alice drinks oolong now"),
       ("edit_memory", {"memory_id": "{memory}", "content": "Alice drinks oolong now"}),
       writes=True, volatile=("updated_at",), effect=stored_memory),
    Op("store a memory", ("memory:default", "write"),
       lambda ws, who: {"id": memory(ws, who).store("Carol likes oolong", conversation_id="c3", user_id="carol"),
                        "namespace": "memory:default"},
       ("memory", "store", "Carol likes oolong", "--conversation", "c3", "--user", "carol"),
       ("store_memory", {"content": "Carol likes oolong", "conversation_id": "c3", "user_id": "carol"}),
       writes=True, volatile=("id",), effect=stored_memory),
    Op("forget memories", ("memory:default", "write"), lambda ws, who: {"forgotten": memory(ws, who).forget(
        conversation_id="c2")}, ("memory", "forget", "--conversation", "c2"),
       ("forget_memories", {"conversation_id": "c2"}), lambda r: {"forgotten": r["forgotten"]},
       writes=True, effect=lambda ws, _: sorted(m["content"] for m in memory(ws).list_memories())),
    # decisions (seed 003's DecisionRecorder, CausalChainAnalyzer, PolicyEngine)
    Op("record a decision", ("graph:default", "write"), lambda ws, who: record(ws, who, **NEW_DECISION),
       ("decision", "record", "refund", NEW_DECISION["scenario"], "--outcome", "denied", "--confidence", "0.8",
        "--reasoning", NEW_DECISION["reasoning"], "--entity", "phone", "--maker", "agent-2", "--caused-by",
        "dec_root", "--meta", "ticket=T-9"),
       ("record_decision", NEW_DECISION), writes=True, volatile=("decision_id",), effect=stored_decision),
    Op("find precedents", ("graph:default", "read"),
       lambda ws, who: {"precedents": [decision_data(d) for d in DecisionRecorder(graph(ws, who)).find_precedents(
           "refund request two months after buying a laptop", limit=3)]},
       ("decision", "precedents", "refund request two months after buying a laptop", "--limit", "3"),
       ("find_precedents", {"scenario": "refund request two months after buying a laptop", "limit": 3})),
    Op("causal chain", ("graph:default", "read"),
       lambda ws, who: {"decision_id": "dec_root", "direction": "downstream", "chain": [
           decision_data(d) for d in CausalChainAnalyzer(graph(ws, who)).get_causal_chain("dec_root", "downstream",
                                                                                          5)]},
       ("decision", "chain", "dec_root", "--direction", "downstream"),
       ("get_causal_chain", {"decision_id": "dec_root", "direction": "downstream"})),
    Op("check compliance", ("graph:default", "write"), check_policy, ("policy", "check", "dec_root", "refund-v1"),
       ("check_compliance", {"decision_id": "dec_root", "policy_id": "refund-v1"}), writes=True, cli_exit=1,
       effect=lambda ws, _: [e.props for e in ws.store.edges(src="dec_root", type="applies_policy")]),
    Op("show a decision", ("graph:default", "read"),
       lambda ws, who: decision_data(DecisionRecorder(graph(ws, who)).get_decision("dec_escalated")),
       ("decision", "show", "dec_escalated")),
    Op("list decisions", ("graph:default", "read"),
       lambda ws, who: {"decisions": [decision_data(d)
                                      for d in DecisionRecorder(graph(ws, who)).list_decisions("refund")]},
       ("decision", "list", "--category", "refund")),
    Op("explain a decision", ("graph:default", "read"),
       lambda ws, who: trace_decision_explainability(graph(ws, who), "dec_escalated", 10),
       ("decision", "explain", "dec_escalated")),
    Op("add a policy", ("graph:default", "write"), add_policy,
       ("policy", "add", "ship-v1", "--name", "Shipping", "--category", "shipping", "--description",
        "Shipping needs reasoning.", "--rule", "requires_reasoning=true", "--rule", "min_confidence=0.5"),
       writes=True, volatile=("created_at", "updated_at"),
       effect=lambda ws, _: [p.policy_id for p in PolicyEngine(graph_store=graph(ws)).list_policies()],
       also=(("*", "read"),)),  # a policy id is one name across the workspace (test_existence_oracle.py)
    Op("list policies", ("graph:default", "read"),
       lambda ws, who: {"policies": [p.to_dict() for p in PolicyEngine(graph_store=graph(ws, who)).list_policies()]},
       ("policy", "list")),
    Op("show a policy", ("graph:default", "read"),
       lambda ws, who: PolicyEngine(graph_store=graph(ws, who)).get_policy("refund-v1").to_dict(),
       ("policy", "show", "refund-v1")),
    Op("policy exceptions", ("graph:default", "read"), lambda ws, who: {"exceptions": [
        e.to_dict() for e in PolicyEngine(graph_store=graph(ws, who)).get_exceptions(policy_id="refund-v1")]},
       ("policy", "exceptions", "--policy", "refund-v1")),
    Op("record a policy exception", ("graph:default", "write"),
       lambda ws, who: PolicyEngine(graph_store=graph(ws, who)).record_exception(
           "dec_root", "refund-v1", reason="Loyal customer", approver="lead").to_dict(),
       ("policy", "except", "dec_root", "refund-v1", "--reason", "Loyal customer", "--approver", "lead"),
       writes=True, volatile=("exception_id", "approval_timestamp"),
       effect=lambda ws, _: [e.reason for e in PolicyEngine(graph_store=graph(ws)).get_exceptions("dec_root")]),
    # the graph (seed 003's ContextGraph)
    Op("add a node", ("graph:default", "write"),
       lambda ws, who: (graph(ws, who).add_node("dave", "person", content="Dave, a customer", properties={"tier": 2}),
                        graph(ws, who).find_node("dave"))[1],
       ("graph", "node", "add", "dave", "--type", "person", "--content", "Dave, a customer", "--prop", "tier=2"),
       writes=True, volatile=("recorded_at",), effect=lambda ws, _: graph(ws).find_node("dave")["properties"]),
    Op("add an edge", ("graph:default", "write"),
       lambda ws, who: (graph(ws, who).add_edge("alice", "carol", "knows", 0.5),
                        graph(ws, who).find_edges(edge_type="knows", source_id="alice", target_id="carol")[0])[1],
       ("graph", "edge", "add", "alice", "carol", "--type", "knows", "--weight", "0.5"),
       writes=True, volatile=("recorded_at",),
       effect=lambda ws, _: graph(ws).shortest_path("bob", "carol")),
    Op("show a node", ("graph:default", "read"), lambda ws, who: graph(ws, who).find_node("alice"),
       ("graph", "node", "show", "alice")),
    Op("neighbours of a node", ("graph:default", "read"),
       lambda ws, who: {"node_id": "bob", "neighbors": graph(ws, who).get_neighbors(
           "bob", hops=2, include_distance_metadata=True)},
       ("graph", "neighbors", "bob", "--hops", "2")),
    Op("a path", ("graph:default", "read"),
       lambda ws, who: {"source": "bob", "target": "alice", "path": graph(ws, who).shortest_path("bob", "alice")},
       ("graph", "path", "bob", "alice")),
    Op("predict links", ("graph:default", "read"),
       lambda ws, who: {"node_id": "bob", "method": "adamic_adar",
                        "links": graph(ws, who).predict_links("bob", top_k=5)},
       ("graph", "predict-links", "bob", "--top", "5"), ("predict_links", {"node_id": "bob", "top_k": 5})),
    Op("k shortest paths", ("graph:default", "read"),
       lambda ws, who: {"source": "bob", "target": "berlin", "paths": graph(ws, who).k_shortest_paths(
           "bob", "berlin", k=2, direction="both")},
       ("graph", "paths", "bob", "berlin", "--k", "2", "--direction", "both"),
       ("find_paths", {"source": "bob", "target": "berlin", "k": 2, "direction": "both"})),
    Op("structurally similar", ("graph:default", "read"),
       lambda ws, who: {"node_id": "alice", "similar": graph(ws, who).structurally_similar("alice", top_k=3)},
       ("graph", "similar", "alice", "--top", "3")),
    Op("link mentions", ("graph:default", "write"), lambda ws, who: graph(ws, who).link_mentions(),
       ("graph", "link-mentions"), writes=True, also=(("memory:default", "write"),),
       effect=lambda ws, _: sorted((e.src, e.dst) for e in ws.store.edges(type="mentions"))),
    Op("pagerank", ("graph:default", "read"),
       lambda ws, who: {"stats": graph(ws, who).stats(), "measure": "pagerank", "top": [
           {"node_id": k, "score": v} for k, v in graph(ws, who).centrality("pagerank", top_k=3).items()]},
       ("graph", "analytics", "--measure", "pagerank", "--top", "3")),
    # checkpoints (stored, so they outlive a CLI process)
    Op("take a checkpoint", ("graph:default", "write"), take_checkpoint, ("checkpoint", "take", "later"),
       writes=True, volatile=("at",), effect=lambda ws, _: Checkpoints().labels(graph(ws)),
       also=(("*", "read"),)),  # so is a checkpoint label (test_existence_oracle.py)
    Op("list checkpoints", ("graph:default", "read"),
       lambda ws, who: {"checkpoints": Checkpoints().labels(graph(ws, who))},
       ("checkpoint", "list")),
    Op("show a checkpoint", ("graph:default", "read"),
       lambda ws, who: summary(Checkpoints().get(graph(ws, who), "before")), ("checkpoint", "show", "before")),
    Op("diff checkpoints", ("graph:default", "read"),
       lambda ws, who: Checkpoints().diff(graph(ws, who), "before", "after"),
       ("checkpoint", "diff", "before", "after")),
    # erasure (seed 003's ErasureCoordinator)
    Op("erase an entity", ("memory:default", "write"),
       lambda ws, who: erase_workspace_entity(ws, "alice", reason="request", principal=who).to_dict(),
       ("erase", "alice", "--reason", "request"), writes=True, volatile=("erased_at",),
       also=(("graph:default", "write"),),
       effect=lambda ws, _: (graph(ws).find_node("alice"), sorted(m["content"] for m in memory(ws).list_memories()))),
    # grounded answers (issue 11): the cited context query_with_reasoning would send, filtered by what one may read
    Op("cited context", None,
       lambda ws, who: workspace_reasoning(ws, who).context_for("what does Alice drink", max_results=5).to_dict(),
       ("context", "what does Alice drink", "--max-results", "5"),
       ("get_context", {"query": "what does Alice drink", "max_results": 5})),
]
BY_NAME = {op.name: op for op in OPS}
assert len(BY_NAME) == len(OPS)


def grantee(op: Op) -> str | None:
    """Who runs a row: for a checked row a principal holding exactly what it needs (``needs`` and ``also``,
    granted in the prepared workspace); a listing, filtered rather than checked, runs as the owner."""
    return None if op.needs is None else "granted-" + op.name.replace(" ", "-")


# --- the prepared workspace ----------------------------------------------------------------------------------


def prepare(home: Path) -> dict[str, str]:
    """Knowledge, memories, decisions, a policy and its exception, graph nodes and two checkpoints; returns the
    values rows refer to as ``{name}``."""
    ws = Workspace.open(home=home, create=True)
    packs.create_pack(ws, "open")
    packs.put_doc(ws, "lib:open", "basics", title="Basics", summary="What onboarding starts from.",
                  content="Open basics about onboarding.")
    packs.put_doc(ws, "lib:open", "guide", title="Guide", summary="The onboarding guide.",
                  content="The onboarding guide builds on the basics.",
                  related=[{"type": "depends_on", "target": "basics"}])
    mem = memory(ws)
    tea = mem.store("Alice drinks green tea every morning", conversation_id="c1", user_id="alice",
                    metadata={"type": "preference"})
    mem.store("Alice moved to Berlin in May", conversation_id="c1", metadata={"entities": ["alice"]})
    mem.store("Bob prefers black coffee", conversation_id="c2", user_id="bob")
    g = graph(ws)
    g.add_edges([{"source": "bob", "target": "alice", "type": "knows"},
                 {"source": "alice", "target": "berlin", "type": "lives_in"}])
    g.add_node("alice", "person", content="Alice, a customer", properties={"tier": 1})
    recorder = DecisionRecorder(g)
    engine = PolicyEngine(graph_store=g)
    engine.add_policy(Policy("refund-v1", "Refunds", "Refunds need confidence and a ticket.",
                             {"min_confidence": 0.95, "required_metadata": ["ticket"]}, "refund"))
    recorder.record_decision(**REFUND, scenario="Customer asks a refund 45 days after buying a laptop",
                             confidence=0.9, entities=["acme", "laptop"], decision_id="dec_root",
                             metadata={"ticket": "T-1"})
    recorder.record_decision(**{**REFUND, "outcome": "escalated"}, scenario="Customer escalates the denied "
                             "laptop refund to a manager", confidence=1.0, caused_by=["dec_root"],
                             decision_id="dec_escalated")
    engine.record_exception("dec_escalated", "refund-v1", reason="Manager override", approver="lead")
    points = Checkpoints()
    points.take(g, "before")
    points.flush(g, "before")
    recorder.record_decision(category="shipping", scenario="Parcel lost in transit", reasoning="", outcome="reshipped",
                             confidence=0.7, caused_by=["dec_escalated"], decision_id="dec_shipping")
    points.take(g, "after")
    points.flush(g, "after")
    access.grant(ws, "auditor", "lib:open", "read")  # someone else exists: every call is checked from now on
    for op in OPS:
        for pattern, level in ([op.needs, *op.also] if op.needs is not None else []):
            access.grant(ws, grantee(op), pattern, level)
    ws.close()
    return {"memory": tea}


def fill(value: Any) -> Any:
    """``{name}`` placeholders in CLI arguments and MCP arguments, from NAMES."""
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return NAMES[value[1:-1]]
    if isinstance(value, (list, tuple)):
        return type(value)(fill(v) for v in value)
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    return value


def jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def copy_of(home: Path, label: str) -> Path:
    target = home.parent.parent / label / home.name
    shutil.copytree(home, target)
    return target


# --- the three doors -------------------------------------------------------------------------------------------


def run_python(op: Op, home: Path, who: str | None = None) -> Data:
    ws = Workspace.open(home=home)
    try:
        return jsonable(op.python(ws, who))
    finally:
        ws.close()


def run_cli(op: Op, home: Path, who: str | None = None) -> tuple[int, Data]:
    args = [*CLI, "--home", str(home), *(["--as", who] if who else []), *fill(op.cli), "--json"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.stdout, (args, proc.returncode, proc.stderr)
    return proc.returncode, json.loads(proc.stdout)


def run_mcp(calls: list[tuple[str, dict[str, Any]]], home: Path, who: str | None = None) -> list[tuple[bool, Data]]:
    """The calls in order, in one real client session against a server over ``home`` acting as ``who``."""
    ws = Workspace.open(home=home)

    async def session() -> list[tuple[bool, Data]]:
        async with Client(build_server(ws, principal=who)) as client:
            found = []
            for tool, arguments in calls:
                result = await client.call_tool(tool, fill(arguments))
                # A tool error carries no structured content; its data is in _meta (issue 13 s3).
                found.append((True, {"error": result.meta[ERROR_META]}) if result.is_error
                             else (False, result.structured_content))
            return found

    try:
        return anyio.run(session)
    finally:
        ws.close()


def effect_of(op: Op, home: Path, data: Data) -> Data:
    ws = Workspace.open(home=home)
    try:
        return jsonable(op.effect(ws, data))
    finally:
        ws.close()


def slug(name: str) -> str:
    return name.replace(" ", "-")


# --- the runs --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("parity") / "base" / ".agentcontext"
    NAMES.update(prepare(home))
    NAMES["note"] = write_note(home.parent)
    return home


@pytest.fixture(scope="module")
def answers(prepared) -> dict[str, dict[str, Any]]:
    """Every row through every door it has: {row: {door: data, door + " effect": data, "cli exit": code}}.

    Each row runs as its ``grantee`` (exactly the grants it needs). Reads share the prepared workspace; each
    write gets one copy per door. CLI processes run two at a time."""
    homes = {(op.name, door): copy_of(prepared, f"{slug(op.name)}-{door}") if op.writes else prepared
             for op in OPS for door in DOORS}
    found: dict[str, dict[str, Any]] = {op.name: {} for op in OPS}
    for op in OPS:
        found[op.name]["python"] = run_python(op, homes[(op.name, "python")], grantee(op))
    with ThreadPoolExecutor(2) as pool:
        for op, (code, data) in zip(OPS, pool.map(lambda o: run_cli(o, homes[(o.name, "cli")], grantee(o)), OPS)):
            found[op.name].update({"cli": data, "cli exit": code})
    for op in OPS:
        if op.mcp:
            [(is_error, data)] = run_mcp([op.mcp], homes[(op.name, "mcp")], grantee(op))
            found[op.name].update({"mcp": data, "mcp error": is_error})
    for op in OPS:
        if op.effect is not None:
            for door in DOORS:
                if door in found[op.name]:
                    data = found[op.name][door] if door != "mcp" else op.mcp_pick(found[op.name][door])
                    found[op.name][f"{door} effect"] = effect_of(op, homes[(op.name, door)], data)
    return found


@pytest.mark.parametrize("name", [op.name for op in OPS])
def test_python_cli_and_mcp_return_the_same_data(answers, name):
    op, got = BY_NAME[name], answers[name]
    expected = without(got["python"], op.volatile)
    assert got["cli exit"] == op.cli_exit, got["cli"]
    assert without(got["cli"], op.volatile) == expected
    if op.mcp is not None:
        assert not got["mcp error"], got["mcp"]
        assert without(op.mcp_pick(got["mcp"]), op.volatile) == expected
    if op.effect is not None:
        left = without(got["python effect"], op.volatile)
        for door in ("cli", "mcp"):
            if f"{door} effect" in got:
                assert without(got[f"{door} effect"], op.volatile) == left, door
    assert expected not in (None, [], {}), "a row must compare something"


def test_every_mcp_tool_has_a_row(prepared):
    ws = Workspace.open(home=prepared)
    try:
        listed = anyio.run(lambda: _tools(ws))
    finally:
        ws.close()
    assert {op.mcp[0] for op in OPS if op.mcp} == listed


async def _tools(ws: Workspace) -> set[str]:
    async with Client(build_server(ws)) as client:
        return {t.name for t in (await client.list_tools()).tools}


@pytest.fixture(scope="module")
def denials(prepared) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every checked row as a principal holding no grant, through Python, the CLI and MCP, against one copy."""
    home = copy_of(prepared, "denied")
    checked = [op for op in OPS if op.needs is not None]
    found: dict[str, Any] = {op.name: {} for op in checked}
    for op in checked:
        found[op.name]["python"] = python_denial(op, home)
    with ThreadPoolExecutor(2) as pool:
        for op, answer in zip(checked, pool.map(lambda o: run_cli(o, home, STRANGER), checked)):
            found[op.name]["cli"] = answer
    with_tools = [op for op in checked if op.mcp]
    for op, answer in zip(with_tools, run_mcp([op.mcp for op in with_tools], home, STRANGER)):
        found[op.name]["mcp"] = answer
    ws = Workspace.open(home=home)
    try:
        audit = ws.store.audit(principal=STRANGER)
    finally:
        ws.close()
    return found, audit


def python_denial(op: Op, home: Path) -> Data:
    """The Python call as the stranger: the error it raised, shaped like the CLI's ``--json`` error."""
    ws = Workspace.open(home=home)
    try:
        return {"returned": jsonable(op.python(ws, STRANGER))}
    except AgentContextError as error:
        return {"error": jsonable(error.to_dict())}
    finally:
        ws.close()


@pytest.mark.parametrize("name", [op.name for op in OPS if op.needs is not None])
def test_a_principal_without_the_grant_is_denied_and_audited(denials, name):
    op = BY_NAME[name]
    found, _ = denials
    pack, level = op.needs
    data = found[name]["python"]
    assert data.get("error", {}).get("type") == "AccessDeniedError", data
    assert (data["error"]["pack"], data["error"]["needed"]) == (pack, level)
    code, data = found[name]["cli"]
    assert code == 1 and data["error"]["type"] == "AccessDeniedError", data
    assert (data["error"]["pack"], data["error"]["needed"]) == (pack, level)
    if op.mcp is not None:
        is_error, data = found[name]["mcp"]
        assert is_error and data["error"]["type"] == "AccessDeniedError", data
        assert (data["error"]["pack"], data["error"]["needed"]) == (pack, level)


def test_every_denied_call_left_one_audit_row(denials):
    found, audit = denials
    calls = sum(len(doors) for doors in found.values())
    assert [r["outcome"] for r in audit] == ["denied"] * calls
