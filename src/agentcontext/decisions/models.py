"""The decision records of seed 003: ``Decision``, ``Precedent``, ``Policy``, ``PolicyException``, ``ApprovalChain``.

Fields and their order are exactly the seed's; the optional ones default so the seed's examples
(which omit embeddings, validity and metadata) construct them unchanged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@dataclass
class Decision:
    decision_id: str
    category: str
    scenario: str
    reasoning: str
    outcome: str
    confidence: float  # 0.0 - 1.0
    timestamp: datetime = field(default_factory=_now)
    decision_maker: str = ""
    reasoning_embedding: Optional[List[float]] = None  # generated embedding
    node2vec_embedding: Optional[List[float]] = None  # structural embedding
    valid_from: Optional[str] = None  # ISO datetime
    valid_until: Optional[str] = None  # ISO datetime
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["timestamp"] = _iso(self.timestamp)
        return out


@dataclass
class Precedent:
    precedent_id: str
    source_decision_id: str
    similarity_score: float  # 0-1 match score
    relationship_type: str  # "similar_scenario" | "same_policy" | "exception_precedent"
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Policy:
    policy_id: str
    name: str
    description: str
    rules: Dict[str, Any]  # rule definitions
    category: str
    version: str = "1.0"  # e.g. "1.0", "2.1"
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["created_at"], out["updated_at"] = _iso(self.created_at), _iso(self.updated_at)
        return out


@dataclass
class PolicyException:
    exception_id: str
    decision_id: str
    policy_id: str
    reason: str
    approver: str
    approval_timestamp: datetime = field(default_factory=_now)
    justification: str = ""
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["approval_timestamp"] = _iso(self.approval_timestamp)
        return out


@dataclass
class ApprovalChain:
    approval_id: str
    decision_id: str
    approver: str
    approval_method: str  # "slack_dm" | "zoom_call" | "email" | "system"
    approval_context: str = ""
    timestamp: datetime = field(default_factory=_now)
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["timestamp"] = _iso(self.timestamp)
        return out


EMBEDDING_FIELDS = ("reasoning_embedding", "node2vec_embedding")


def decision_data(d: Decision) -> dict[str, Any]:
    """A decision as interfaces return it: ``to_dict()`` without the two embedding fields."""
    row = d.to_dict()
    for key in EMBEDDING_FIELDS:
        row.pop(key, None)
    return row


__all__ = ["Decision", "Precedent", "Policy", "PolicyException", "ApprovalChain", "decision_data"]
