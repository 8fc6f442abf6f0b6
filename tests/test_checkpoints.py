"""Checkpoints: snapshots, diffs (decisions and relationships added/removed/modified), flush to the store."""
from __future__ import annotations

import pytest

from agentcontext import AgentContext, NotFoundError, ValidationError, Workspace
from agentcontext.graph.context_graph import ContextGraph


def test_seed_checkpoint_example_with_real_changes():
    context = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    keep = context.record_decision(category="ops", scenario="Scale up", reasoning="Load > 80%",
                                   outcome="scaled_to_10_replicas", confidence=0.97, entities=["web"])
    gone = context.record_decision(category="ops", scenario="Pause batch jobs", reasoning="Peak hours",
                                   outcome="paused", confidence=0.7)
    context.knowledge_graph.add_node("web", "service")
    context.knowledge_graph.add_node("db", "service")
    context.knowledge_graph.add_edge("web", "db", "depends_on", weight=0.5)

    before = context.checkpoint("before_inference")
    assert before["decision_count"] == 2 and before["relationship_count"] == 2

    # ... run reasoning, record decisions ...
    new = context.record_decision(category="ops", scenario="Add read replica", reasoning="DB CPU at 90%",
                                  outcome="replica_added", confidence=0.9, caused_by=[keep], entities=["db"])
    context.knowledge_graph.store.retract_nodes([gone])
    context.knowledge_graph.add_edge("web", "db", "depends_on", weight=0.9)  # modified weight
    context.checkpoint("after_inference")

    diff = context.diff_checkpoints("before_inference", "after_inference")
    assert [d["decision_id"] for d in diff["decisions_added"]] == [new]
    assert diff["decisions_added"][0]["outcome"] == "replica_added"
    assert [d["decision_id"] for d in diff["decisions_removed"]] == [gone]
    assert diff["decisions_modified"] == []
    added = {(r["source"], r["type"], r["target"]) for r in diff["relationships_added"]}
    store_id = context.knowledge_graph.store_id
    assert added == {(keep, "caused", new), (new, "involves", store_id("db"))}
    assert [(r["type"], r["weight"], r["previous"]["weight"]) for r in diff["relationships_modified"]] == [
        ("depends_on", 0.9, 0.5)]
    assert diff["relationships_removed"] == []
    assert diff["summary"]["decisions_added"] == 1 and gone in diff["nodes_removed"]
    # and the other way round
    back = context.diff_checkpoints("after_inference", "before_inference")
    assert [d["decision_id"] for d in back["decisions_removed"]] == [new]
    assert {(r["type"]) for r in back["relationships_removed"]} == {"caused", "involves"}
    same = context.diff_checkpoints("after_inference", "after_inference")
    assert all(v == 0 for v in same["summary"].values())


def test_modified_decision_shows_up():
    context = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    did = context.record_decision(category="ops", scenario="Scale up", reasoning="Load", outcome="scaled",
                                  confidence=0.9)
    context.checkpoint("a")
    store = context.knowledge_graph.store
    node = store.get_node(did)
    node.props = {**node.props, "outcome": "scaled_to_20"}
    store.put_nodes([node])
    context.checkpoint("b")
    diff = context.diff_checkpoints("a", "b")
    changed = [(d["outcome"], d["previous"]["outcome"]) for d in diff["decisions_modified"]]
    assert changed == [("scaled_to_20", "scaled")]


def test_flushed_checkpoints_survive_a_restart(tmp_path):
    home = tmp_path / "ws"
    ws = Workspace.open(home=home, create=True)
    context = AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True)
    context.checkpoint("start")
    first = context.record_decision(category="ops", scenario="Scale up", reasoning="Load", outcome="scaled",
                                    confidence=0.9)
    context.checkpoint("after_first")
    assert context.flush_checkpoint("start")["decision_count"] == 0
    context.flush_checkpoint("after_first")
    context.checkpoint("not_flushed")
    ws.close()

    ws2 = Workspace.open(home=home)
    restored = AgentContext(knowledge_graph=ContextGraph(workspace=ws2), decision_tracking=True)
    assert restored.list_checkpoints() == ["after_first", "start"]
    diff = restored.diff_checkpoints("start", "after_first")
    assert [d["decision_id"] for d in diff["decisions_added"]] == [first]
    with pytest.raises(NotFoundError):
        restored.diff_checkpoints("start", "not_flushed")
    second = restored.record_decision(category="ops", scenario="Scale down", reasoning="Quiet", outcome="down",
                                      confidence=0.8)
    restored.checkpoint("now")
    assert [d["decision_id"] for d in restored.diff_checkpoints("after_first", "now")["decisions_added"]] == [second]


def test_checkpoint_errors():
    context = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    with pytest.raises(ValidationError):
        context.checkpoint("")
    with pytest.raises(NotFoundError):
        context.flush_checkpoint("never_taken")
    with pytest.raises(RuntimeError):
        AgentContext().checkpoint("x")


@pytest.mark.parametrize("seed", range(4))
def test_diff_matches_a_model_of_random_changes(seed: int):
    import random

    rng = random.Random(seed)
    graph = ContextGraph()
    context = AgentContext(knowledge_graph=graph, decision_tracking=True)
    for name in "abcdef":
        graph.add_node(name, "service")
    live_dec = set(context.record_decisions([dict(category="x", scenario=f"seed decision {i}", outcome="o",
                                                  confidence=0.5) for i in range(6)]))
    edges = {}  # (src, type, dst) -> weight
    for _ in range(8):
        s, t = rng.sample("abcdef", 2)
        w = rng.choice([0.5, 1.0])
        graph.add_edge(s, t, "calls", weight=w)
        edges[(graph.store_id(s), "calls", graph.store_id(t))] = w
    context.checkpoint("a")
    dec_before, edges_before = set(live_dec), dict(edges)
    for step in range(25):
        op = rng.choice(["add_dec", "drop_dec", "edge", "drop_edge"])
        if op == "add_dec":
            live_dec.add(context.record_decision(category="x", scenario=f"new {seed} {step}", reasoning="",
                                                 outcome="o", confidence=0.5))
        elif op == "drop_dec" and live_dec:
            victim = rng.choice(sorted(live_dec))
            graph.store.retract_nodes([victim])
            live_dec.discard(victim)
        elif op == "edge":
            s, t = rng.sample("abcdef", 2)
            w = rng.choice([0.5, 1.0, 2.0])
            graph.add_edge(s, t, "calls", weight=w)
            edges[(graph.store_id(s), "calls", graph.store_id(t))] = w
        elif op == "drop_edge" and edges:
            key = rng.choice(sorted(edges))
            graph.retract_edge(graph.user_id(key[0]), graph.user_id(key[2]), "calls")
            del edges[key]
    context.checkpoint("b")
    diff = context.diff_checkpoints("a", "b")
    assert {d["decision_id"] for d in diff["decisions_added"]} == live_dec - dec_before
    assert {d["decision_id"] for d in diff["decisions_removed"]} == dec_before - live_dec
    triple = [(r["source"], r["type"], r["target"]) for r in diff["relationships_added"]]
    assert set(triple) == set(edges) - set(edges_before)
    assert {(r["source"], r["type"], r["target"]) for r in diff["relationships_removed"]} == set(
        edges_before) - set(edges)
    changed = {k for k in set(edges) & set(edges_before) if edges[k] != edges_before[k]}
    assert {(r["source"], r["type"], r["target"]) for r in diff["relationships_modified"]} == changed
