"""load_from_file / load_graph read graphs other tools write: networkx node-link JSON and GraphML (written by
networkx itself), plain {"nodes", "edges"} JSON with common spellings; bad files name the file and the element."""
from __future__ import annotations

import json

import networkx as nx
import pytest
from networkx.readwrite import json_graph

from agentcontext import AgentContext, ContextGraph, ValidationError, VectorStore, Workspace
from agentcontext.erasure import erase_workspace_entity


def sample() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_node("FastAPI", type="framework", stars=70000, content="A web framework")
    g.add_node("Starlette", type="framework")
    g.add_node("Pydantic", type="library", typed=True)
    g.add_edge("FastAPI", "Starlette", type="built_on", weight=0.9)
    g.add_edge("FastAPI", "Pydantic", type="uses", weight=0.5, since="2018")
    return g


def check(graph: ContextGraph) -> None:
    assert graph.stats()["node_count"] == 3 and graph.stats()["edge_count"] == 2
    fast = graph.find_node("FastAPI")
    assert fast["type"] == "framework" and fast["properties"]["stars"] == 70000
    assert graph.find_node("Pydantic")["properties"]["typed"] is True
    assert [n["id"] for n in graph.get_neighbors("FastAPI", relationship_types=["built_on"])] == ["Starlette"]
    uses = graph.find_edges("uses")[0]
    assert (uses["source"], uses["target"], uses["weight"]) == ("FastAPI", "Pydantic", 0.5)
    assert uses["properties"]["since"] == "2018"


@pytest.mark.parametrize("edges", ["links", "edges"])
def test_networkx_node_link_json(tmp_path, edges) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(json_graph.node_link_data(sample(), edges=edges)))
    graph = ContextGraph()
    graph.add_node("old", "x")
    out = graph.load_from_file(str(path))
    assert out == {"format": "node_link", "nodes": 3, "edges": 2, "skipped_erased": []}
    assert graph.find_node("old") is None  # replaced, like every load
    check(graph)
    assert graph.find_node("FastAPI")["content"] == "A web framework"


def test_graphml_written_by_networkx(tmp_path) -> None:
    path = tmp_path / "g.graphml"
    nx.write_graphml(sample(), path)
    graph = ContextGraph()
    assert graph.load_from_file(str(path))["format"] == "graphml"
    check(graph)
    undirected = nx.Graph([("a", "b")])
    nx.write_graphml(undirected, tmp_path / "u.xml")
    ctx = AgentContext(vector_store=VectorStore(backend="inmemory"), knowledge_graph=ContextGraph())
    assert ctx.load_graph(str(tmp_path / "u.xml"))["edge_count"] == 1
    assert ctx.knowledge_graph.find_edges()[0]["properties"]["directed"] is False


def test_plain_json_with_common_spellings(tmp_path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({
        "nodes": [{"id": "FastAPI", "type": "framework", "stars": 70000, "description": "A web framework"},
                  {"node_id": "Starlette", "node_type": "framework"},
                  {"name": "Pydantic", "label": "library", "properties": {"typed": True}}],
        "edges": [{"source_id": "FastAPI", "target_id": "Starlette", "relation": "built_on", "weight": 0.9},
                  {"from": "FastAPI", "to": "Pydantic", "edge_type": "uses", "confidence": 0.5, "since": "2018"}]}))
    graph = ContextGraph()
    assert graph.load_from_file(str(path), format="plain")["format"] == "plain"
    check(graph)
    with pytest.raises(ValidationError, match="not a node_link graph"):
        graph.load_from_file(str(path), format="node_link")


def test_erased_nodes_stay_out_of_foreign_files(tmp_path) -> None:
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    graph.add_node("Pydantic", "library")
    erase_workspace_entity(ws, "Pydantic", reason="test")
    path = tmp_path / "g.json"
    path.write_text(json.dumps(json_graph.node_link_data(sample(), edges="links")))
    out = graph.load_from_file(str(path))
    assert out["skipped_erased"] == [graph.store_id("Pydantic")] and out["nodes"] == 2 and out["edges"] == 1
    assert graph.find_node("Pydantic") is None
    ws.close()


BAD_JSON = [
    ({"nodes": [{"type": "x"}], "edges": []}, "node 0 has no id"),
    ({"nodes": ["a", "a"], "edges": []}, "node 1: node id 'a' appears twice"),
    ({"nodes": ["x", {"id": [1]}], "edges": []}, "node 1: id must be"),
    ({"nodes": [7.5], "edges": []}, "node 0 is a float"),
    ({"nodes": ["a", "b"], "edges": [{"source": "a"}]}, "edge 0 needs a source"),
    ({"nodes": ["a", "b"], "edges": [["a", "b"], ["a", "zz"]]}, "edge 1 (a -> zz): target 'zz' is not a node"),
    ({"nodes": ["a", "b"], "edges": [{"source": "a", "target": "b", "weight": "heavy"}]}, "edge 0 (a -> b): weight"),
    ({"nodes": ["a"], "edges": [3]}, "edge 0 is a int"),
    ({"directed": True, "nodes": ["a"], "links": [], "graph": {}, "x": 1, "nodes_extra": 0}, None),
]


@pytest.mark.parametrize("doc,message", BAD_JSON)
def test_bad_json_names_the_file_and_element_and_changes_nothing(tmp_path, doc, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    graph = ContextGraph()
    graph.add_node("keep", "x")
    if message is None:  # a well-formed file, for contrast
        assert graph.load_from_file(str(path))["nodes"] == 1
        return
    with pytest.raises(ValidationError) as info:
        graph.load_from_file(str(path))
    assert str(path) in str(info.value) and message in str(info.value)
    assert graph.find_node("keep") is not None


BAD_GRAPHML = [
    ("<graphml><graph><node/></graph></graphml>", "<node> 0 has no id"),
    ("<graphml><graph><node id='a'/><edge source='a' target='b'/></graph></graphml>",
     "<edge> 0 (a -> b): target 'b' is not a node"),
    ("<graphml><key id='d0' for='node' attr.name='n' attr.type='int'/><graph><node id='a'><data key='d0'>x"
     "</data></node></graph></graphml>", "<node> 0: invalid literal"),
    ("<graphml><graph><node id='a'><data key='nokey'>1</data></node></graph></graphml>",
     "<data key='nokey'> names no declared <key>"),
    ("<graphml><graph><node id='a'>", "not well-formed XML"),
    ("<?xml version='1.0'?><!DOCTYPE g [<!ENTITY x 'y'>]><graphml/>", "DOCTYPE"),
    ("<gexf/>", "not <graphml>"),
    ("<graphml><graph/><graph/></graphml>", "expected one <graph>"),
]


@pytest.mark.parametrize("text,message", BAD_GRAPHML)
def test_bad_graphml_names_the_file_and_element(tmp_path, text, message) -> None:
    path = tmp_path / "bad.graphml"
    path.write_text(text)
    graph = ContextGraph()
    graph.add_node("keep", "x")
    with pytest.raises(ValidationError) as info:
        graph.load_from_file(str(path))
    assert str(path) in str(info.value) and message in str(info.value)
    assert graph.find_node("keep") is not None


def test_unknown_format_is_refused(tmp_path) -> None:
    path = tmp_path / "g.json"
    path.write_text("{}")
    with pytest.raises(ValidationError, match="use one of json, markdown, node_link, plain, graphml"):
        ContextGraph().load_from_file(str(path), format="gexf")
