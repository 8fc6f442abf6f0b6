"""What graph expansion gives a principal who may not read everything (context_for / get_context / the CLI's
``agentcontext context``, and ContextRetriever's expansion): never a walk over an edge of a namespace it may not
read, even between two records it may read, and never a cited context shaped by what it may not see (records
it may not read take no place in a hop's frontier, so they cannot push a readable neighbour out of it)."""
from __future__ import annotations

import json
import subprocess

import pytest

from agentcontext import ContextGraph, ContextRetriever, Workspace, access
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory
from agentcontext.knowledge.packs import install_folder
from agentcontext.workspace_reasoning import workspace_reasoning

from .conftest import CLI
from .test_mcp import call, run

DOC_QUERY = "How are billing database backups run?"


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """A pack doc naming Dana, a person of the graph ``people``, linked to her by the workspace graph's
    ``link_mentions``: that edge lives in ``graph:default``. ``reader`` may read the pack, ``graph:people`` and
    the memories of ``notes``, not ``graph:default``."""
    root = tmp_path_factory.mktemp("linked")
    home = root / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    people = ContextGraph(workspace=ws, name="people")
    people.add_node("dana", "person", content="Dana, who runs the backups")
    pack = root / "pack-arch"
    (pack / "docs").mkdir(parents=True)
    (pack / "docs" / "database.md").write_text("Billing keeps invoices in PostgreSQL; Dana runs the nightly "
                                               "backups.", encoding="utf-8")
    (pack / "manifest.yaml").write_text(
        "schema: nenjo.knowledge.v1\nslug: arch\nmanifest:\n  name: arch\n  pack_id: arch\n  docs:\n"
        "    - selector: stack.database\n      source_path: docs/database.md\n      title: Billing database\n"
        "      summary: How billing database backups are run.\n", encoding="utf-8")
    install_folder(ws, pack)
    done = ContextGraph(workspace=ws).link_mentions(["lib:arch"])
    assert done["linked"] == 1
    [edge] = ws.store.edges(src="lib:arch/stack.database", type="mentions")
    assert edge.dst == "graph:people/dana" and edge.namespace == "graph:default"
    notes = AgentMemory(workspace=ws, namespace="notes", retention_policy="unlimited", entity_graph=people)
    note = notes.store("The backups of billing are Dana's job.", metadata={"entities": ["dana"]})
    assert [e.dst for e in ws.store.edges(src=note, type="mentions")] == ["graph:people/dana"]
    for pattern in ("lib:arch", "graph:people", "memory:notes"):
        access.grant(ws, "reader", pattern, "read")
    yield ws, home, note
    ws.close()


def test_context_for_never_walks_an_edge_of_a_namespace_the_principal_may_not_read(linked):
    ws, _, _ = linked
    owner = {s.id: s for s in workspace_reasoning(ws, None).context_for(DOC_QUERY, include=["docs"]).sources}
    assert owner["graph:people/dana"].steps[0]["edge"] == "mentions"  # the owner walks it
    reader = workspace_reasoning(ws, "reader").context_for(DOC_QUERY, include=["docs"], max_hops=3)
    assert [s.id for s in reader.sources] == ["lib:arch#stack.database"]
    assert reader.num_sources == 1 and all(not s.steps for s in reader.sources)


def test_get_context_over_mcp_never_walks_it_either(linked):
    ws, _, _ = linked

    async def script(client):
        return await call(client, "get_context", {"query": DOC_QUERY, "include": ["docs"], "max_hops": 3})

    _, got = run(build_server(ws, principal="reader"), script)
    assert [s["id"] for s in got["sources"]] == ["lib:arch#stack.database"]
    assert "dana" not in json.dumps(got["reasoning_path"]).lower()


def test_the_cli_context_command_never_walks_it_either(linked):
    _, home, _ = linked
    proc = subprocess.run([*CLI, "--home", str(home), "--as", "reader", "context", DOC_QUERY, "--include", "docs",
                           "--hops", "3", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert [s["id"] for s in got["sources"]] == ["lib:arch#stack.database"]


def test_retriever_expansion_never_walks_it_either(linked):
    ws, _, note = linked
    notes = AgentMemory(workspace=ws, namespace="notes", retention_policy="unlimited", principal="reader")
    graph = ContextGraph(workspace=ws, principal="reader")
    hits = ContextRetriever(memory_store=notes, knowledge_graph=graph).retrieve(
        "Who does the billing backups?", max_results=10, use_graph_expansion=True, max_hops=3)
    ids = [h.id for h in hits]
    assert note in ids and "graph:people/dana" in ids  # memory -> Dana over the memory's own edge
    # Dana -> the doc only over graph:default's edge: never walked. The reader reads lib:arch, so the doc may be
    # found by its own words (the graph's nodes are candidates in their own right, issue 26 s3), not over the edge.
    assert all("hops" not in h.signals for h in hits if h.id == "lib:arch/stack.database")
    owner = ContextRetriever(memory_store=AgentMemory(workspace=ws, namespace="notes",
                                                      retention_policy="unlimited"),
                             knowledge_graph=ContextGraph(workspace=ws)).retrieve(
        "Who does the billing backups?", max_results=10, use_graph_expansion=True, max_hops=3)
    assert "lib:arch/stack.database" in [h.id for h in owner]


def crowded(open_ws, hidden: int) -> dict:
    """``graph:default``: PostgreSQL, and the billing team using it (weight 0.5); ``memory:secret``: ``hidden``
    memories linked to PostgreSQL (weight 1, so each outranks the team on the way out of PostgreSQL).
    ``grapher`` may read ``graph:default`` only. Its cited context for a question on PostgreSQL."""
    ws = open_ws()
    graph = ContextGraph(workspace=ws)
    graph.add_nodes([{"id": "postgresql", "type": "technology", "content": "PostgreSQL, a relational database"},
                     {"id": "billing", "type": "team", "content": "The billing team"}])
    graph.add_edges([{"source": "billing", "target": "postgresql", "type": "uses", "weight": 0.5}])
    if hidden:
        secret = AgentMemory(workspace=ws, namespace="secret", retention_policy="unlimited", entity_graph=graph)
        secret.batch_store([{"content": f"private note {i}", "metadata": {"entities": ["postgresql"]}}
                            for i in range(hidden)])
    access.grant(ws, "grapher", "graph:default", "read")
    try:
        return workspace_reasoning(ws, "grapher").context_for("What is postgresql?", include=["graph"], max_hops=1,
                                                              max_results=10).to_dict()
    finally:
        ws.close()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_records_the_principal_may_not_read_take_no_place_in_the_frontier(tmp_path, request, backend):
    """60 hidden memories (more than the frontier keeps per hop) next to PostgreSQL: the readable billing team
    still comes in, and the bundle (sources, scores, tokens, paths) is the one without them, byte for byte."""
    def opener(name):
        if backend == "postgres":
            return lambda: Workspace.open(url=request.getfixturevalue("pg_server").url())
        return lambda: Workspace.open(home=tmp_path / name / ".agentcontext", create=True)

    alone = crowded(opener("alone"), 0)
    assert [s["id"] for s in alone["sources"]] == ["graph:default/postgresql", "graph:default/billing"]
    for hidden in (10, 60):
        assert crowded(opener(f"with{hidden}"), hidden) == alone, hidden
