"""Decision pages: list and search, precedents for a scenario, one decision with its causal chain drawn
upstream and downstream, compliance checks, exceptions and approvals; policies with versions and results.
They work on the workspace graph (``graph:default``), as the MCP decision tools do. Precedents, causal chains and
compliance checks run the declared operations (``agentcontext.operations.decisions``), their forms parsed by the
operations' own input models."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...decisions.models import Decision
from ...decisions.policy import APPROVAL_METHODS, PolicyEngine
from ...decisions.recorder import DecisionRecorder
from ...errors import ValidationError
from ...graph.context_graph import workspace_graph
from ...operations import decisions as ops
from ..operations import form_input, run, serves
from ..requests import checked_form, console, principal
from ..layout import layered
from ..render import page, with_query
from . import int_param, text_param

PAGE_SIZE = 50
CHAIN_DEPTH = 10
serves(ops.PRECEDENTS, "/decisions")
serves(ops.CHAIN, "/decisions/{decision_id}")
serves(ops.COMPLIANCE, "/decisions/{decision_id}/check")


def _row(d: Decision) -> dict[str, Any]:
    row = d.to_dict()
    row.pop("reasoning_embedding", None)
    row.pop("node2vec_embedding", None)
    return row


def decision_url(decision_id: str, **query: Any) -> str:
    from ..render import seg

    return with_query("/decisions/" + seg(decision_id), **query)


async def decisions_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    graph = workspace_graph(ws, who)
    recorder = DecisionRecorder(graph)
    query, category, scenario = text_param(q, "q"), text_param(q, "category"), text_param(q, "scenario")
    offset = int_param(q, "offset", 0, 0, 10**9) or 0
    everything = recorder.list_decisions(category=category)[::-1]  # newest first
    categories = sorted({d.category for d in recorder.list_decisions()})
    found = [_row(d) for d in recorder.query_decisions(query, category=category, limit=30)] if query else None
    precedents = run(request, ops.PRECEDENTS, form_input(ops.PRECEDENTS, q, limit=10))["precedents"] \
        if scenario else None
    return page(request, "decisions.html", decisions=[_row(d) for d in everything[offset: offset + PAGE_SIZE]],
                total=len(everything), offset=offset, page_size=PAGE_SIZE, categories=categories,
                category=category, query=query, found=found, scenario=scenario, precedents=precedents,
                decision_url=decision_url)


def chain_drawing(start: dict[str, Any], upstream: list[dict[str, Any]],
                  downstream: list[dict[str, Any]]) -> dict[str, Any]:
    """Nodes and edges (cause -> effect) of a decision's causal neighbourhood, placed in layers."""
    nodes = {start["decision_id"]: start}
    edges: dict[tuple[str, str], str] = {}
    for chain, up in ((upstream, True), (downstream, False)):
        for d in chain:
            nodes[d["decision_id"]] = d
            path, rels = d["metadata"].get("path", []), d["metadata"].get("relationships", [])
            for (a, b), rel in zip(zip(path, path[1:]), rels):
                edges[(b, a) if up else (a, b)] = rel
    ids = list(nodes)
    positions = layered(ids, [(effect, cause) for cause, effect in edges])  # causes above their effects
    return {"nodes": [{"id": i, "label": f"{nodes[i]['category']}: {nodes[i]['outcome']}",
                       "kind": nodes[i]["category"], "cycle": False, "missing": False,
                       "focus": i == start["decision_id"], "x": positions[i][0],
                       "y": positions[i][1], "url": decision_url(i)} for i in ids],
            "edges": [{"from": a, "to": b, "type": rel} for (a, b), rel in edges.items()]}


async def decision_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    did = request.path_params["decision_id"]
    graph = workspace_graph(ws, who)
    decision = _row(DecisionRecorder(graph).get_decision(did))
    upstream, downstream = (run(request, ops.CHAIN, ops.CHAIN.parse({"decision_id": did, "direction": direction,
                                                                     "max_depth": CHAIN_DEPTH}))["chain"]
                            for direction in ("upstream", "downstream"))
    engine = PolicyEngine(graph_store=graph)
    return page(request, "decision.html", decision=decision, upstream=upstream,
                downstream=downstream, drawing=chain_drawing(decision, upstream, downstream),
                policies=[p.to_dict() for p in engine.list_policies()],
                exceptions=[e.to_dict() for e in engine.get_exceptions(decision_id=did)],
                approvals=[a.to_dict() for a in engine.get_approvals(did)], methods=APPROVAL_METHODS,
                result=None, decision_url=decision_url, done=request.query_params.get("done"))


async def check(request: Request) -> Response:
    form = await checked_form(request)
    did = request.path_params["decision_id"]
    if not text_param(form, "policy_id"):
        raise ValidationError("choose a policy to check against")
    result = run(request, ops.COMPLIANCE, form_input(ops.COMPLIANCE, form, decision_id=did))
    outcome = "compliant" if result["compliant"] else ("excepted" if result["exception_id"] else "not compliant")
    reasons = "; ".join(v["message"] for v in result["violations"])
    return RedirectResponse(decision_url(did, done=f"{result['policy_id']} v{result['policy_version']}: {outcome}"
                                         + (f" ({reasons})" if reasons else "")), status_code=303)


async def add_exception(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    did = request.path_params["decision_id"]
    graph = workspace_graph(ws, who)
    exc = PolicyEngine(graph_store=graph).record_exception(
        did, text_param(form, "policy_id"), reason=text_param(form, "reason") or "", approver=who,
        justification=text_param(form, "justification") or "")
    return RedirectResponse(decision_url(did, done=f"recorded exception {exc.exception_id}"), status_code=303)


async def add_approval(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    did = request.path_params["decision_id"]
    graph = workspace_graph(ws, who)
    appr = PolicyEngine(graph_store=graph).record_approval(
        did, approver=who, approval_method=text_param(form, "method") or "system",
        approval_context=text_param(form, "context") or "")
    return RedirectResponse(decision_url(did, done=f"recorded approval {appr.approval_id}"), status_code=303)


async def policies_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    graph = workspace_graph(ws, who)
    engine = PolicyEngine(graph_store=graph)
    return page(request, "policies.html", policies=[p.to_dict() for p in engine.list_policies()],
                exceptions=[e.to_dict() for e in engine.get_exceptions()], decision_url=decision_url)


async def policy_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    policy_id = request.path_params["policy_id"]
    graph = workspace_graph(ws, who)
    engine = PolicyEngine(graph_store=graph)
    versions = [p.to_dict() for p in engine.get_policy_history(policy_id)]
    return page(request, "policy.html", policy=engine.get_policy(policy_id).to_dict(), versions=versions[::-1],
                results=engine.compliance_results(policy_id),
                exceptions=[e.to_dict() for e in engine.get_exceptions(policy_id=policy_id)],
                decision_url=decision_url)


ROUTES = [
    Route("/decisions", decisions_page),
    Route("/decisions/{decision_id}", decision_page),
    Route("/decisions/{decision_id}/check", check, methods=["POST"]),
    Route("/decisions/{decision_id}/exception", add_exception, methods=["POST"]),
    Route("/decisions/{decision_id}/approval", add_approval, methods=["POST"]),
    Route("/policies", policies_page),
    Route("/policies/{policy_id}", policy_page),
]
