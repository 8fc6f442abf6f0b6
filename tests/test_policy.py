"""PolicyEngine: versioned policies, rule evaluation with reasons, exceptions, approvals, audit trail."""
from __future__ import annotations

from datetime import datetime

import pytest

from agentcontext import AgentContext, ConflictError, NotFoundError, PolicyEngine, ValidationError, Workspace
from agentcontext.decision_models import ApprovalChain, Decision, Policy, PolicyException
from agentcontext.graph.context_graph import ContextGraph


def _policy(**kw) -> Policy:
    base = dict(policy_id="p1", name="Confidence Threshold Policy", description="confidence >= 0.7",
                rules={"min_confidence": 0.7, "requires_reasoning": True}, category="decision_quality",
                version="1.0", created_at=datetime(2024, 1, 1), updated_at=datetime(2024, 1, 1))
    return Policy(**{**base, **kw})


def _decision(**kw) -> Decision:
    base = dict(decision_id="dec_1", category="loan_approval", scenario="First-time homebuyer",
                reasoning="Good credit score", outcome="approved", confidence=0.94, timestamp=datetime.now(),
                decision_maker="loan_agent")
    return Decision(**{**base, **kw})


@pytest.fixture
def engine() -> PolicyEngine:
    return PolicyEngine(graph_store=ContextGraph())


def test_policies_are_graph_nodes(engine: PolicyEngine):
    assert engine.add_policy(_policy()) == "p1"
    node = engine.store.get_node("policy:p1")
    assert node.kind == "policy" and node.props["rules"] == {"min_confidence": 0.7, "requires_reasoning": True}
    assert engine.get_policy("p1").version == "1.0"
    with pytest.raises(ConflictError):
        engine.add_policy(_policy())
    with pytest.raises(NotFoundError):
        engine.get_policy("nope")


@pytest.mark.parametrize("rules", [
    {"min_confidance": 0.7}, {"max_retention": 90}, {"min_confidence": 1.5}, {"min_confidence": "high"},
    {"requires_reasoning": "yes"}, {"max_retention_days": -1}, {"allowed_outcomes": "approved"},
])
def test_bad_rules_are_refused_at_add_time(engine: PolicyEngine, rules: dict):
    with pytest.raises(ValidationError) as err:
        engine.add_policy(_policy(rules=rules))
    assert engine.store.get_node("policy:p1") is None
    if "min_confidance" in rules:
        assert err.value.data["unknown"] == ["min_confidance"] and "min_confidence" in err.value.data["known"]


def test_each_rule_says_why_it_failed(engine: PolicyEngine):
    engine.add_policy(_policy(policy_id="all", rules={
        "min_confidence": 0.8, "requires_reasoning": True, "required_user_consent": True,
        "max_retention_days": 90, "allowed_outcomes": ["approved", "denied"], "required_metadata": ["region"]}))
    ok = engine.check_compliance(_decision(metadata={"user_consent": True, "retention_days": 30, "region": "eu"}),
                                 "all")
    assert ok and ok.compliant and ok.violations == [] and len(ok.checked_rules) == 6
    bad = engine.check_compliance(_decision(confidence=0.5, reasoning="  ", outcome="maybe",
                                            metadata={"user_consent": False, "retention_days": 365}), "all")
    assert not bad and bad.compliant is False
    why = {v.rule: v for v in bad.violations}
    assert set(why) == set(bad.checked_rules)
    assert why["min_confidence"].actual == 0.5 and "below the minimum 0.8" in why["min_confidence"].message
    assert "no reasoning" in why["requires_reasoning"].message
    assert "user_consent is False" in why["required_user_consent"].message
    assert why["max_retention_days"].actual == 365 and "exceeds the maximum 90" in why["max_retention_days"].message
    assert "'maybe'" in why["allowed_outcomes"].message and "region" in why["required_metadata"].message
    missing = engine.check_compliance(_decision(), "all")
    reasons = {v.rule: v.message for v in missing.violations}
    assert "user_consent is missing" in reasons["required_user_consent"]
    assert "retention_days is missing" in reasons["max_retention_days"]
    assert missing.to_dict()["violations"][0]["rule"] in reasons


