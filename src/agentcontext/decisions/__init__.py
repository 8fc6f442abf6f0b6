"""Decisions, precedents, causal chains, policies and checkpoints (seed 003)."""
from __future__ import annotations

from .causal import CausalChainAnalyzer
from .models import ApprovalChain, Decision, Policy, PolicyException, Precedent
from .policy import ComplianceResult, PolicyEngine, RuleViolation
from .recorder import DecisionRecorder

__all__ = ["ApprovalChain", "CausalChainAnalyzer", "ComplianceResult", "Decision", "DecisionRecorder", "Policy",
           "PolicyEngine", "PolicyException", "Precedent", "RuleViolation"]
