"""The decision tools over a real in-process mcp.Client session: schemas, every tool against the Python calls
on the workspace graph, bad calls as tool errors, and the ``graph:<name>`` access rule."""
from __future__ import annotations

from agentcontext import access
from agentcontext.decisions.causal import CausalChainAnalyzer
from agentcontext.decisions.models import Policy
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.mcp_server import build_server
from agentcontext.decisions.models import decision_data as decision_dict

from .test_mcp import call, run, walk_objects

DECISION_TOOLS = {"record_decision", "find_precedents", "get_causal_chain", "check_compliance"}
WRITERS = {"record_decision", "check_compliance"}
REFUND = dict(category="refund", reasoning="Outside the 30-day window.", outcome="denied", confidence=0.9)


def test_decision_tools_are_listed_with_strict_schemas(ws):
    listed = run(build_server(ws, capabilities=["decisions"]), lambda c: c.list_tools())
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == DECISION_TOOLS
    for name, tool in by_name.items():
        assert len(tool.description) > 60, name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        for prop, sub in schema["properties"].items():
            if prop != "metadata":  # free-form JSON facts by design
                assert all(o.get("additionalProperties") is False for o in walk_objects(sub)), (name, prop)
        assert tool.annotations.read_only_hint is (name not in WRITERS)
    assert set(by_name["record_decision"].input_schema["required"]) == {"category", "scenario", "reasoning",
                                                                        "outcome", "confidence"}
    assert by_name["get_causal_chain"].input_schema["properties"]["direction"]["enum"] == ["upstream", "downstream"]


def test_every_decision_tool_returns_what_the_python_call_returns(ws):
    PolicyEngine(graph_store=ContextGraph(workspace=ws)).add_policy(Policy(
        "refund-v1", "Refunds", "Refund decisions need confidence and a ticket.",
        {"min_confidence": 0.95, "required_metadata": ["ticket"]}, "refund"))

    async def script(client):
        out = {}
        first = await call(client, "record_decision", {**REFUND, "scenario": "Customer asks a refund 45 days "
                                                       "after purchase of a laptop", "entities": ["acme", "laptop"],
                                                       "decision_maker": "agent-7", "metadata": {"ticket": "T-1"}})
        assert not first[0], first
        root = first[1]["decision_id"]
        second = await call(client, "record_decision", {**REFUND, "scenario": "Customer escalates the denied "
                                                        "laptop refund to a manager", "outcome": "escalated",
                                                        "confidence": 1, "caused_by": [root]})
        third = await call(client, "record_decision", {"category": "shipping", "scenario": "Parcel lost in "
                                                       "transit", "reasoning": "", "outcome": "reshipped",
                                                       "confidence": 0.7, "caused_by": [second[1]["decision_id"]]})
        out["ids"] = [root, second[1]["decision_id"], third[1]["decision_id"]]
        out["graph"] = first[1]["graph"]
        out["precedents"] = await call(client, "find_precedents", {"scenario": "refund request two months after "
                                                                   "buying a laptop", "limit": 3})
        out["refund_only"] = await call(client, "find_precedents", {"scenario": "lost parcel", "category": "refund"})
        out["down"] = await call(client, "get_causal_chain", {"decision_id": root, "direction": "downstream"})
        out["down1"] = await call(client, "get_causal_chain", {"decision_id": root, "direction": "downstream",
                                                               "max_depth": 1})
        out["up"] = await call(client, "get_causal_chain", {"decision_id": out["ids"][2]})
        return out

    out = run(build_server(ws), script)
    root, escalated, reshipped = out["ids"]
    assert out["graph"] == "graph:default"
    graph = ContextGraph(workspace=ws)  # what AgentContext(knowledge_graph=ContextGraph(workspace=ws)) reads
    recorder = DecisionRecorder(graph)
    stored = recorder.get_decision(root)
    assert stored.metadata.pop("captured")["principal"] == "owner"  # what recorded it (issue 26 s3)
    assert (stored.decision_maker, stored.metadata, stored.confidence) == ("agent-7", {"ticket": "T-1"}, 0.9)
    assert {e.dst for e in ws.store.edges(src=[root], type=["involves"])} == {"graph:default/acme",
                                                                               "graph:default/laptop"}

    expected = recorder.find_precedents("refund request two months after buying a laptop", limit=3)
    assert out["precedents"] == (False, {"precedents": [decision_dict(d) for d in expected]})
    assert out["precedents"][1]["precedents"][0]["decision_id"] == root
    assert "similarity" in out["precedents"][1]["precedents"][0]["metadata"]
    assert {p["category"] for p in out["refund_only"][1]["precedents"]} == {"refund"}

    analyzer = CausalChainAnalyzer(graph)
    assert out["down"] == (False, {"decision_id": root, "direction": "downstream", "chain": [
        decision_dict(d) for d in analyzer.get_causal_chain(root, "downstream", 5)]})
    assert [d["decision_id"] for d in out["down"][1]["chain"]] == [escalated, reshipped]
    assert [d["decision_id"] for d in out["down1"][1]["chain"]] == [escalated]
    assert [d["metadata"]["causal_distance"] for d in out["up"][1]["chain"]] == [1, 2]
    assert out["up"][1]["chain"][1]["metadata"]["path"] == [reshipped, escalated, root]

    # The check records its outcome (an applies_policy edge), which changes precedents: so it runs last.
    async def check_script(client):
        return await call(client, "check_compliance", {"decision_id": root, "policy_id": "refund-v1"})

    is_error, check = run(build_server(ws), check_script)
    assert not is_error
    assert check == PolicyEngine(graph_store=graph).check_compliance(root, "refund-v1").to_dict()
    assert check["compliant"] is False and [v["rule"] for v in check["violations"]] == ["min_confidence"]
    audited = [(r["action"], r["target"]) for r in ws.store.audit(principal="owner")
               if r["action"] in ("decision.record", "policy.check")]
    assert audited[:4] == [("decision.record", f"graph:default/{i}") for i in out["ids"]] + [("policy.check", root)]