def test_versions_and_history(engine: PolicyEngine):
    engine.add_policy(_policy())
    v11 = engine.update_policy("p1", rules={"min_confidence": 0.9}, change_reason="audit finding")
    assert v11.version == "1.1" and v11.created_at == engine.get_policy_history("p1")[0].created_at
    v20 = engine.update_policy("p1", description="stricter", version="2.0")
    assert engine.get_policy("p1").version == "2.0" and engine.get_policy("p1").rules == {"min_confidence": 0.9}
    history = engine.get_policy_history("p1")
    assert [p.version for p in history] == ["1.0", "1.1", "2.0"]
    assert history[0].rules == {"min_confidence": 0.7, "requires_reasoning": True}
    assert history[1].metadata["change_reason"] == "audit finding"
    assert engine.get_policy("p1", version="1.0").rules["min_confidence"] == 0.7
    with pytest.raises(ConflictError):
        engine.update_policy("p1", version="1.1")
    with pytest.raises(ValidationError):
        engine.update_policy("p1", rules={"bogus": 1})
    assert engine.get_policy("p1").version == v20.version
    # compliance uses the current version
    result = engine.check_compliance(_decision(confidence=0.8), "p1")
    assert not result and result.policy_version == "2.0"
    # a whole Policy object also works; an unchanged version number is bumped
    bumped = engine.update_policy(_policy(version="2.0", rules={"min_confidence": 0.5}))
    assert bumped.version == "2.1" and engine.check_compliance(_decision(confidence=0.8), "p1")


def test_applicable_policies_by_category(engine: PolicyEngine):
    engine.add_policy(_policy(policy_id="q", category="decision_quality"))
    engine.add_policy(_policy(policy_id="lend", category="loan_approval", rules={"min_confidence": 0.8}))
    engine.add_policy(_policy(policy_id="glob", category="global", rules={"requires_reasoning": True}))
    assert [p.policy_id for p in engine.get_applicable_policies(category="decision_quality")] == ["glob", "q"]
    assert {p.policy_id for p in engine.get_applicable_policies(category="loan_approval")} == {"lend", "glob"}
    results = engine.check_all(_decision(confidence=0.75))
    assert set(results) == {"lend", "glob"} and not results["lend"] and results["glob"]


def test_exceptions_and_approvals_make_it_into_the_record(tmp_path):
    ws = Workspace.open(home=tmp_path / "ws", create=True)
    ctx = AgentContext(knowledge_graph=ContextGraph(workspace=ws), decision_tracking=True)
    engine = ctx.get_policy_engine()
    assert engine is ctx.get_policy_engine()
    engine.add_policy(_policy(policy_id="lend", category="loan_approval", rules={"min_confidence": 0.8}))
    did = ctx.record_decision(category="loan_approval", scenario="Thin-file applicant", reasoning="manual review",
                              outcome="approved", confidence=0.6)
    first = engine.check_compliance(did, "lend")
    assert not first and first.exception_id is None
    with pytest.raises(ValidationError):
        engine.record_exception(did, "lend", reason="", approver="cro")
    with pytest.raises(NotFoundError):
        engine.record_exception("dec_missing", "lend", reason="r", approver="cro")
    exc = engine.record_exception(did, "lend", reason="collateral", approver="chief_risk_officer",
                                  justification="house as collateral covers exposure")
    assert isinstance(exc, PolicyException) and exc.policy_id == "lend"
    second = engine.check_compliance(did, "lend")
    assert second and not second.compliant and second.exception_id == exc.exception_id
    appr = engine.record_approval(did, approver="loan_committee", approval_method="zoom_call",
                                  approval_context="weekly committee")
    engine.record_approval(ApprovalChain(approval_id="a2", decision_id=did, approver="ceo", approval_method="email",
                                         approval_context="sign-off", timestamp=datetime(2024, 5, 1)))
    with pytest.raises(ValidationError):
        engine.record_approval(did, approver="x", approval_method="carrier_pigeon")
    assert [a.approver for a in engine.get_approvals(did)] == ["loan_committee", "ceo"]
    assert engine.get_approvals(did)[0].approval_id == appr.approval_id
    assert [e.exception_id for e in engine.get_exceptions(policy_id="lend")] == [exc.exception_id]
    audit = ws.store.audit()
    actions = [(a["action"], a["target"], a["outcome"]) for a in audit]
    assert ("policy.check", did, "violation") in actions and ("policy.check", did, "excepted") in actions
    assert ("policy.exception", did, "granted") in actions and ("decision.approval", did, "approved") in actions
    ex = ctx.trace_decision_explainability(did)
    assert ex["exceptions"][0]["justification"] == "house as collateral covers exposure"
    assert [a["approver"] for a in ex["approvals"]] == ["loan_committee", "ceo"]
    assert ex["policies_applied"][0]["check_outcome"] == "excepted"
    # everything survives a restart
    ws.close()
    ws2 = Workspace.open(home=tmp_path / "ws")
    engine2 = PolicyEngine(graph_store=ContextGraph(workspace=ws2))
    assert engine2.get_policy("lend").rules == {"min_confidence": 0.8}
    assert [a.approver for a in engine2.get_approvals(did)] == ["loan_committee", "ceo"]
    assert engine2.check_compliance(did, "lend").exception_id == exc.exception_id


