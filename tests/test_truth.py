"""Truth maintenance and support-aware retrieval (seed 003, truth_filter)."""
from __future__ import annotations

import pytest

from agentcontext import AgentMemory, ContextRetriever, TruthMaintenanceContextFilter, VectorStore
from agentcontext.errors import ProcessingError, ValidationError
from agentcontext.reasoning import FactSupport, Rule, TruthMaintenanceSession


class StaticVectorStore:
    def __init__(self, rows):
        self.rows = [dict(row) for row in rows]

    def search(self, *, query, limit):
        return self.rows[:limit]


def annotated_row(identifier, fact, score, text, supports=(), session_id="employment-session-1"):
    return {
        "id": identifier, "score": score, "content": text,
        "metadata": {"truth_maintenance": {"schema_version": 1, "session_id": session_id,
                                           "required_facts": [fact] if fact else [],
                                           "required_support_ids": list(supports)}},
    }


RULES = [Rule(rule_id="employment", name="employment", conditions=["Employed(?x)"], conclusion="Eligible(?x)")]


def test_seed_example_runs_unchanged():
    session = TruthMaintenanceSession(rules=RULES)
    session.apply(assertions=[FactSupport("v1", "Employed(Alice)")])
    store = StaticVectorStore([annotated_row("cached", "Eligible(Alice)", 0.9, "Alice is eligible")])
    retriever = ContextRetriever(vector_store=store, use_graph_expansion=False)
    gate = TruthMaintenanceContextFilter(session, session_id="employment-session-1")
    checked = retriever.retrieve("eligibility", truth_filter=gate)
    assert [result.content for result in checked] == ["Alice is eligible"]
    assert checked[0].metadata["truth_maintenance_validation"]["version"] == session.version
    session.apply(retractions=["v1"])
    checked = retriever.retrieve("eligibility", truth_filter=gate)
    assert checked == []
    assert store.rows[0]["content"] == "Alice is eligible"
    assert "truth_maintenance_validation" not in store.rows[0]["metadata"]


def test_session_forward_chaining_and_versions():
    rules = RULES + [Rule("loan", "loan", ["Eligible(?x)", "Resident(?x, ?c)"], "CanBorrow(?x, ?c)")]
    session = TruthMaintenanceSession(rules=rules)
    assert session.version == 0
    snap = session.apply(assertions=[FactSupport("e1", "Employed(Bob)"), FactSupport("r1", "Resident(Bob, NL)")])
    assert snap.version == 1 and "CanBorrow(Bob, NL)" in snap.facts and session.holds("Eligible( Bob )")
    assert session.apply() is snap  # nothing changed: same version
    session.apply(retractions=["r1"])
    assert session.version == 2 and not session.holds("CanBorrow(Bob, NL)") and snap.version == 1
    with pytest.raises(ValidationError):
        session.apply(retractions=["nope"])
    with pytest.raises(ValidationError):
        Rule("bad", "bad", ["A(?x)"], "B(?y)")


def test_filtering_rules_and_citations():
    session = TruthMaintenanceSession(rules=RULES)
    session.apply(assertions=[FactSupport("v1", "Employed(Alice)"), FactSupport("v2", "Employed(Alice)")])
    malformed = annotated_row("bad", "Eligible(Alice)", 0.99, "malformed")
    malformed["metadata"]["truth_maintenance"]["extra"] = 1
    rows = [
        annotated_row("stale", "Eligible(Carol)", 0.98, "Carol is eligible"),  # high score, unsupported
        malformed,
        {"id": "plain", "score": 0.97, "content": "unannotated", "metadata": {}},
        annotated_row("other-session", "Eligible(Alice)", 0.96, "x", session_id="another"),
        annotated_row("empty", None, 0.95, "declares nothing"),
        annotated_row("cites-v1", None, 0.5, "Alice via v1", supports=["v1"]),
        annotated_row("cites-v2", None, 0.4, "Alice via v2", supports=["v2"]),
        annotated_row("derived", "Eligible(Alice)", 0.3, "Alice eligible (any derivation)"),
    ]
    retriever = ContextRetriever(vector_store=StaticVectorStore(rows), use_graph_expansion=False)
    gate = TruthMaintenanceContextFilter(session, session_id="employment-session-1")
    got = [r.id for r in retriever.retrieve("alice", max_results=3, truth_filter=gate)]
    assert got == ["cites-v1", "cites-v2", "derived"]  # removal before ranking: stale ones never crowd them out
    session.apply(retractions=["v1"])
    got = [r.id for r in retriever.retrieve("alice", max_results=5, truth_filter=gate)]
    assert got == ["cites-v2", "derived"]  # only the record citing v1 goes; v2 still derives Eligible(Alice)


