"""The graph algorithm doors (issue 11 s4): ``agentcontext graph predict-links | paths | similar | link-mentions``
and the MCP tools ``predict_links`` / ``find_paths``, as an attacker sees them.

A principal learns nothing about nodes it may not read: a graph it cannot read is denied whatever node is named,
and a node it does not see answers exactly like one that is not there, through Python, the CLI and MCP. Its
predicted links, paths and Node2Vec neighbours pass only through nodes it sees. Text linking needs write on every
memory store it links. (Python, CLI and MCP returning the same data is tests/test_parity.py's.)
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agentcontext import access
from agentcontext.errors import AccessDeniedError, AgentContextError, NotFoundError
from agentcontext.graph.context_graph import ContextGraph, workspace_graph
from agentcontext.mcp_server import ERROR_META, build_server
from agentcontext.memory import AgentMemory
from agentcontext.workspace import Workspace

from .conftest import CLI

HIDDEN, GHOST = "graph:secret/x", "graph:secret/ghost"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("doors") / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    g = ContextGraph(workspace=ws)
    g.add_edges([{"source": "bob", "target": "alice", "type": "knows"},
                 {"source": "carol", "target": "alice", "type": "knows"},
                 {"source": "alice", "target": "berlin", "type": "lives_in"},
                 {"source": "carol", "target": "dave", "type": "knows"}])
    secret = ContextGraph(workspace=ws, name="secret")
    secret.add_edges([{"source": "x", "target": "y", "type": "knows"}, {"source": "y", "target": "z"}])
    g.add_edge("graph:secret/y", "bob", "knows")  # the owner's graph walks through the secret nodes
    g.add_edge("graph:secret/x", "dave", "knows")
    AgentMemory(workspace=ws, namespace="default").store("Alice drinks green tea with Carol")
    AgentMemory(workspace=ws, namespace="private").store("Alice told Dave a secret")
    access.grant(ws, "reader", "graph:default", "read")
    access.grant(ws, "linker", "graph:default", "write")
    access.grant(ws, "linker", "memory:default", "write")
    access.grant(ws, "linker", "memory:private", "read")
    ws.close()
    return home


def python_error(home: Path, who: str, call) -> dict[str, Any]:
    ws = Workspace.open(home=home)
    try:
        call(workspace_graph(ws, who))
    except AgentContextError as exc:
        return exc.to_dict()
    finally:
        ws.close()
    raise AssertionError("no error")


def cli(home: Path, who: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, Any, str]:
    proc = subprocess.run([*CLI, "--home", str(home), "--as", who, *args, "--json"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def mcp(home: Path, who: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    ws = Workspace.open(home=home)

    async def session() -> list[dict[str, Any]]:
        async with Client(build_server(ws, principal=who)) as client:
            found = []
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                found.append(result.meta[ERROR_META] if result.is_error else result.structured_content)
            return found

    try:
        return anyio.run(session)
    finally:
        ws.close()


def same_answer(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Two errors that tell the same thing once the node id asked about is set aside."""
    assert a["type"] == b["type"]
    assert a["message"].replace(HIDDEN, "?").replace(GHOST, "?") == b["message"].replace(HIDDEN, "?").replace(GHOST,
                                                                                                              "?")
    assert {k: v for k, v in a.items() if v not in (HIDDEN, GHOST) and k != "message"} == \
        {k: v for k, v in b.items() if v not in (HIDDEN, GHOST) and k != "message"}