def test_record_decision_under_a_policy_needs_the_policy(engine: PolicyEngine):
    graph = engine.graph_store
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True)
    with pytest.raises(NotFoundError):
        ctx.record_decision(category="x", scenario="s", reasoning="r", outcome="o", confidence=0.9,
                            policies=["missing"])
    engine.add_policy(_policy())
    did = ctx.record_decision(category="x", scenario="s", reasoning="r", outcome="o", confidence=0.9,
                              policies=["p1"])
    assert [e.dst for e in graph.store.edges(src=did, type="applies_policy")] == ["policy:p1"]
    edge = graph.store.edges(src=did, type="applies_policy")[0]
    assert edge.props["policy_version"] == "1.0"


def test_policies_decisions_and_chains_survive_graph_save_and_load(tmp_path):
    graph = ContextGraph()
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True)
    engine = ctx.get_policy_engine()
    engine.add_policy(_policy(policy_id="lend", category="loan_approval", rules={"min_confidence": 0.8}))
    engine.update_policy("lend", rules={"min_confidence": 0.85}, change_reason="tighten")
    a = ctx.record_decision(category="loan_approval", scenario="Approve loan A", reasoning="good credit",
                            outcome="approved", confidence=0.9, entities=["applicant_a"], policies=["lend"])
    b = ctx.record_decision(category="loan_approval", scenario="Approve loan B", reasoning="like A",
                            outcome="approved", confidence=0.7, caused_by=[a])
    engine.record_exception(b, "lend", reason="collateral", approver="cro")
    engine.record_approval(b, approver="committee", approval_method="email")
    graph.save_to_file(str(tmp_path / "g.json"))

    other = ContextGraph()
    other.load_from_file(str(tmp_path / "g.json"))
    ctx2 = AgentContext(knowledge_graph=other, decision_tracking=True)
    engine2 = ctx2.get_policy_engine()
    assert [p.version for p in engine2.get_policy_history("lend")] == ["1.0", "1.1"]
    assert engine2.check_compliance(b, "lend").exception_id is not None
    assert [d.decision_id for d in ctx2.get_causal_chain(b, "upstream")] == [a]
    ex = ctx2.trace_decision_explainability(b)
    assert ex["approvals"][0]["approver"] == "committee" and ex["causes"][0]["decision_id"] == a
    assert ctx2.find_precedents("loan approval for a good applicant", limit=1)[0].decision_id in {a, b}


def test_engine_follows_the_graph_through_clear():
    graph = ContextGraph()
    engine = PolicyEngine(graph_store=graph)
    engine.add_policy(_policy())
    graph.clear()  # an in-memory graph gets a fresh store
    with pytest.raises(NotFoundError):
        engine.get_policy("p1")
    engine.add_policy(_policy())
    assert graph.store.get_node("policy:p1") is not None


