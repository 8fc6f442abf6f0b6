"""Entity linking at store time tells a writer nothing about entities it may not read: ``p`` may write
``memory:a`` and read ``graph:default``, not ``graph:b``, where Globex (alias GBX) lives. Its memory naming Globex
by name, alias and in its metadata gets exactly the links and properties it gets in a workspace without
``graph:b`` (never an edge into ``graph:b``, never an ``ambiguous`` mark from a hidden namesake), whether it
stores through ``AgentMemory(entity_graph=...)`` or runs ``agentcontext graph link-mentions --as p --json``."""
from __future__ import annotations

import json
import subprocess

from agentcontext import AgentMemory, ContextGraph, Workspace, access

from .conftest import CLI

TEXT = "Acme and Globex (GBX) signed; Globex Corp. too."


def links(ws, memory_id):
    return sorted((e.dst, e.namespace, json.dumps(e.props, sort_keys=True))
                  for e in ws.store.edges(src=memory_id, type="mentions"))


def world(root, hidden: bool):
    home = root / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    ContextGraph(workspace=ws).add_node("acme", "company", properties={"name": "Acme"})
    if hidden:
        ContextGraph(workspace=ws, name="b").add_node("globex", "company",
                                                      properties={"name": "Globex", "aliases": ["GBX", "Acme"]})
    for pattern in ("memory:a", "graph:default"):
        access.grant(ws, "p", pattern, "write")
    return ws, home


def test_links_made_for_a_writer_do_not_depend_on_entities_it_may_not_read(tmp_path):
    got = {}
    for hidden in (False, True):
        ws, home = world(tmp_path / str(hidden), hidden)
        memory = AgentMemory(workspace=ws, namespace="a", retention_policy="unlimited", principal="p",
                             entity_graph=ContextGraph(workspace=ws))
        stored = memory.store(TEXT, metadata={"entities": ["Globex"]})
        got[hidden] = (links(ws, stored), sorted(n.id for n in ws.store.find_nodes(namespace="graph:default")))
        ws.close()
    assert got[True] == got[False]
    dsts = {dst for dst, _, _ in got[True][0]}
    assert dsts == {"graph:default/acme", "graph:default/Globex"}  # Globex is new to p: a node of its own graph
    assert all('"ambiguous"' not in props for _, _, props in got[True][0])


def test_link_mentions_through_the_cli_for_a_writer_is_scoped_alike(tmp_path):
    got = {}
    for hidden in (False, True):
        ws, home = world(tmp_path / str(hidden), hidden)
        stored = AgentMemory(workspace=ws, namespace="a", retention_policy="unlimited").store(TEXT)
        ws.close()
        proc = subprocess.run([*CLI, "--home", str(home), "--as", "p", "graph", "link-mentions", "--json"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        ws = Workspace.open(home=home)
        got[hidden] = (json.loads(proc.stdout), links(ws, stored))
        ws.close()
    assert got[True] == got[False]
    assert [dst for dst, _, _ in got[True][1]] == ["graph:default/acme"]
