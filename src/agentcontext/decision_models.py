"""Seed 003's ``semantica.context.decision_models``: the decision records, re-exported."""
from __future__ import annotations

from .decisions.models import ApprovalChain, Decision, Policy, PolicyException, Precedent

__all__ = ["ApprovalChain", "Decision", "Policy", "PolicyException", "Precedent"]