def test_policy_impact_analysis_writes_nothing():
    graph = ContextGraph()
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True)
    engine = ctx.get_policy_engine()
    engine.add_policy(_policy(policy_id="lend", category="loan_approval", rules={"min_confidence": 0.7}))
    hi, mid, low = ctx.record_decisions([
        dict(category="loan_approval", scenario="a", reasoning="r", outcome="approved", confidence=0.95),
        dict(category="loan_approval", scenario="b", reasoning="r", outcome="approved", confidence=0.8),
        dict(category="loan_approval", scenario="c", reasoning="r", outcome="approved", confidence=0.6)])
    ctx.record_decision(category="other", scenario="d", reasoning="r", outcome="x", confidence=0.1)
    before = graph.store.change_counter()
    impact = engine.analyze_policy_impact("lend", {"min_confidence": 0.9})
    assert impact["decisions_checked"] == 3
    assert [r["decision_id"] for r in impact["newly_violating"]] == [mid]
    assert "below the minimum 0.9" in impact["newly_violating"][0]["reasons"][0]
    assert [r["decision_id"] for r in impact["still_violating"]] == [low]
    loose = engine.analyze_policy_impact("lend", {"min_confidence": 0.5})
    assert [r["decision_id"] for r in loose["newly_compliant"]] == [low] and hi not in str(loose)
    assert graph.store.change_counter() == before
    with pytest.raises(ValidationError):
        engine.analyze_policy_impact("lend", {"min_confidance": 0.5})


def test_register_rule_adds_a_rule_kind(engine: PolicyEngine):
    from agentcontext.errors import ProcessingError

    with pytest.raises(ValidationError, match="register_rule"):  # unknown keys keep failing until registered
        engine.add_policy(_policy(rules={"max_amount": 1000}))

    def max_amount(decision: Decision, limit: float):
        amount = (decision.metadata or {}).get("amount", 0)
        return None if amount <= limit else (amount, f"amount {amount} exceeds {limit}")

    engine.register_rule("max_amount", max_amount, validate=lambda v: isinstance(v, (int, float)) and v > 0,
                         expects="a positive amount")
    with pytest.raises(ValidationError, match="max_amount must be a positive amount"):
        engine.add_policy(_policy(rules={"max_amount": -1}))
    engine.add_policy(_policy(rules={"max_amount": 1000, "min_confidence": 0.5}))
    ok = engine.check_compliance(_decision(metadata={"amount": 900}), "p1")
    bad = engine.check_compliance(_decision(metadata={"amount": 5000}), "p1")
    assert ok and ok.checked_rules == ["max_amount", "min_confidence"]
    assert not bad and [v.to_dict() for v in bad.violations] == [
        {"rule": "max_amount", "expected": 1000, "actual": 5000, "message": "amount 5000 exceeds 1000"}]
    assert engine.analyze_policy_impact("p1", {"max_amount": 10})["decisions_checked"] == 0

    engine.register_rule("weekday_only", lambda d, v: d.timestamp.weekday() < 5 or "not on a weekday")
    engine.register_rule("flaky", lambda d, v: 1 / 0)
    engine.register_rule("odd", lambda d, v: 42)
    engine.add_policy(_policy(policy_id="p2", rules={"flaky": True}))
    with pytest.raises(ProcessingError, match="custom policy rule 'flaky' raised ZeroDivisionError"):
        engine.check_compliance(_decision(), "p2")
    engine.add_policy(_policy(policy_id="p3", rules={"odd": True}))
    with pytest.raises(ValidationError, match="returned 42"):
        engine.check_compliance(_decision(), "p3")
    # names: not a built-in, not twice unless replaced, a plain identifier, a callable check
    with pytest.raises(ConflictError, match="built-in"):
        engine.register_rule("min_confidence", max_amount)
    with pytest.raises(ConflictError, match="replace=True"):
        engine.register_rule("max_amount", max_amount)
    engine.register_rule("max_amount", lambda d, v: False, replace=True)
    replaced = engine.check_compliance(_decision(metadata={"amount": 1}), "p1")
    assert replaced.reasons == ["rule max_amount (1000) is not met"]
    for name, check in (("Bad Name", max_amount), ("fine", "not callable")):
        with pytest.raises(ValidationError):
            engine.register_rule(name, check)  # type: ignore[arg-type]
    # another engine over the same graph has not registered it: checking says so instead of passing
    other = PolicyEngine(graph_store=engine.graph)
    with pytest.raises(ValidationError, match="does not know: register it"):
        other.check_compliance(_decision(metadata={"amount": 1}), "p1")
    ctx = AgentContext(knowledge_graph=ContextGraph())
    ctx.get_policy_engine().register_rule("max_amount", max_amount)
    assert "max_amount" in ctx.get_policy_engine().rules  # the context keeps one engine while its graph stays
