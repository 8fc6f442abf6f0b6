"""``PolicyEngine``: versioned policies stored as graph nodes, compliance checks, exceptions, approvals.

A policy is one node (``policy:<policy_id>``); ``update_policy`` writes a new store version of it,
so ``get_policy_history`` is the node's version history. ``check_compliance`` returns a
``ComplianceResult`` that is truthy when the decision passes (or has a recorded exception for
that policy) and lists each failed rule with the reason. Unknown rule keys are refused when the
policy is added, unless ``register_rule(name, check)`` added that rule kind to the engine.

Access: the engine acts as its principal (given, else the graph's; None = the owner) under the graph's
namespace: listing and reading policies, exceptions and approvals need ``read``; adding and updating
policies, checking compliance (recorded on the decision), exceptions and approvals need ``write``. Every
write is audited under the acting principal; an approver named in an exception or approval is data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from ..errors import ConflictError, NotFoundError, ProcessingError, ValidationError
from ..model import Edge, Node, to_utc_iso
from ..seams import principal_of
from .common import (APPLIES_POLICY, APPROVAL, APPROVED_BY, DECISION, EXCEPTION, EXCEPTION_TO, HAS_EXCEPTION,
                     POLICY, Bound, Target, as_datetime, decision_from_node, new_id)
from .models import ApprovalChain, Decision, Policy, PolicyException
from .recorder import policy_node_id

APPROVAL_METHODS = ("slack_dm", "zoom_call", "email", "system")


@dataclass
class RuleViolation:
    rule: str
    expected: Any
    actual: Any
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "expected": self.expected, "actual": self.actual, "message": self.message}


@dataclass
class ComplianceResult:
    """Truthy when compliant (or excepted); ``violations`` says which rule failed and why."""

    policy_id: str
    policy_version: str
    decision_id: str
    compliant: bool
    violations: list[RuleViolation] = field(default_factory=list)
    checked_rules: list[str] = field(default_factory=list)
    exception_id: str | None = None

    def __bool__(self) -> bool:
        return self.compliant or self.exception_id is not None

    @property
    def reasons(self) -> list[str]:
        return [v.message for v in self.violations]

    def to_dict(self) -> dict[str, Any]:
        return {"policy_id": self.policy_id, "policy_version": self.policy_version, "decision_id": self.decision_id,
                "compliant": self.compliant, "passed": bool(self), "exception_id": self.exception_id,
                "checked_rules": list(self.checked_rules), "violations": [v.to_dict() for v in self.violations]}

    def __repr__(self) -> str:
        state = "compliant" if self.compliant else ("excepted" if self.exception_id else "violation")
        why = "; ".join(self.reasons)
        return f"ComplianceResult({self.policy_id} v{self.policy_version}: {state}{': ' + why if why else ''})"


# --- rules: name -> (validate value, check(decision, value) -> violation message or None) ----------
def _number01(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0


def _count(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _strings(v: Any) -> bool:
    return isinstance(v, (list, tuple, set)) and all(isinstance(x, str) for x in v)


def _min_confidence(d: Decision, v: float) -> tuple[Any, str] | None:
    if float(d.confidence) < v:
        return d.confidence, f"confidence {d.confidence} is below the minimum {v}"
    return None


def _max_confidence(d: Decision, v: float) -> tuple[Any, str] | None:
    if float(d.confidence) > v:
        return d.confidence, f"confidence {d.confidence} is above the maximum {v}"
    return None


def _requires_reasoning(d: Decision, v: bool) -> tuple[Any, str] | None:
    if v and not (d.reasoning or "").strip():
        return d.reasoning, "the decision has no reasoning"
    return None


def _required_user_consent(d: Decision, v: bool) -> tuple[Any, str] | None:
    consent = (d.metadata or {}).get("user_consent")
    if v and consent is not True:
        return consent, ("metadata.user_consent is missing" if consent is None
                         else f"metadata.user_consent is {consent!r}, not True")
    return None


def _max_retention_days(d: Decision, v: float) -> tuple[Any, str] | None:
    days = (d.metadata or {}).get("retention_days")
    if days is None:
        return None, f"metadata.retention_days is missing (the policy allows at most {v} days)"
    if not isinstance(days, (int, float)) or isinstance(days, bool):
        return days, f"metadata.retention_days {days!r} is not a number"
    if days > v:
        return days, f"retention of {days} days exceeds the maximum {v}"
    return None


def _allowed_outcomes(d: Decision, v: Sequence[str]) -> tuple[Any, str] | None:
    if d.outcome not in v:
        return d.outcome, f"outcome {d.outcome!r} is not one of {sorted(v)}"
    return None


def _forbidden_outcomes(d: Decision, v: Sequence[str]) -> tuple[Any, str] | None:
    if d.outcome in v:
        return d.outcome, f"outcome {d.outcome!r} is forbidden"
    return None


def _required_metadata(d: Decision, v: Sequence[str]) -> tuple[Any, str] | None:
    missing = [k for k in v if k not in (d.metadata or {})]
    if missing:
        return sorted(d.metadata or {}), f"metadata lacks {missing}"
    return None


RULES: dict[str, tuple[Callable[[Any], bool], str, Callable[[Decision, Any], tuple[Any, str] | None]]] = {
    "min_confidence": (_number01, "a number from 0 to 1", _min_confidence),
    "max_confidence": (_number01, "a number from 0 to 1", _max_confidence),
    "requires_reasoning": (lambda v: isinstance(v, bool), "true or false", _requires_reasoning),
    "required_user_consent": (lambda v: isinstance(v, bool), "true or false", _required_user_consent),
    "max_retention_days": (_count, "a number of days >= 0", _max_retention_days),
    "allowed_outcomes": (_strings, "a list of outcome strings", _allowed_outcomes),
    "forbidden_outcomes": (_strings, "a list of outcome strings", _forbidden_outcomes),
    "required_metadata": (_strings, "a list of metadata keys", _required_metadata),
}


RuleTable = dict[str, tuple[Callable[[Any], bool], str, Callable[[Decision, Any], tuple[Any, str] | None]]]
_RULE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def validate_rules(rules: Any, table: RuleTable | None = None) -> None:
    table = RULES if table is None else table
    if not isinstance(rules, dict):
        raise ValidationError(f"policy rules must be a dict, got {type(rules).__name__}")
    unknown = sorted(set(rules) - set(table))
    if unknown:
        raise ValidationError(f"unknown policy rule keys {unknown}; known rules are {sorted(table)} (add a rule kind "
                              "with PolicyEngine.register_rule(name, check))", unknown=unknown, known=sorted(table))
    for key, value in rules.items():
        ok, wants, _ = table[key]
        if not ok(value):
            raise ValidationError(f"policy rule {key} must be {wants}, got {value!r}", rule=key, value=value)


def evaluate_rules(rules: dict[str, Any], decision: Decision, table: RuleTable | None = None) -> list[RuleViolation]:
    """The rules the decision breaks, each with the reason (empty: compliant)."""
    table = RULES if table is None else table
    out = []
    for rule, value in rules.items():
        if rule not in table:
            raise ValidationError(f"the policy uses rule {rule!r}, which this PolicyEngine does not know: register it "
                                  f"with register_rule({rule!r}, check) before checking (custom rules live in the "
                                  "process that registers them)", rule=rule)
        failed = table[rule][2](decision, value)
        if failed is not None:
            out.append(RuleViolation(rule, value, failed[0], failed[1]))
    return out


def custom_check(name: str, check: Callable[[Decision, Any], Any]) -> Callable[[Decision, Any], tuple[Any, str] | None]:
    """A registered check as the engine calls it: None/True passes; False, a message, or (actual, message) fails."""

    def run(decision: Decision, value: Any) -> tuple[Any, str] | None:
        try:
            got = check(decision, value)
        except Exception as exc:  # the rule's own bug: say which rule, keep the cause
            raise ProcessingError(f"custom policy rule {name!r} raised {type(exc).__name__}: {exc}",
                                  rule=name) from exc
        if got is None or got is True:
            return None
        if got is False:
            return None, f"rule {name} ({value!r}) is not met"
        if isinstance(got, str):
            return None, got
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str):
            return got[0], got[1]
        raise ValidationError(f"custom policy rule {name!r} returned {got!r}; return None or True to pass, and "
                              "False, a message or (actual, message) to fail", rule=name)

    return run


def next_version(version: str) -> str:
    """'1.2' -> '1.3'; '2' -> '3'; anything else gets '.1' appended."""
    m = re.fullmatch(r"(.*?)(\d+)", str(version))
    return f"{m.group(1)}{int(m.group(2)) + 1}" if m else f"{version}.1"


def _policy_from_node(node: Node) -> Policy:
    p = node.props
    return Policy(policy_id=p["policy_id"], name=p.get("name", ""), description=p.get("description", ""),
                  rules=dict(p.get("rules") or {}), category=p.get("category", ""), version=str(p.get("version")),
                  created_at=as_datetime(p.get("created_at")), updated_at=as_datetime(p.get("updated_at")),
                  metadata=dict(p.get("metadata") or {}))


class PolicyEngine(Bound):
    """Versioned policies in the knowledge graph; compliance, exceptions and approvals with an audit trail."""

    def __init__(self, graph_store: Target | None = None, namespace: str | None = None, actor: str = "",
                 graph: Target | None = None, principal: str | None = None) -> None:
        self._bind(graph_store if graph_store is not None else graph, namespace, "PolicyEngine",
                   principal_of(principal, actor))
        self.graph_store = self.graph
        self.rules: RuleTable = dict(RULES)  # the built-in rule kinds and the ones register_rule adds

    @property
    def actor(self) -> str:
        """Who the engine's writes and audit rows are attributed to: the acting principal."""
        return self.who

    def register_rule(self, name: str, check: Callable[[Decision, Any], Any],
                      validate: Callable[[Any], bool] | None = None, expects: str = "a valid value",
                      replace: bool = False) -> None:
        """Add a rule kind: policies of this engine may then use ``name`` in their rules, and
        ``check(decision, value)`` decides it (None or True passes; False, a message, or (actual, message)
        fails). ``validate(value)`` is checked when a policy is added (``expects`` says what it wants).
        Built-in rules cannot be replaced; a custom one only with ``replace=True``."""
        if not isinstance(name, str) or not _RULE_NAME.match(name):
            raise ValidationError(f"a rule name is lower-case letters, digits and _ (got {name!r})", rule=name)
        if not callable(check) or (validate is not None and not callable(validate)):
            raise ValidationError(f"register_rule({name!r}) needs a callable check (and validate, if given)", rule=name)
        if name in RULES:
            raise ConflictError(f"{name!r} is a built-in policy rule and cannot be replaced", rule=name)
        if name in self.rules and not replace:
            raise ConflictError(f"rule {name!r} is already registered; pass replace=True to replace it", rule=name)
        self.rules[name] = (validate or (lambda _v: True), expects, custom_check(name, check))

    # --- policies --------------------------------------------------------------------------
    def _node(self, policy: Policy, change_reason: str = "") -> Node:
        validate_rules(policy.rules, self.rules)
        if not isinstance(policy.policy_id, str) or not policy.policy_id.strip():
            raise ValidationError("a policy needs a non-empty policy_id")
        props = {**policy.to_dict(), "created_at": to_utc_iso(policy.created_at),
                 "updated_at": to_utc_iso(policy.updated_at), "change_reason": change_reason}
        return Node(id=policy_node_id(policy.policy_id), kind=POLICY, namespace=self.namespace,
                    key=policy.policy_id, title=policy.name, summary=policy.description, props=props,
                    tags=[f"category:{policy.category}"], created_by=self.actor)

    def add_policy(self, policy: Policy) -> str:
        """Store a new policy; its rules are checked now (an unknown rule key is a ValidationError)."""
        self.check("write", "policy.add", policy.policy_id if isinstance(policy, Policy) else "")
        self.require_chosen("policy.add", policy.policy_id if isinstance(policy, Policy) else "", "a policy id",
                            "ask a principal who reads everything to add the policy")
        node = self._node(policy)
        with self.store.transaction():
            if self.store.get_node(node.id) is not None:
                raise ConflictError(f"policy id {policy.policy_id!r} is taken; change your policy with "
                                    "update_policy, or choose another id", policy_id=policy.policy_id)
            self.store.put_nodes([node], actor=self.actor)
            self.audit("policy.add", policy.policy_id, {"version": policy.version})
        return policy.policy_id

    def get_policy(self, policy_id: str, version: str | None = None) -> Policy:
        self.check("read", "policy.read", policy_id)
        if version is not None:
            for p in self.get_policy_history(policy_id):
                if p.version == str(version):
                    return p
            raise NotFoundError(f"policy {policy_id!r} has no version {version!r}", policy_id=policy_id,
                                version=version)
        node = self.visible_node(policy_node_id(policy_id))
        if node is None or node.kind != POLICY:
            raise NotFoundError(f"no policy {policy_id!r}; add it with add_policy", policy_id=policy_id)
        return _policy_from_node(node)

    def update_policy(self, policy_id: str | Policy, rules: dict[str, Any] | None = None, *,
                      name: str | None = None, description: str | None = None, category: str | None = None,
                      version: str | None = None, metadata: dict[str, Any] | None = None,
                      change_reason: str = "") -> Policy:
        """Write a new version (default: the version number bumped); earlier versions stay in the history."""
        self.check("write", "policy.update", policy_id.policy_id if isinstance(policy_id, Policy) else policy_id)
        if isinstance(policy_id, Policy):
            new = policy_id
            old = self.get_policy(new.policy_id)
            if new.version == old.version:
                new = Policy(**{**new.__dict__, "version": next_version(old.version)})
        else:
            old = self.get_policy(policy_id)
            new = Policy(policy_id=old.policy_id, name=name if name is not None else old.name,
                         description=description if description is not None else old.description,
                         rules=dict(rules) if rules is not None else dict(old.rules),
                         category=category if category is not None else old.category,
                         version=str(version) if version is not None else next_version(old.version),
                         created_at=old.created_at, updated_at=datetime.now(timezone.utc),
                         metadata=dict(metadata) if metadata is not None else dict(old.metadata))
        if new.version in {p.version for p in self.get_policy_history(new.policy_id)}:
            raise ConflictError(f"policy {new.policy_id!r} already has a version {new.version!r}",
                                policy_id=new.policy_id, version=new.version)
        with self.store.transaction():
            self.store.put_nodes([self._node(new, change_reason)], actor=self.actor)  # the store keeps it in its
            self.audit("policy.update", new.policy_id,  # namespace: another graph's policy is refused
                       {"from": old.version, "to": new.version, "reason": change_reason})
        return new

    def get_policy_history(self, policy_id: str) -> list[Policy]:
        """Every version of the policy, oldest first (each with ``metadata['recorded_at']``)."""
        self.check("read", "policy.read", policy_id)
        out: list[Policy] = []
        seen: set[str] = set()
        current = self.store.get_node(policy_node_id(policy_id), include_retracted=True)
        hidden = current is None or not self.seen({current.id: current})
        for node in [] if hidden else self.store.node_versions(policy_node_id(policy_id)):
            if node.retracted_at or node.kind != POLICY:
                continue
            p = _policy_from_node(node)
            if p.version in seen:
                continue
            seen.add(p.version)
            p.metadata = {**p.metadata, "recorded_at": node.recorded_at,
                          "change_reason": node.props.get("change_reason", "")}
            out.append(p)
        if not out:
            raise NotFoundError(f"no policy {policy_id!r}", policy_id=policy_id)
        return out

    def list_policies(self) -> list[Policy]:
        self.check("read", "policy.read")
        return [_policy_from_node(n) for n in self.store.find_nodes(namespace=self.namespace, kind=POLICY)]

    def get_applicable_policies(self, category: str | None = None, decision: Decision | None = None) -> list[Policy]:
        """Current policies for a category (policies of category ``*`` or ``global`` apply to all)."""
        cat = category if category is not None else (decision.category if decision is not None else None)
        return [p for p in self.list_policies() if cat is None or p.category in (cat, "*", "global")]

    # --- compliance ------------------------------------------------------------------------
    def _decision(self, decision: Decision | str) -> Decision:
        if isinstance(decision, Decision):
            return decision
        node = self.visible_node(str(decision))
        if node is None or node.kind != DECISION:
            raise NotFoundError(f"no decision {decision!r}", decision_id=str(decision))
        return decision_from_node(node)

    def check_compliance(self, decision: Decision | str, policy_id: str) -> ComplianceResult:
        """Evaluate every rule of the current policy version against the decision and its metadata (the check is
        recorded on the decision and in the audit log, so it needs write)."""
        self.check("write", "policy.check", decision.decision_id if isinstance(decision, Decision) else decision)
        d = self._decision(decision)
        policy = self.get_policy(policy_id)
        violations = evaluate_rules(policy.rules, d, self.rules)
        excepted = None
        if violations:
            for exc in self.get_exceptions(decision_id=d.decision_id, policy_id=policy_id):
                excepted = exc.exception_id
        result = ComplianceResult(policy_id, policy.version, d.decision_id, not violations, violations,
                                  list(policy.rules), excepted)
        outcome = "compliant" if result.compliant else ("excepted" if excepted else "violation")
        with self.store.transaction():
            self.audit("policy.check", d.decision_id, result.to_dict(), outcome)
            stored = self.visible_node(d.decision_id)
            if stored is not None and stored.kind == DECISION:
                self._link_policy(d.decision_id, policy, {"compliant": result.compliant, "outcome": outcome})
        return result

    def compliance_results(self, policy_id: str) -> list[dict[str, Any]]:
        """The last recorded compliance check of each decision against this policy, newest first:
        decision_id, policy_version, compliant, outcome (compliant, excepted, violation) and when."""
        self.get_policy(policy_id)  # NotFoundError for an unknown policy
        edges = [e for e in self.store.edges(dst=policy_node_id(policy_id), type=APPLIES_POLICY)
                 if "outcome" in e.props]
        shown = self.seen(self.store.get_nodes({e.src for e in edges}))
        rows = [{"decision_id": e.src, "policy_version": e.props.get("policy_version"),
                 "compliant": e.props.get("compliant"), "outcome": e.props.get("outcome"), "at": e.recorded_at}
                for e in edges if e.src in shown]
        return sorted(rows, key=lambda r: (r["at"] or "", r["decision_id"]), reverse=True)

    def analyze_policy_impact(self, policy_id: str, rules: dict[str, Any]) -> dict[str, Any]:
        """What proposed rules would change for the recorded decisions the policy applies to (nothing is written)."""
        self.check("read", "policy.read", policy_id)
        validate_rules(rules, self.rules)
        policy = self.get_policy(policy_id)
        tags = None if policy.category in ("*", "global") else [f"category:{policy.category}"]
        nodes = self.store.find_nodes(namespace=self.namespace, kind=DECISION, tags=tags, order="recorded")
        newly_violating, newly_compliant, still_violating = [], [], []
        for node in nodes:
            d = decision_from_node(node)
            now, then = evaluate_rules(policy.rules, d, self.rules), evaluate_rules(rules, d, self.rules)
            row = {"decision_id": d.decision_id, "outcome": d.outcome, "reasons": [v.message for v in then]}
            if then and not now:
                newly_violating.append(row)
            elif now and not then:
                newly_compliant.append({**row, "reasons": [v.message for v in now]})
            elif now and then:
                still_violating.append(row)
        return {"policy_id": policy_id, "current_version": policy.version, "decisions_checked": len(nodes),
                "newly_violating": newly_violating, "newly_compliant": newly_compliant,
                "still_violating": still_violating}

    def check_all(self, decision: Decision | str) -> dict[str, ComplianceResult]:
        self.check("write", "policy.check", decision.decision_id if isinstance(decision, Decision) else decision)
        d = self._decision(decision)
        return {p.policy_id: self.check_compliance(d, p.policy_id) for p in self.get_applicable_policies(d.category)}

    def _link_policy(self, decision_id: str, policy: Policy, props: dict[str, Any]) -> None:
        self.store.put_edges([Edge(decision_id, APPLIES_POLICY, policy_node_id(policy.policy_id),
                                   namespace=self.namespace, props={"policy_version": policy.version, **props})],
                             actor=self.actor)

    def apply_policy(self, decision_id: str, policy_id: str) -> None:
        """Record that a decision was made under a policy (shows in explainability and precedents)."""
        self.check("write", "policy.apply", decision_id)
        self._decision(decision_id)
        with self.store.transaction():
            self._link_policy(decision_id, self.get_policy(policy_id), {})
            self.audit("policy.apply", decision_id, {"policy_id": policy_id})

    # --- exceptions and approvals ----------------------------------------------------------
    def record_exception(self, decision_id: str | PolicyException, policy_id: str | None = None, reason: str = "",
                         approver: str = "", justification: str = "", metadata: dict[str, Any] | None = None,
                         approval_timestamp: datetime | str | None = None) -> PolicyException:
        """Record an approved deviation from a policy for one decision (audited under the acting principal; the
        ``approver`` is who approved it, recorded as data)."""
        self.check("write", "policy.exception",
                   decision_id.decision_id if isinstance(decision_id, PolicyException) else decision_id)
        if isinstance(decision_id, PolicyException):
            self.require_chosen("policy.exception", decision_id.exception_id, "an exception_id", "pass the decision "
                                "id, policy id, reason and approver: the engine assigns the exception's id")
            exc = decision_id
        else:
            exc = PolicyException(exception_id=new_id("exc"), decision_id=decision_id, policy_id=policy_id or "",
                                  reason=reason, approver=approver,
                                  approval_timestamp=as_datetime(approval_timestamp or datetime.now(timezone.utc)),
                                  justification=justification, metadata=dict(metadata or {}))
        if not exc.reason.strip() or not exc.approver.strip():
            raise ValidationError("a policy exception needs a reason and an approver")
        self._decision(exc.decision_id)
        policy = self.get_policy(exc.policy_id)
        props = {**exc.to_dict(), "approval_timestamp": to_utc_iso(exc.approval_timestamp),
                 "policy_version": policy.version}
        node = Node(id=exc.exception_id, kind=EXCEPTION, namespace=self.namespace, key=exc.exception_id,
                    title=f"exception to {exc.policy_id}", summary=exc.reason, content=exc.justification,
                    props=props, created_by=self.actor)
        with self.store.transaction():
            self.store.put_nodes([node], actor=self.actor)
            self.store.put_edges([
                Edge(exc.decision_id, HAS_EXCEPTION, exc.exception_id, namespace=self.namespace),
                Edge(exc.exception_id, EXCEPTION_TO, policy_node_id(exc.policy_id), namespace=self.namespace),
            ], actor=self.actor)
            self.audit("policy.exception", exc.decision_id, props, "granted")
        return exc

    add_exception = record_exception

    def get_exceptions(self, decision_id: str | None = None, policy_id: str | None = None) -> list[PolicyException]:
        self.check("read", "policy.read", decision_id or "")
        if decision_id is not None:
            ids = [e.dst for e in self.store.edges(src=decision_id, type=HAS_EXCEPTION)]
            nodes = list(self.seen(self.store.get_nodes(ids)).values()) if ids else []
        else:
            nodes = self.store.find_nodes(namespace=self.namespace, kind=EXCEPTION)
        out = []
        for n in nodes:
            p = n.props
            if policy_id is not None and p.get("policy_id") != policy_id:
                continue
            out.append(PolicyException(
                exception_id=n.id, decision_id=p["decision_id"], policy_id=p["policy_id"], reason=p["reason"],
                approver=p["approver"], approval_timestamp=as_datetime(p.get("approval_timestamp")),
                justification=p.get("justification", ""), metadata=dict(p.get("metadata") or {})))
        return sorted(out, key=lambda e: (e.approval_timestamp, e.exception_id))

    def record_approval(self, decision_id: str | ApprovalChain, approver: str = "", approval_method: str = "system",
                        approval_context: str = "", metadata: dict[str, Any] | None = None,
                        timestamp: datetime | str | None = None) -> ApprovalChain:
        """Record one link of a decision's approval chain (who approved it, how, in what context), audited under
        the acting principal."""
        self.check("write", "decision.approval",
                   decision_id.decision_id if isinstance(decision_id, ApprovalChain) else decision_id)
        if isinstance(decision_id, ApprovalChain):
            self.require_chosen("decision.approval", decision_id.approval_id, "an approval_id",
                                "pass the decision id and approver: the engine assigns the approval's id")
            appr = decision_id
        else:
            appr = ApprovalChain(approval_id=new_id("appr"), decision_id=decision_id, approver=approver,
                                 approval_method=approval_method, approval_context=approval_context,
                                 timestamp=as_datetime(timestamp or datetime.now(timezone.utc)),
                                 metadata=dict(metadata or {}))
        if not appr.approver.strip():
            raise ValidationError("an approval needs an approver")
        if appr.approval_method not in APPROVAL_METHODS:
            raise ValidationError(f"approval_method must be one of {list(APPROVAL_METHODS)}, got "
                                  f"{appr.approval_method!r}", approval_method=appr.approval_method)
        self._decision(appr.decision_id)
        props = {**appr.to_dict(), "timestamp": to_utc_iso(appr.timestamp)}
        position = len(self.store.edges(src=appr.decision_id, type=APPROVED_BY))
        node = Node(id=appr.approval_id, kind=APPROVAL, namespace=self.namespace, key=appr.approval_id,
                    title=f"approval by {appr.approver}", summary=appr.approval_context, props=props,
                    created_by=self.actor)
        with self.store.transaction():
            self.store.put_nodes([node], actor=self.actor)
            self.store.put_edges([Edge(appr.decision_id, APPROVED_BY, appr.approval_id, namespace=self.namespace,
                                       position=position)], actor=self.actor)
            self.audit("decision.approval", appr.decision_id, props, "approved")
        return appr

    add_approval = record_approval

    def get_approvals(self, decision_id: str) -> list[ApprovalChain]:
        """The approval chain of a decision, in the order it was recorded."""
        self.check("read", "policy.read", decision_id)
        edges = self.store.edges(src=decision_id, type=APPROVED_BY)
        nodes = self.seen(self.store.get_nodes([e.dst for e in edges])) if edges else {}
        out = []
        for e in sorted(edges, key=lambda e: e.position):
            n = nodes.get(e.dst)
            if n is None:
                continue
            p = n.props
            out.append(ApprovalChain(approval_id=n.id, decision_id=p["decision_id"], approver=p["approver"],
                                     approval_method=p["approval_method"],
                                     approval_context=p.get("approval_context", ""),
                                     timestamp=as_datetime(p.get("timestamp")), metadata=dict(p.get("metadata") or {})))
        return out
