"""Shared plumbing for the decision layer: where a graph's store is, and decision <-> node mapping.

Decisions are nodes of kind ``decision`` in the graph's namespace; their embedding text is the
scenario and the reasoning, so the store caches one vector per decision. Entities, policies,
exceptions and approvals are nodes too; causal links and entity links are typed edges.

Access: everything bound to a graph (``Bound``) acts as a principal (given, else the graph's; None = the
owner) and checks each call under the graph's namespace (``graph:<name>``): reads need ``read``, recording,
linking, compliance checks, exceptions and approvals ``write``. Every record returned or walked through
is one the principal sees (``access.Sight``); one it does not see answers like one that does not exist.
"""
from __future__ import annotations

import os
import socket
import sys
import uuid
from datetime import datetime, timezone
from importlib import metadata
from typing import Any, Callable, Sequence, Union

from .. import access
from ..errors import ValidationError
from ..model import RESERVED_ID_PREFIXES, Node, to_utc_iso
from ..seams import GraphHandle, conforms
from ..store.base import Store
from ..workspace import Workspace
from .models import Decision

DEFAULT_NAMESPACE = "decisions"
DECISION = "decision"
ENTITY = "entity"
POLICY = "policy"
EXCEPTION = "policy_exception"
APPROVAL = "approval"

CAUSAL_TYPES = ("caused", "informed")  # src = cause, dst = effect
INVOLVES = "involves"  # decision -> entity
APPLIES_POLICY = "applies_policy"  # decision -> policy
HAS_EXCEPTION = "has_exception"  # decision -> policy_exception
EXCEPTION_TO = "exception_to"  # policy_exception -> policy
APPROVED_BY = "approved_by"  # decision -> approval
PRECEDENT = "has_precedent"  # decision -> earlier decision it followed
STRUCTURAL_TYPES = (INVOLVES, APPLIES_POLICY)

Target = Union[GraphHandle, Workspace, Store]  # what a decision object is bound to


def graph_of(target: Any) -> GraphHandle | None:
    """The ContextGraph a decision object is bound to (None: a bare Workspace or Store)."""
    return None if isinstance(target, Workspace) or not conforms(target, GraphHandle) else target


def workspace_of(graph: Any) -> Workspace:
    """The workspace behind a ContextGraph or a Workspace; a bare Store gets a new Workspace around it
    (``Bound`` keeps the one it made, so its caches live as long as the object bound to the store)."""
    if isinstance(graph, Workspace):
        return graph
    if conforms(graph, GraphHandle):
        return graph.workspace
    if isinstance(graph, Store):
        return Workspace(graph)
    raise ValidationError(
        f"expected a ContextGraph, Workspace or Store, got {type(graph).__name__}; pass "
        "knowledge_graph=ContextGraph() (or a Workspace)", got=type(graph).__name__)


def namespace_of(graph: Any) -> str:
    """The namespace the graph keeps its nodes in (decisions live beside them)."""
    handle = graph_of(graph)
    return handle.namespace if handle is not None and handle.namespace else DEFAULT_NAMESPACE


def principal_of(graph: Any) -> str | None:
    """Who the graph acts for (None: the owner, or a bare Workspace or Store that acts for no one)."""
    handle = graph_of(graph)
    return handle.principal if handle is not None else None


def policy_node_id(policy_id: str) -> str:
    return f"policy:{policy_id}"


def resolve_entities(graph: Any, store: Store, names: Sequence[str], sees: Any = None
                     ) -> tuple[dict[str, str], set[str]]:
    """Store ids for entity names in one query: the graph's own node of that name, else a node whose
    store id is the name, else the id a new node would get. Also returns the ids that exist. With ``sees``
    (a predicate over nodes), a node it does not see counts as missing."""
    handle = graph_of(graph)
    own = {n: (str(handle.store_id(n)) if handle is not None else n) for n in names}
    found = store.get_nodes([*own.values(), *names]) if names else {}
    if sees is not None:
        found = {i: node for i, node in found.items() if sees(node)}
    out = {n: own[n] if own[n] in found else (n if n in found else own[n]) for n in names}
    return out, {i for i in out.values() if i in found}


