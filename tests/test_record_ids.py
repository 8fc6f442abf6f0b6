"""Record ids follow one rule (agentcontext/ids.py), applied by the store to every record a write creates: 1 to
1,024 bytes of printable text (spaces and any script allowed), no control characters. An empty, blank, overlong or
control-character id is a ValidationError that names the id (cut for display), the rule and what to do, through
every door that takes a caller's id (the store, graph nodes and edge ends, decisions and their entities, the
entity linker, memories and their metadata entities, graph files, pack files, the CLI, MCP), and nothing is
written: a batch holding one bad id writes none of it. Ids stored before the rule still read, change and erase."""
from __future__ import annotations

import json
import subprocess

import pytest

from agentcontext import ContextGraph, Workspace
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.entities import EntityLinker
from agentcontext.errors import ValidationError
from agentcontext.ids import MAX_ID_BYTES
from agentcontext.knowledge import packs
from agentcontext.memory import AgentMemory
from agentcontext.model import Edge, Node
from agentcontext.store import sql_nodes

from .conftest import CLI

BAD = {  # id -> the words of the rule its message must carry
    "": "is empty",
    "   ": "is blank",
    "x" * 5_000_000: "bytes long in UTF-8, over the limit of 1,024",
    "y" * (MAX_ID_BYTES + 1): "bytes long in UTF-8, over the limit of 1,024",
    "é" * (MAX_ID_BYTES // 2 + 1): "bytes long in UTF-8, over the limit of 1,024",  # bytes, not characters
    "a\x00b": "U+0000",
    "line\nbreak": "U+000A",
    "tab\there": "U+0009",
    "del\x7f": "U+007F",
    "unit\x1fsep": "U+001F",
    "c1\x85next": "U+0085",
    "para\u2029graph": "U+2029",
}
GOOD = ["a b c", "Ünïcödé 名前 🙂", "urn:acme:design.agents#part", "z" * MAX_ID_BYTES,
        "é" * (MAX_ID_BYTES // 2)]


def assert_refused(exc: ValidationError, bad_id: str) -> None:
    message = exc.message
    assert BAD[bad_id] in message, message
    assert repr(bad_id[:20])[1:-1] in message  # the id (its start, escaped) is named...
    assert len(message) < 600  # ...cut for display
    assert "1 to 1,024 bytes" in message and "no control characters" in message and "choose another id" in message
    assert exc.data["max_bytes"] == MAX_ID_BYTES and len(exc.data["id"]) <= 200
    if len(bad_id) > 100:
        assert f"({len(bad_id):,} characters)" in message
    if bad_id.startswith("é"):
        assert f"is {MAX_ID_BYTES + 2:,} bytes long" in message


def state(ws: Workspace) -> tuple:
    """What the store holds: its records and its change log (bar the embedding cache: a decision's scenario is
    embedded before its record is checked, and the vector, keyed by the text's hash, is no record)."""
    s = ws.store
    return (s.count_nodes(), s.count_edges(), len(s.tombstones()),
            [c.seq for c in s.changes_since(0) if c.op != "vectors.put"])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_ws(request, tmp_path):
    if request.param == "postgres":
        ws = Workspace.open(url=request.getfixturevalue("pg_url"))
    else:
        ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    yield ws
    ws.close()


# --- the store, on both backends -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad_id", list(BAD), ids=[repr(k[:12]) + str(len(k)) for k in BAD])
def test_the_store_refuses_a_bad_id_and_writes_nothing_of_the_batch(backend_ws, bad_id):
    ws = backend_ws
    ws.store.put_nodes([Node(id="keep", kind="entity", namespace="graph:default")])
    before = state(ws)
    for write in (
        lambda: ws.store.put_nodes([Node(id="good1", kind="entity", namespace="graph:default"),
                                    Node(id=bad_id, kind="entity", namespace="graph:default")]),
        lambda: ws.store.put_edges([Edge(src="keep", type="related_to", dst="good2", namespace="graph:default"),
                                    Edge(src="keep", type="related_to", dst=bad_id, namespace="graph:default")]),
        lambda: ws.store.put_edges([Edge(src=bad_id, type="related_to", dst="keep", namespace="graph:default")]),
        lambda: ws.store.put_edges([Edge(src="keep", type=bad_id, dst="keep", namespace="graph:default")]),
        lambda: ws.store.put_tombstones([{"id": "gone"}, {"id": bad_id}]),
    ):
        with pytest.raises(ValidationError) as info:
            write()
        assert_refused(info.value, bad_id)
        assert state(ws) == before
    assert ws.store.get_node("good1") is None


def test_the_store_takes_any_printable_id_up_to_the_limit(backend_ws):
    ws = backend_ws
    ws.store.put_nodes([Node(id=i, kind="entity", namespace="graph:default") for i in GOOD])
    ws.store.put_edges([Edge(src=GOOD[0], type="related_to", dst=i, namespace="graph:default") for i in GOOD[1:]])
    assert set(ws.store.get_nodes(GOOD)) == set(GOOD)
    assert {e.dst for e in ws.store.edges(src=[GOOD[0]])} == set(GOOD[1:])


def test_a_store_holding_ids_from_before_the_rule_still_reads_changes_and_erases_them(backend_ws, monkeypatch):
    ws = backend_ws
    old = ["legacy\nid", "w" * 3000] + (["nul\x00id"] if ws.store.backend == "sqlite" else [])
    with monkeypatch.context() as m:  # the write path as it was before the rule
        m.setattr(sql_nodes, "id_problem", lambda value: None)  # the check moved with the nodes part
        ws.store.put_nodes([Node(id=i, kind="entity", namespace="graph:default", content="old") for i in old])
    assert set(ws.store.get_nodes(old)) == set(old)  # reads
    ws.store.put_nodes([Node(id=i, kind="entity", namespace="graph:default", content="updated") for i in old])
    assert {n.content for n in ws.store.get_nodes(old).values()} == {"updated"}
    ws.store.put_nodes([Node(id="fresh", kind="entity", namespace="graph:default")])
    ws.store.put_edges([Edge(src=i, type="mentions", dst="fresh", namespace="graph:default") for i in old])
    assert len(ws.store.edges(dst=["fresh"])) == len(old)
    assert ws.store.retract_nodes([old[0]]) == 1
    ws.store.purge_nodes(old, reason="erasure")
    assert ws.store.get_nodes(old) == {} and {t["id"] for t in ws.store.tombstones()} == set(old)


# --- the Python doors ---------------------------------------------------------------------------------------------
SOME_BAD = ["", "x" * 5_000_000, "a\x00b", "line\nbreak", "del\x7f"]
SOME_IDS = [repr(k[:8]) + str(len(k)) for k in SOME_BAD]


@pytest.mark.parametrize("bad_id", SOME_BAD, ids=SOME_IDS)
def test_graph_nodes_and_edge_ends_refuse_a_bad_id(ws, bad_id):
    graph = ContextGraph(workspace=ws)
    graph.add_node("alice", "person")
    before = state(ws)
    for write in (lambda: graph.add_node(bad_id, "person"),
                  lambda: graph.add_nodes([{"id": "bob"}, {"id": bad_id}]),
                  lambda: graph.add_edge("alice", bad_id, "knows"),
                  lambda: graph.add_edges([{"source": "alice", "target": "carol"},
                                           {"source": bad_id, "target": "alice"}])):
        with pytest.raises(ValidationError) as info:
            write()
        if bad_id:  # an empty one is refused as missing (add_nodes item 0 has no node_id) before the store
            assert BAD[bad_id] in info.value.message and "choose another id" in info.value.message
        assert state(ws) == before
    assert graph.find_node("bob") is None and graph.find_node("carol") is None


@pytest.mark.parametrize("bad_id", SOME_BAD[1:], ids=SOME_IDS[1:])
def test_decisions_and_entities_refuse_a_bad_id(ws, bad_id):
    graph = ContextGraph(workspace=ws)
    recorder = DecisionRecorder(graph)
    recorder.record_decision("refund", "A first refund", "", "approved", 0.9, decision_id="d0")
    before = state(ws)
    for write in (
        lambda: recorder.record_decision("refund", "A refund", "", "denied", 0.9, entities=["acme", bad_id]),
        lambda: recorder.record_decision("refund", "A refund", "", "denied", 0.9, decision_id=bad_id),
        lambda: recorder.record_decisions([{"category": "refund", "scenario": "ok", "reasoning": "",
                                            "outcome": "approved", "confidence": 0.5, "decision_id": "d1"},
                                           {"category": "refund", "scenario": "bad", "reasoning": "",
                                            "outcome": "approved", "confidence": 0.5, "entities": [bad_id]}]),
        lambda: EntityLinker(graph=graph).create_entity(bad_id, "Acme"),
    ):
        with pytest.raises(ValidationError):
            write()
        assert state(ws) == before
    assert graph.find_node("acme") is None


@pytest.mark.parametrize("bad_id", SOME_BAD[1:], ids=SOME_IDS[1:])
def test_memories_refuse_a_bad_id_or_metadata_entity_before_writing_any(ws, bad_id):
    graph = ContextGraph(workspace=ws)
    memory = AgentMemory(workspace=ws, namespace="m", retention_policy="unlimited", entity_graph=graph)
    memory.store("A first memory", metadata={"entities": ["acme"]})
    before = state(ws)
    for write in (lambda: memory.batch_store([{"content": "good", "id": "good1"}, {"content": "bad", "id": bad_id}]),
                  lambda: memory.batch_store([{"content": "good"},
                                              {"content": "bad", "metadata": {"entities": ["globex", bad_id]}}])):
        with pytest.raises(ValidationError):
            write()
        assert state(ws) == before
    assert memory.count() == 1 and graph.find_node("globex") is None


@pytest.mark.parametrize("fmt", ["json", "node_link", "graphml"])
@pytest.mark.parametrize("bad_id", SOME_BAD[2:], ids=SOME_IDS[2:])
def test_a_graph_file_with_a_bad_id_is_refused_and_leaves_the_graph_as_it_was(ws, tmp_path, fmt, bad_id):
    graph = ContextGraph(workspace=ws)
    graph.add_edge("alice", "bob", "knows")
    saved = tmp_path / "g.json"
    graph.save_to_file(str(saved))
    before = state(ws)
    if fmt == "json":
        data = json.loads(saved.read_text())
        data["edges"][0]["dst"] = "graph:default/" + bad_id
        path = saved
        path.write_text(json.dumps(data))
    elif fmt == "node_link":
        path = tmp_path / "nl.json"
        path.write_text(json.dumps({"directed": True, "nodes": [{"id": "carol"}, {"id": bad_id}],
                                    "links": [{"source": "carol", "target": bad_id}]}))
    else:
        if "\x00" in bad_id or "\x7f" in bad_id:
            pytest.skip("XML 1.0 cannot hold this character at all (the parser refuses the file)")
        path = tmp_path / "g.graphml"
        esc = bad_id.replace("\n", "&#10;")
        path.write_text('<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
                        f'<graph edgedefault="directed"><node id="carol"/><node id="{esc}"/>'
                        f'<edge source="carol" target="{esc}"/></graph></graphml>')
    with pytest.raises(ValidationError) as info:
        graph.load_from_file(str(path))
    assert BAD[bad_id] in info.value.message and str(path) in info.value.message
    assert state(ws) == before and graph.find_node("alice") is not None and graph.find_node("carol") is None


def test_a_pack_file_whose_selector_ends_in_a_newline_is_refused(ws, tmp_path):
    root = tmp_path / "pack"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "intro.md").write_text("Intro.", encoding="utf-8")
    (root / "manifest.yaml").write_text(json.dumps({  # JSON is YAML: the newline is kept exactly
        "schema": "nenjo.knowledge.v1", "slug": "core", "manifest": {"name": "Core", "pack_id": "core", "docs": [
            {"selector": "intro\n", "source_path": "docs/intro.md", "title": "Intro", "summary": "Intro."}]}}))
    before = state(ws)
    with pytest.raises(ValidationError):
        packs.install_folder(ws, root)
    assert state(ws) == before


# --- the CLI in a subprocess and MCP in a real client session --------------------------------------------------
def test_the_cli_refuses_a_bad_node_id_and_writes_nothing(tmp_path):
    home = tmp_path / ".agentcontext"
    Workspace.open(home=home, create=True).close()
    for bad_id in ("line\nbreak", "x" * 20_000):
        proc = subprocess.run([*CLI, "--home", str(home), "graph", "node", "add", bad_id, "--json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["type"] == "ValidationError" and "choose another id" in error["message"]
        assert len(proc.stdout) < 2000  # the id is cut for display
        proc = subprocess.run([*CLI, "--home", str(home), "graph", "edge", "add", "alice", bad_id, "--json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["type"] == "ValidationError"
    ws = Workspace.open(home=home)
    try:
        assert ws.store.count_nodes() == 0 and ws.store.count_edges() == 0
    finally:
        ws.close()


def test_mcp_record_decision_refuses_a_bad_entity_id(ws):
    from agentcontext.mcp_server import build_server

    from .test_mcp import call, run

    before = state(ws)

    async def script(client):
        return [await call(client, "record_decision", {"category": "refund", "scenario": "A refund", "reasoning": "",
                                                       "outcome": "denied", "confidence": 0.9,
                                                       "entities": ["acme", bad]})
                for bad in ("a\x00b", "line\nbreak", "del\x7f")]

    for is_error, data in run(build_server(ws, capabilities=["decisions"]), script):
        assert is_error and data["error"]["type"] == "ValidationError", data
        assert "choose another id" in data["error"]["message"]
    assert state(ws) == before
