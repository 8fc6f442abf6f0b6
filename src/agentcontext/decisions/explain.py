"""``trace_decision_explainability``: everything a decision is connected to, each with its relationship path."""
from __future__ import annotations

from typing import Any

from .. import access
from ..errors import NotFoundError
from .causal import CausalChainAnalyzer
from .common import (APPLIES_POLICY, APPROVED_BY, DECISION, HAS_EXCEPTION, INVOLVES, PRECEDENT,
                     decision_from_node, graph_of)


def _user_id(graph: Any, store_id: str) -> str:
    handle = graph_of(graph)
    return handle.user_id(store_id) if handle is not None else store_id


def trace_decision_explainability(graph: Any, decision_id: str, max_depth: int | None = 10,
                                  include_audit: bool = True, principal: str | None = None) -> dict[str, Any]:
    """Causes, effects, entities, policies applied, exceptions, approvals and precedents of a decision.

    Every item carries ``path`` (node ids from the decision) and ``relationships`` (the edge types
    along it); ``relationship_paths`` lists them all and ``total_connections`` counts them. Acting as
    ``principal`` (else the graph's), it needs read on the graph and shows only what the principal sees; the
    audit trail holds everyone's entries for the owner or an admin of ``*``, else the principal's own.
    """
    analyzer = CausalChainAnalyzer(graph, principal=principal)
    analyzer.check("read", "decision.explain", decision_id)
    store = analyzer.store
    node = analyzer.visible_node(decision_id)
    if node is None or node.kind != DECISION:
        raise NotFoundError(f"no decision {decision_id!r}", decision_id=decision_id)
    decision = decision_from_node(node)

    def chain(direction: str) -> list[dict[str, Any]]:
        return [{"decision_id": d.decision_id, "category": d.category, "scenario": d.scenario,
                 "outcome": d.outcome, "confidence": d.confidence, "causal_distance": d.metadata["causal_distance"],
                 "relationship": d.metadata["relationship"], "path": d.metadata["path"],
                 "relationships": d.metadata["relationships"]}
                for d in analyzer.get_causal_chain(decision_id, direction, max_depth)]

    out_edges = store.edges(src=decision_id, type=[INVOLVES, APPLIES_POLICY, HAS_EXCEPTION, APPROVED_BY, PRECEDENT])
    targets = analyzer.seen(store.get_nodes([e.dst for e in out_edges])) if out_edges else {}
    entities, policies, exceptions, approvals, precedents = [], [], [], [], []
    for e in out_edges:
        t = targets.get(e.dst)
        if t is None:
            continue
        base = {"path": [decision_id, e.dst], "relationships": [e.type]}
        if e.type == INVOLVES:
            entities.append({"entity_id": _user_id(graph, t.id), "store_id": t.id, "name": t.title or t.key,
                             "type": t.kind, **base})
        elif e.type == APPLIES_POLICY:
            policies.append({"policy_id": t.props.get("policy_id", t.key), "name": t.title,
                             "version": e.props.get("policy_version", t.props.get("version")),
                             "current_version": t.props.get("version"), "compliant": e.props.get("compliant"),
                             "check_outcome": e.props.get("outcome"), **base})
        elif e.type == HAS_EXCEPTION:
            p = t.props
            exceptions.append({"exception_id": t.id, "policy_id": p.get("policy_id"), "reason": p.get("reason"),
                               "approver": p.get("approver"), "justification": p.get("justification"),
                               "approval_timestamp": p.get("approval_timestamp"),
                               "path": [decision_id, t.id, f"policy:{p.get('policy_id')}"],
                               "relationships": [HAS_EXCEPTION, "exception_to"]})
        elif e.type == APPROVED_BY:
            p = t.props
            approvals.append({"approval_id": t.id, "approver": p.get("approver"),
                              "approval_method": p.get("approval_method"),
                              "approval_context": p.get("approval_context"), "timestamp": p.get("timestamp"),
                              "position": e.position, **base})
        elif e.type == PRECEDENT and t.kind == DECISION:
            precedents.append({"decision_id": t.id, "scenario": t.props.get("scenario"),
                               "outcome": t.props.get("outcome"), **e.props, **base})
    approvals.sort(key=lambda a: a["position"])
    causes, effects = chain("upstream"), chain("downstream")
    groups = {"causes": causes, "effects": effects, "entities": entities, "policies_applied": policies,
              "exceptions": exceptions, "approvals": approvals, "precedents": precedents}
    paths = [{"kind": kind, "path": item["path"], "relationships": item["relationships"]}
             for kind, items in groups.items() for item in items]
    result: dict[str, Any] = {"decision_id": decision_id, "decision": decision.to_dict(), **groups,
                              "relationship_paths": paths, "total_connections": len(paths)}
    if include_audit:
        related = {decision_id, *(x["exception_id"] for x in exceptions)}
        ws = analyzer.ws
        mine = None if access.is_superadmin(ws, analyzer.principal) else analyzer.who
        result["audit_trail"] = [a for a in store.audit(principal=mine, since=node.recorded_at)
                                 if a["target"] in related]
    return result