class Bound:
    """Something bound to a graph; its workspace is looked up on use (a graph may swap it on clear())."""

    def _bind(self, target: Any, namespace: str | None, who: str, principal: str | None = None) -> None:
        if target is None:
            raise ValidationError(f"{who} needs graph_store= (a ContextGraph, Workspace or Store)")
        self.graph = target
        handle = self._handle = graph_of(target)  # the ContextGraph, told once from a bare Workspace or Store
        made = handle.workspace if handle is not None else workspace_of(target)  # fails now on a wrong type
        # A graph may swap its workspace (clear()), so it is looked up on use; one made here is kept.
        self._made = made if handle is None and made is not target else None
        self.namespace = namespace or (handle.namespace if handle is not None and handle.namespace
                                       else DEFAULT_NAMESPACE)
        self.principal = principal if principal is not None else (handle.principal if handle is not None else None)

    def check(self, level: str, action: str, target: str = "") -> None:
        """Raise AccessDeniedError (audited) unless the principal holds ``level`` on the graph's namespace."""
        access.require(self.ws, self.principal, self.namespace, level, action, target)

    def require_chosen(self, action: str, chosen: Any, what: str, hint: str) -> None:
        """Refuse a caller-chosen id alike whether it is free or held by a hidden record, unless the principal
        reads everything (``access.require_whole_view``)."""
        access.require_whole_view(self.ws, self.principal, action, chosen, what, hint)

    def audit(self, action: str, target: str, detail: dict[str, Any] | None = None, outcome: str = "ok") -> None:
        access.record(self.ws, self.principal, action, target, detail, outcome)

    @property
    def who(self) -> str:
        """The acting principal's name (the owner's when none was given)."""
        return access.effective_principal(self.ws, self.principal)

    def seen(self, nodes: dict[str, Node]) -> dict[str, Node]:
        """The nodes the principal sees (all of them for one who may read everything)."""
        sight = access.sight(self.ws, self.principal)
        return nodes if sight is None else {i: n for i, n in nodes.items() if sight.node(n)}

    def sees(self) -> Any:
        """A predicate over nodes (None: the principal sees everything)."""
        sight = access.sight(self.ws, self.principal)
        return None if sight is None else sight.node

    def follows(self) -> Callable[[str], bool] | None:
        """For walks: whether an edge of some namespace may be taken (None: every edge; access.Sight.follows)."""
        sight = access.sight(self.ws, self.principal)
        return None if sight is None else sight.follows

    def graph_view(self) -> Any:
        """The graph as the principal sees it, for what is computed from its structure (Node2Vec vectors): the
        graph itself when it already acts for the principal (or the principal reads everything)."""
        graph = self.graph
        if access.sight(self.ws, self.principal) is None or self._handle is None:
            return graph
        return self._handle.acting_as(self.principal)

    def visible_node(self, node_id: str, as_of: str | None = None) -> Node | None:
        node = self.store.get_node(node_id, as_of=as_of)
        return node if node is not None and self.seen({node.id: node}) else None

    @property
    def ws(self) -> Workspace:
        if self._made is not None:
            return self._made
        return self._handle.workspace if self._handle is not None else workspace_of(self.graph)

    @property
    def store(self) -> Store:
        return self.ws.store


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def embed_text(scenario: str, reasoning: str) -> str:
    return f"{scenario}\n{reasoning}".strip()


def as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    text = to_utc_iso(value)
    return datetime.fromisoformat(text) if text else datetime.now(timezone.utc)


def epoch(value: str | datetime | None, default: float) -> float:
    text = to_utc_iso(value)
    return datetime.fromisoformat(text).timestamp() if text else default


def captured_context(principal: str | None, namespace: str) -> dict[str, Any]:
    """What a decision records of the system that called and the context in effect (seed 003's "cross-system
    context capture on every decision"), kept as ``metadata["captured"]``: the library and its version, the program
    and host that recorded it, who acted and the graph it went into. (The entities, policies and causes it names
    are its edges, read through the access checks: echoed here they would reach readers of the decision who may
    not read them.)"""
    try:
        version = metadata.version("agentcontext")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = "unknown"
    return {"system": f"agentcontext {version}", "program": os.path.basename(sys.argv[0] or "") or "python",
            "host": socket.gethostname(), "principal": principal or "owner", "graph": namespace}


def decision_node(d: Decision, namespace: str) -> Node:
    """The store node for a decision (validity defaults to 'from when it was made, open-ended')."""
    did = d.decision_id
    if not isinstance(did, str) or not 0 < len(did) <= 300 or not did.isprintable() or did != did.strip() \
            or did.startswith(RESERVED_ID_PREFIXES):
        raise ValidationError(f"decision_id {str(did)[:80]!r} must be 1-300 printable characters and not have the "
                              f"form of another kind of record's id ({', '.join(RESERVED_ID_PREFIXES)})",
                              decision_id=str(did)[:300])
    if not isinstance(d.confidence, (int, float)) or not 0.0 <= float(d.confidence) <= 1.0:
        raise ValidationError(f"confidence must be a number from 0.0 to 1.0, got {d.confidence!r}",
                              confidence=d.confidence)
    for name, value in (("category", d.category), ("scenario", d.scenario), ("outcome", d.outcome)):
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"a decision needs a non-empty {name}", field=name)
    if not isinstance(d.reasoning, str):
        raise ValidationError("reasoning must be a string (may be empty)", field="reasoning")
    stamp = to_utc_iso(d.timestamp) or to_utc_iso(datetime.now(timezone.utc))
    valid_from = to_utc_iso(d.valid_from) or stamp
    valid_until = to_utc_iso(d.valid_until)
    if valid_until is not None and valid_until <= valid_from:
        raise ValidationError(f"valid_until ({valid_until}) must be after valid_from ({valid_from})",
                              valid_from=valid_from, valid_until=valid_until)
    props = {
        "category": d.category, "scenario": d.scenario, "reasoning": d.reasoning, "outcome": d.outcome,
        "confidence": float(d.confidence), "decision_maker": d.decision_maker or "", "timestamp": stamp,
        "metadata": dict(d.metadata or {}),
    }
    return Node(
        id=d.decision_id, kind=DECISION, namespace=namespace, key=d.decision_id, title=d.scenario,
        summary=d.outcome, content=d.reasoning, props=props, tags=[f"category:{d.category}"],
        valid_from=valid_from, valid_until=valid_until, created_by=d.decision_maker or "",
        embed_text=embed_text(d.scenario, d.reasoning),
    )


def decision_from_node(node: Node) -> Decision:
    p = node.props
    return Decision(
        decision_id=node.id, category=p.get("category", ""), scenario=p.get("scenario", node.title),
        reasoning=p.get("reasoning", node.content), outcome=p.get("outcome", node.summary),
        confidence=float(p.get("confidence", 0.0)), timestamp=as_datetime(p.get("timestamp") or node.recorded_at),
        decision_maker=p.get("decision_maker", ""), valid_from=node.valid_from, valid_until=node.valid_until,
        metadata=dict(p.get("metadata") or {}),
    )