CALLS = {
    "predict": lambda node: lambda g: g.predict_links(node),
    "paths": lambda node: lambda g: g.k_shortest_paths("bob", node),
    "similar": lambda node: lambda g: g.structurally_similar(node),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_node_the_principal_does_not_see_answers_like_a_missing_one_in_python(home, call):
    hidden = python_error(home, "reader", CALLS[call](HIDDEN))
    missing = python_error(home, "reader", CALLS[call](GHOST))
    assert hidden["type"] == NotFoundError.__name__
    same_answer(hidden, missing)


def test_through_the_cli_and_mcp_too(home):
    for args in (("graph", "predict-links", "{}"), ("graph", "paths", "bob", "{}"), ("graph", "similar", "{}")):
        (code_h, hidden, _), (code_m, missing, _) = [cli(home, "reader", *[a.format(n) for a in args])
                                                     for n in (HIDDEN, GHOST)]
        assert code_h == code_m == 1 and hidden["error"]["type"] == "NotFoundError", hidden
        same_answer(hidden["error"], missing["error"])
    answers = mcp(home, "reader", [("predict_links", {"node_id": HIDDEN}), ("predict_links", {"node_id": GHOST}),
                                   ("find_paths", {"source": "bob", "target": HIDDEN}),
                                   ("find_paths", {"source": "bob", "target": GHOST})])
    for hidden, missing in (answers[0:2], answers[2:4]):
        assert hidden["type"] == "NotFoundError", hidden
        same_answer(hidden, missing)


def test_a_graph_it_may_not_read_is_denied_whatever_the_node(home):
    for node in ("x", "ghost"):
        with pytest.raises(AccessDeniedError):
            ws = Workspace.open(home=home)
            try:
                workspace_graph(ws, "reader", name="secret").predict_links(node)
            finally:
                ws.close()
    (_, real, _), (_, ghost, _) = [cli(home, "reader", "graph", "paths", node, "y", "--graph", "secret")
                                   for node in ("x", "ghost")]
    assert real["error"]["type"] == "AccessDeniedError" and echo(real["error"]) == echo(ghost["error"])
    real, ghost = mcp(home, "reader", [("find_paths", {"source": node, "target": "y", "graph": "secret"})
                                       for node in ("x", "ghost")])
    assert real["type"] == "AccessDeniedError" and echo(real) == echo(ghost)


def echo(error: dict[str, Any]) -> dict[str, Any]:
    """An error without ``target``, which only repeats the ids the caller gave."""
    return {k: v for k, v in error.items() if k != "target"}


def test_links_paths_and_neighbours_pass_only_through_what_it_sees(home):
    ws = Workspace.open(home=home)
    try:
        owner, reader = workspace_graph(ws), workspace_graph(ws, "reader")
        # the owner's graph has a second way from bob to dave, through the secret nodes
        assert [p["path"] for p in owner.k_shortest_paths("bob", "dave", k=5, direction="both")] == [
            ["bob", "alice", "carol", "dave"], ["bob", "graph:secret/y", "graph:secret/x", "dave"]]
        seen = {"bob", "alice", "carol", "berlin", "dave"}
        assert [p["path"] for p in reader.k_shortest_paths("bob", "dave", k=5, direction="both")] == [
            ["bob", "alice", "carol", "dave"]]
        assert any(r["target"].startswith("graph:secret/") or r["source"].startswith("graph:secret/")
                   for r in owner.predict_links(top_k=50))
        for r in reader.predict_links(top_k=50):
            assert {r["source"], r["target"]} <= seen, r
        for r in reader.predict_links("bob", top_k=50, method="preferential_attachment"):
            assert r["target"] in seen, r
        assert set(reader.node2vec()) <= seen
        assert {r["id"] for r in reader.structurally_similar("alice", top_k=20)} <= seen
        assert any(r["id"].startswith("graph:secret/") for r in owner.structurally_similar("alice", top_k=20))
    finally:
        ws.close()


def test_link_mentions_needs_write_on_each_memory_store_it_links(tmp_path, home):
    import shutil

    copy = tmp_path / ".agentcontext"
    shutil.copytree(home, copy)
    code, denied, _ = cli(copy, "linker", "graph", "link-mentions", "--namespace", "memory:private")
    assert code == 1 and denied["error"]["type"] == "AccessDeniedError"
    assert (denied["error"]["pack"], denied["error"]["needed"]) == ("memory:private", "write")
    code, done, err = cli(copy, "linker", "graph", "link-mentions", env={"AGENTCONTEXT_PROGRESS": "1"})
    assert code == 0 and done["skipped"] == ["memory:private"] and done["linked"] >= 2, done
    assert "linking" not in err  # --json: no progress bar
    ws = Workspace.open(home=copy)
    try:
        links = {(e.namespace, e.dst) for e in ws.store.edges(type="mentions")}
    finally:
        ws.close()
    assert ("memory:default", "graph:default/alice") in links and ("memory:default", "graph:default/carol") in links
    assert not [ns for ns, _ in links if ns == "memory:private"]
    proc = subprocess.run([*CLI, "--home", str(copy), "--as", "linker", "graph", "link-mentions"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "AGENTCONTEXT_PROGRESS": "1"})
    assert proc.returncode == 0 and "0 links made" in proc.stdout and "linking" in proc.stderr, proc
    code, stranger, _ = cli(copy, "reader", "graph", "link-mentions")
    assert code == 1 and stranger["error"]["type"] == "AccessDeniedError"
