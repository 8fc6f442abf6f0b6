"""Causal chains follow explicit causal edges only; checked against networkx on generated decision graphs."""
from __future__ import annotations

import random

import networkx as nx
import pytest

from agentcontext import AgentContext, CausalChainAnalyzer, CycleError, DecisionRecorder, ValidationError
from agentcontext.graph.context_graph import ContextGraph

SHARED_GRAPH = ContextGraph()  # decisions of every generated case share one store (ids differ per case)


def _record_random_dag(rec: DecisionRecorder, rng: random.Random, case: int, n: int,
                       p: float) -> tuple[list[str], nx.DiGraph]:
    """Decisions 0..n-1; each may be caused/informed by earlier ones. Some links are added afterwards."""
    items, later, oracle = [], [], nx.DiGraph()
    for i in range(n):
        causes = [j for j in range(i) if rng.random() < p]
        now, after = [], []
        for j in causes:
            (after if rng.random() < 0.3 else now).append(j)
        kinds = {j: rng.choice(["caused", "informed"]) for j in now}
        items.append(dict(decision_id=f"c{case}_d{i}", category="gen", scenario=f"case {case} decision {i}",
                          reasoning=f"step {i}", outcome=f"o{i}", confidence=0.5,
                          entities=[f"shared_{rng.randrange(3)}"],  # shared entities must never imply causes
                          caused_by=[f"c{case}_d{j}" for j in now if kinds[j] == "caused"],
                          informed_by=[f"c{case}_d{j}" for j in now if kinds[j] == "informed"]))
        later += [(j, i) for j in after]
        oracle.add_node(f"c{case}_d{i}")
        oracle.add_edges_from((f"c{case}_d{j}", f"c{case}_d{i}") for j in causes)
    ids = rec.record_decisions(items)
    for j, i in later:
        rec.link_decisions(f"c{case}_d{j}", f"c{case}_d{i}", relationship=rng.choice(["caused", "informed"]))
    return ids, oracle


@pytest.mark.parametrize("case", range(12))
def test_causal_chain_matches_networkx(case: int):
    rng = random.Random(case)
    rec = DecisionRecorder(SHARED_GRAPH)
    analyzer = CausalChainAnalyzer(graph_store=SHARED_GRAPH)
    ids, oracle = _record_random_dag(rec, rng, case, n=rng.randint(8, 30), p=rng.choice([0.08, 0.15, 0.3]))
    for start in rng.sample(ids, 5):
        for direction, g in (("downstream", oracle), ("upstream", oracle.reverse(copy=False))):
            for depth in (1, 2, 5, None):
                expect = nx.single_source_shortest_path_length(g, start, cutoff=depth)
                expect.pop(start)
                chain = analyzer.get_causal_chain(start, direction=direction, max_depth=depth)
                got = {d.decision_id: d.metadata["causal_distance"] for d in chain}
                assert got == expect, (case, start, direction, depth)
                assert len(chain) == len(got)  # each decision once
                dists = [d.metadata["causal_distance"] for d in chain]
                assert dists == sorted(dists)  # nearest first
                for d in chain:  # the path is a real shortest path in the oracle
                    path = d.metadata["path"]
                    assert path[0] == start and path[-1] == d.decision_id
                    assert len(path) - 1 == d.metadata["causal_distance"]
                    assert all(g.has_edge(a, b) for a, b in zip(path, path[1:]))
                    assert set(d.metadata["relationships"]) <= {"caused", "informed"}


def test_seed_style_chain_through_agent_context():
    ctx = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    root = ctx.record_decision(category="model_selection", scenario="Choose LLM for production reasoning pipeline",
                               reasoning="GPT-4 benchmark advantage justifies 3x cost increase",
                               outcome="selected_gpt4", confidence=0.91, entities=["gpt-4", "gpt-3.5"])
    budget = ctx.record_decision(category="budget", scenario="Raise inference budget", reasoning="GPT-4 costs 3x",
                                 outcome="budget_raised", confidence=0.8, caused_by=[root], entities=["gpt-4"])
    cache = ctx.record_decision(category="infra", scenario="Add a response cache", reasoning="cut GPT-4 spend",
                                outcome="cache_added", confidence=0.85, informed_by=[budget])
    # shares an entity with root but nobody said it was caused by it
    unrelated = ctx.record_decision(category="eval", scenario="Benchmark gpt-3.5 again", reasoning="curiosity",
                                    outcome="benchmarked", confidence=0.5, entities=["gpt-3.5", "gpt-4"])
    chain = ctx.get_causal_chain(root, direction="downstream", max_depth=5)
    assert [d.decision_id for d in chain] == [budget, cache]
    assert [d.metadata["causal_distance"] for d in chain] == [1, 2]
    assert unrelated not in [d.decision_id for d in chain]
    assert [d.decision_id for d in ctx.get_causal_chain(cache, direction="upstream")] == [budget, root]
    assert ctx.get_causal_chain(cache, direction="downstream") == []
    assert [d.decision_id for d in ctx.get_causal_chain(root, "downstream", max_depth=1)] == [budget]
    roots = CausalChainAnalyzer(ctx.knowledge_graph).get_root_causes(cache)
    assert [d.decision_id for d in roots] == [root]
    with pytest.raises(ValidationError):
        ctx.get_causal_chain(root, direction="sideways")


def test_links_that_close_a_cycle_are_refused():
    graph = ContextGraph()
    rec = DecisionRecorder(graph)
    a, b, c = rec.record_decisions([
        dict(category="x", scenario="a", outcome="a", confidence=0.5),
        dict(category="x", scenario="b", outcome="b", confidence=0.5),
        dict(category="x", scenario="c", outcome="c", confidence=0.5)])
    rec.link_decisions(a, b)
    rec.link_decisions(b, c, relationship="informed")
    with pytest.raises(CycleError) as err:
        rec.link_decisions(c, a)
    assert err.value.data["cycle"] == [c, a, b, c]
    with pytest.raises(CycleError):
        rec.link_decisions(a, a)
    with pytest.raises(ValidationError):
        rec.link_decisions(a, c, relationship="correlated")
    assert rec.link_decisions(a, c)  # a shortcut is not a cycle
    chain = CausalChainAnalyzer(graph).get_causal_chain(a, "downstream")
    assert {d.decision_id: d.metadata["causal_distance"] for d in chain} == {b: 1, c: 1}