def test_bad_decision_calls_are_tool_errors(ws):
    async def script(client):
        good = await call(client, "record_decision", {**REFUND, "scenario": "A refund request"})
        did = good[1]["decision_id"]
        return [
            await call(client, "record_decision", {**REFUND, "scenario": "x", "confidence": 1.5}),
            await call(client, "record_decision", {**REFUND, "scenario": "x", "confidence": "high"}),
            await call(client, "record_decision", {**REFUND, "scenario": "x", "mood": "sad"}),
            await call(client, "record_decision", {**REFUND, "scenario": ""}),
            await call(client, "find_precedents", {"scenario": "x", "limit": 0}),
            await call(client, "get_causal_chain", {"decision_id": did, "direction": "sideways"}),
            await call(client, "get_causal_chain", {"decision_id": did, "max_depth": -1}),
            await call(client, "record_decision", {**REFUND, "scenario": "x", "caused_by": ["dec_missing"]}),
            await call(client, "get_causal_chain", {"decision_id": "dec_missing"}),
            await call(client, "check_compliance", {"decision_id": did, "policy_id": "no-such-policy"}),
            await call(client, "check_compliance", {"decision_id": "dec_missing", "policy_id": "no-such-policy"}),
        ], await call(client, "find_precedents", {"scenario": "refund"})

    errors, after = run(build_server(ws), script)
    assert all(is_error for is_error, _ in errors)
    assert [data["error"]["type"] for _, data in errors] == ["ValidationError"] * 7 + ["NotFoundError"] * 4
    assert "unknown argument 'mood'" in errors[2][1]["error"]["message"]
    assert errors[7][1]["error"]["missing"] == ["dec_missing"]
    assert not after[0] and len(after[1]["precedents"]) == 1  # the failed records left nothing behind


def test_decision_access_follows_graph_grants(ws):
    did = DecisionRecorder(ContextGraph(workspace=ws)).record_decision("refund", "Refund after 40 days", "", "denied",
                                                                       0.8)
    access.grant(ws, "reader", "graph:*", "read")
    access.grant(ws, "memonly", "memory:*", "write")

    async def as_reader(client):
        return (await call(client, "find_precedents", {"scenario": "late refund"}),
                await call(client, "get_causal_chain", {"decision_id": did}),
                await call(client, "record_decision", {**REFUND, "scenario": "sneaky"}),
                await call(client, "check_compliance", {"decision_id": did, "policy_id": "p"}))

    found, chain, recorded, checked = run(build_server(ws, principal="reader"), as_reader)
    assert not found[0] and [d["decision_id"] for d in found[1]["precedents"]] == [did]
    assert chain == (False, {"decision_id": did, "direction": "upstream", "chain": []})
    for is_error, data in (recorded, checked):
        assert is_error and data["error"]["type"] == "AccessDeniedError"
        assert data["error"]["pack"] == "graph:default" and data["error"]["needed"] == "write"
    assert [r["action"] for r in ws.store.audit(principal="reader") if r["outcome"] == "denied"] == [
        "decision.record", "policy.check"]
    assert len(DecisionRecorder(ContextGraph(workspace=ws)).list_decisions()) == 1

    async def as_memonly(client):
        return await call(client, "find_precedents", {"scenario": "late refund"})

    denied = run(build_server(ws, principal="memonly"), as_memonly)
    assert denied[0] and denied[1]["error"]["type"] == "AccessDeniedError"