def test_graph_bundles_are_all_or_nothing():
    session = TruthMaintenanceSession(rules=RULES)
    session.apply(assertions=[FactSupport("v1", "Employed(Alice)")])
    good = annotated_row("bundle", "Eligible(Alice)", 0.9, "bundle")
    good["related_entities"] = [{"id": "e", "metadata": annotated_row("e", "Employed(Alice)", 0, "")["metadata"]}]
    stale = annotated_row("bundle2", "Eligible(Alice)", 0.8, "bundle with stale attachment")
    stale["related_relationships"] = [{"id": "r", "metadata": annotated_row("r", "Employed(Dan)", 0, "")["metadata"]}]
    retriever = ContextRetriever(vector_store=StaticVectorStore([good, stale]), use_graph_expansion=False)
    gate = TruthMaintenanceContextFilter(session, session_id="employment-session-1")
    assert [r.id for r in retriever.retrieve("q", truth_filter=gate)] == ["bundle"]


def test_version_change_in_flight_raises_and_unsupported_modes():
    session = TruthMaintenanceSession(rules=RULES)
    session.apply(assertions=[FactSupport("v1", "Employed(Alice)")])

    class MovingStore(StaticVectorStore):
        def search(self, *, query, limit):
            session.apply(assertions=[FactSupport(f"n{session.version}", "Employed(Zed)")])
            return super().search(query=query, limit=limit)

    rows = [annotated_row("cached", "Eligible(Alice)", 0.9, "Alice is eligible")]
    gate = TruthMaintenanceContextFilter(session, session_id="employment-session-1")
    with pytest.raises(ProcessingError):
        ContextRetriever(vector_store=MovingStore(rows), use_graph_expansion=False).retrieve("q", truth_filter=gate)
    retriever = ContextRetriever(vector_store=StaticVectorStore(rows))
    for mode in ("global", "drift", "hybrid"):
        with pytest.raises(ValidationError):
            retriever.retrieve("q", mode=mode, truth_filter=gate)
    assert len(retriever.search("q", truth_filter=gate)) == 1  # delegates forward to retrieve


def test_memory_records_are_filtered_too(tmp_path):
    session = TruthMaintenanceSession(rules=RULES, session_id="s")
    session.apply(assertions=[FactSupport("v1", "Employed(Alice)")])
    memory = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    note = {"schema_version": 1, "session_id": "s", "required_facts": ["Eligible(Alice)"], "required_support_ids": []}
    kept = memory.store("Alice is eligible for the loan", metadata={"truth_maintenance": note})
    memory.store("Alice is eligible for a discount")  # unannotated: removed by the filter
    gate = TruthMaintenanceContextFilter(session)
    results = ContextRetriever(memory_store=memory).retrieve("Alice eligible", truth_filter=gate)
    assert [r.id for r in results] == [kept]
    assert memory.get_memory(kept)["metadata"] == {"truth_maintenance": note}  # stored record untouched
    session.apply(retractions=["v1"])
    assert ContextRetriever(memory_store=memory).retrieve("Alice eligible", truth_filter=gate) == []
    memory.workspace.close()
