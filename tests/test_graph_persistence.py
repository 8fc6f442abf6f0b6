"""save_to_file / load_from_file (JSON and Markdown) round-trip everything; cross-graph navigation."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pytest

from agentcontext import ContextGraph, NotFoundError, ValidationError, Workspace


def rich_graph() -> tuple[ContextGraph, str]:
    g = ContextGraph(name="kb")
    g.add_node("alice", "person", content="Alice, engineer", properties={"team": "core"}, tags=["staff"])
    g.add_node("acme", "company", properties={"country": "DE"}, valid_from="2020-01-01T00:00:00Z")
    g.add_edge("alice", "acme", "works_at", weight=0.9, properties={"since": 2021})
    g.add_edge("alice", "bob", "knows", valid_until="2030-01-01T00:00:00Z")
    g.add_edge("bob", "carol", "knows")
    g.add_node("alice", "person", content="Alice, staff engineer", properties={"team": "platform"})  # version 2
    middle = datetime.now(timezone.utc).isoformat()
    g.add_edge("alice", "acme", "works_at", weight=0.5)  # an update: the 0.9 interval is retracted
    g.retract_edge("bob", "carol", "knows")
    g.retract_node("carol")
    g.purge_node("dave_never_existed")  # nothing to purge, no tombstone
    g.add_node("eve", "person", content="secret")
    g.purge_node("eve", reason="GDPR Art. 17")
    return g, middle


def snapshot(g: ContextGraph, middle: str) -> dict:
    return {
        "nodes": sorted((n["id"], n["type"], n["content"], json.dumps(n["properties"]), n["version"], n["valid_from"])
                        for n in g.find_nodes()),
        "edges": sorted((e["source"], e["type"], e["target"], e["weight"], e["valid_until"]) for e in g.find_edges()),
        "then_edges": sorted((e["source"], e["type"], e["target"], e["weight"]) for e in g.find_edges(as_of=middle)),
        "then_nodes": sorted((n["id"], n["version"]) for n in g.find_nodes(as_of=middle)),
        "history": [(v["version"], v["content"], v["retracted_at"] is not None) for v in g.node_history("alice")],
        "carol": [(v["version"], v["retracted_at"] is not None) for v in g.node_history("carol")],
        "tombstones": [(t["node_id"], t["reason"], t["purged_at"]) for t in g.tombstones()],
        "neighbors": [n["id"] for n in g.get_neighbors("alice", hops=2)],
        "neighbors_then": [n["id"] for n in g.get_neighbors("alice", hops=2, as_of=middle)],
        "tags": g.find_node("alice")["tags"],
    }


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_round_trip_keeps_history_retractions_and_tombstones(tmp_path, fmt) -> None:
    g, middle = rich_graph()
    before = snapshot(g, middle)
    assert before["tombstones"][0][:2] == ("eve", "GDPR Art. 17")
    assert before["carol"] == [(1, False), (2, True)]
    assert before["neighbors_then"] == ["acme", "bob", "carol"] and before["neighbors"] == ["acme", "bob"]
    path = tmp_path / ("graph.json" if fmt == "json" else "graph_md")
    g.save_to_file(str(path), format=fmt)
    restored = ContextGraph(name="kb")
    restored.load_from_file(str(path), format=fmt)
    assert snapshot(restored, middle) == before
    # loading into a differently named graph remaps the ids into its namespace
    other = ContextGraph(name="copy")
    other.load_from_file(str(path))
    assert snapshot(other, middle) == before
    assert other.find_node("alice")["namespace"] == "graph:copy"


def test_load_replaces_state_and_saving_to_disk_store_works(tmp_path) -> None:
    g, middle = rich_graph()
    g.save_to_file(str(tmp_path / "g.json"))
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    target = ContextGraph(workspace=ws, name="kb")
    target.add_node("stale", "x")
    target.load_from_file(str(tmp_path / "g.json"))
    assert target.find_node("stale") is None
    assert snapshot(target, middle)["nodes"] == snapshot(g, middle)["nodes"]
    ws.close()


def test_markdown_directory_is_readable_one_file_per_node(tmp_path) -> None:
    g, _ = rich_graph()
    g.save_to_file(str(tmp_path / "md"), format="markdown")
    files = sorted(p.name for p in (tmp_path / "md" / "nodes").iterdir())
    assert len(files) == 4  # alice, acme, bob, carol (retracted, kept), and no eve (purged)
    alice = next((tmp_path / "md" / "nodes").glob("alice-*.md")).read_text()
    assert alice.startswith("---\n") and alice.rstrip().endswith("Alice, staff engineer")
    assert "GDPR Art. 17" in (tmp_path / "md" / "graph.md").read_text()
    assert "secret" not in "".join(p.read_text() for p in (tmp_path / "md").rglob("*.md"))


def test_saves_are_atomic_and_leave_no_temporary_files(tmp_path, monkeypatch) -> None:
    g, _ = rich_graph()
    path = tmp_path / "g.json"
    g.save_to_file(str(path))
    first = path.read_text()
    g.add_node("zed", "person")
    g.save_to_file(str(path))
    assert path.read_text() != first and json.loads(path.read_text())["format"] == "agentcontext.graph.v1"
    g.save_to_file(str(tmp_path / "md"), format="markdown")
    g.save_to_file(str(tmp_path / "md"), format="markdown")  # replacing a directory
    assert sorted(os.listdir(tmp_path)) == ["g.json", "md"]
    # a save that dies half-way (disk full, a kill) leaves the previous file whole and no temp file
    before = path.read_text()

    def dies_half_way(obj, fh, **kw):
        fh.write('{"format": "agentcontext.graph.v1", "nodes": [')
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", dies_half_way)
    with pytest.raises(OSError):
        g.save_to_file(str(path))
    monkeypatch.undo()
    assert path.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["g.json", "md"]
    os.symlink(path, tmp_path / "link.json")
    with pytest.raises(ValidationError):
        g.save_to_file(str(tmp_path / "link.json"))


def test_load_rejects_foreign_files(tmp_path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"nodes": []}))
    with pytest.raises(ValidationError):
        ContextGraph().load_from_file(str(tmp_path / "x.json"))
    with pytest.raises(NotFoundError):
        ContextGraph().load_from_file(str(tmp_path / "missing.json"))


def test_seed_cross_graph_example() -> None:
    domain_graph = ContextGraph()
    decision_graph = ContextGraph()
    domain_graph.add_node("microservices", "architecture", properties={"style": "distributed"})
    decision_graph.add_node("deploy_k8s", "decision", properties={"outcome": "approved"})
    link_id = domain_graph.link_graph(other_graph=decision_graph, source_node_id="microservices",
                                      target_node_id="deploy_k8s", link_type="INFORMED_BY")
    target_graph, entry_node = domain_graph.navigate_to(link_id)
    assert target_graph is decision_graph and entry_node == "deploy_k8s"
    path = domain_graph.cross_graph_path(source_node_id="microservices", target_graph=decision_graph,
                                         target_node_id="deploy_k8s", max_hops=5)
    assert "Reachable: {}, hops: {}".format(path["reachable"], path["hop_count"]) == "Reachable: True, hops: 1"
    assert path["links_used"] == [link_id]
    assert [p["node_id"] for p in path["path"]] == ["microservices", "deploy_k8s"]


def test_cross_graph_path_walks_inside_both_graphs() -> None:
    a, b, c = ContextGraph(name="a"), ContextGraph(name="b"), ContextGraph(name="c")
    a.add_edges([{"source": "a1", "target": "a2", "type": "r", "weight": 0.5}])
    b.add_edges([{"source": "b1", "target": "b2", "type": "r"}, {"source": "b2", "target": "b3", "type": "r"}])
    c.add_node("c1", "x")
    a.link_graph(b, "a2", "b1", "NEXT")
    b.link_graph(c, "b3", "c1")
    path = a.cross_graph_path("a1", c, "c1", max_hops=10)
    assert path["reachable"] and path["hop_count"] == 5 and path["cross_graph_links_used"] == 2
    assert [(p["graph"], p["node_id"]) for p in path["path"]] == [
        ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("b", "b3"), ("c", "c1")]
    assert path["confidence_decay"] == pytest.approx(0.5)
    short = a.cross_graph_path("a1", c, "c1", max_hops=4)
    assert short["reachable"] is False and short["path"] == []
    with pytest.raises(NotFoundError):
        a.link_graph(b, "a1", "nope")
    with pytest.raises(NotFoundError):
        a.navigate_to("xlink_missing")


def test_links_survive_save_and_are_re_pointed_with_resolve_links(tmp_path) -> None:
    a, b = ContextGraph(name="a"), ContextGraph(name="b")
    a.add_node("x", "t")
    b.add_node("y", "t")
    link = a.link_graph(b, "x", "y")
    a.save_to_file(str(tmp_path / "a.json"))
    a2 = ContextGraph(name="a")
    a2.load_from_file(str(tmp_path / "a.json"))
    assert a2.navigate_to(link) == (b, "y")  # b is still alive in this process
    b2 = ContextGraph(name="b")
    b2.add_node("y", "t")
    assert a2.resolve_links({"b": b2}) == 1
    assert a2.navigate_to(link) == (b2, "y")
