"""A small truth-maintenance session: explicit supports, forward-chaining rules, versioned snapshots.

Facts are atoms like ``Employed(Alice)``. An assertion is a ``FactSupport`` (a support id and the
fact it asserts); a rule derives its conclusion whenever all its conditions hold, with ``?x``
variables bound consistently across them. ``apply`` adds and withdraws supports, recomputes the
derived facts to a fixpoint and, when anything changed, commits a new immutable snapshot with the
next version number.
"""
from __future__ import annotations

import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..errors import ValidationError

_ATOM = re.compile(r"^\s*([A-Za-z_][\w.:-]*)\s*\(\s*(.*?)\s*\)\s*$")


def parse_atom(text: str) -> tuple[str, tuple[str, ...]]:
    """``'Eligible(?x, Bob)'`` -> ``('Eligible', ('?x', 'Bob'))``; a bare name is a 0-ary atom."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"a fact or pattern must be non-empty text, got {text!r}")
    match = _ATOM.match(text)
    if not match:
        if re.fullmatch(r"\s*[A-Za-z_][\w.:-]*\s*", text):
            return text.strip(), ()
        raise ValidationError(f"cannot parse {text!r}; write facts as Predicate(arg, ...)", atom=text)
    args = tuple(a.strip() for a in match.group(2).split(",")) if match.group(2) else ()
    if any(not a for a in args):
        raise ValidationError(f"empty argument in {text!r}", atom=text)
    return match.group(1), args


def format_atom(pred: str, args: Sequence[str]) -> str:
    return f"{pred}({', '.join(args)})" if args else pred


def canonical(text: str) -> str:
    return format_atom(*parse_atom(text))


@dataclass(frozen=True)
class FactSupport:
    """One piece of evidence: ``support_id`` asserts ``fact``."""

    support_id: str
    fact: str
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.support_id, str) or not self.support_id:
            raise ValidationError("FactSupport needs a non-empty support_id")
        parse_atom(self.fact)


@dataclass(frozen=True)
class Rule:
    """If every condition holds (variables ``?x`` bound alike), the conclusion holds."""

    rule_id: str
    name: str
    conditions: Sequence[str]
    conclusion: str
    priority: int = 0
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.conditions:
            raise ValidationError(f"rule {self.rule_id!r} needs at least one condition", rule_id=self.rule_id)
        bound = {a for c in self.conditions for a in parse_atom(c)[1] if a.startswith("?")}
        free = [a for a in parse_atom(self.conclusion)[1] if a.startswith("?") and a not in bound]
        if free:
            raise ValidationError(f"rule {self.rule_id!r}: conclusion variables {free} appear in no condition",
                                  rule_id=self.rule_id)


@dataclass(frozen=True)
class TruthSnapshot:
    """One committed state: immutable, safe to validate against while the session moves on."""

    session_id: str
    version: int
    facts: frozenset[str]
    active_supports: frozenset[str]
    derived: frozenset[str]


def _match(pattern: tuple[str, tuple[str, ...]], fact: tuple[str, tuple[str, ...]],
           binding: dict[str, str]) -> dict[str, str] | None:
    if pattern[0] != fact[0] or len(pattern[1]) != len(fact[1]):
        return None
    out = dict(binding)
    for p, v in zip(pattern[1], fact[1]):
        if p.startswith("?"):
            if out.setdefault(p, v) != v:
                return None
        elif p != v:
            return None
    return out


def closure(base: Iterable[str], rules: Sequence[Rule]) -> frozenset[str]:
    """Every fact that follows from ``base`` under ``rules`` (naive forward chaining to a fixpoint)."""
    facts = {canonical(f) for f in base}
    parsed_rules = [([parse_atom(c) for c in r.conditions], parse_atom(r.conclusion)) for r in rules]
    changed = True
    while changed:
        changed = False
        atoms = [parse_atom(f) for f in facts]
        for conditions, (pred, args) in parsed_rules:
            bindings: list[dict[str, str]] = [{}]
            for cond in conditions:
                bindings = [b2 for b in bindings for a in atoms if (b2 := _match(cond, a, b)) is not None]
                if not bindings:
                    break
            for b in bindings:
                fact = format_atom(pred, [b.get(x, x) for x in args])
                if fact not in facts:
                    facts.add(fact)
                    changed = True
    return frozenset(facts)


class TruthMaintenanceSession:
    def __init__(self, rules: Sequence[Rule] | None = None, session_id: str | None = None) -> None:
        self.rules: list[Rule] = list(rules or [])
        ids = [r.rule_id for r in self.rules]
        if len(set(ids)) != len(ids):
            raise ValidationError("rule ids must be unique", rule_ids=ids)
        self.session_id = session_id or f"tms-{uuid.uuid4().hex[:12]}"
        self._supports: dict[str, FactSupport] = {}
        self._lock = threading.RLock()
        self._snapshot = TruthSnapshot(self.session_id, 0, frozenset(), frozenset(), frozenset())
        self.history: list[dict[str, Any]] = []

    @property
    def version(self) -> int:
        return self._snapshot.version

    @property
    def facts(self) -> frozenset[str]:
        return self._snapshot.facts

    @property
    def supports(self) -> dict[str, FactSupport]:
        with self._lock:
            return dict(self._supports)

    def snapshot(self) -> TruthSnapshot:
        return self._snapshot

    def apply(self, assertions: Sequence[FactSupport] | None = None, retractions: Sequence[str] | None = None
              ) -> TruthSnapshot:
        """Withdraw ``retractions`` (support ids), add ``assertions``; commit a new version if anything changed."""
        assertions = list(assertions or [])
        retractions = list(retractions or [])
        for a in assertions:
            if not isinstance(a, FactSupport):
                raise ValidationError(f"assertions must be FactSupport objects, got {type(a).__name__}")
        ids = [a.support_id for a in assertions]
        if len(set(ids)) != len(ids):
            raise ValidationError("the same support_id is asserted twice in one apply()", support_ids=ids)
        with self._lock:
            unknown = [r for r in retractions if r not in self._supports and r not in ids]
            if unknown:
                raise ValidationError(f"cannot retract unknown support id(s) {unknown}", unknown=unknown)
            supports = dict(self._supports)
            for r in retractions:
                supports.pop(r, None)
            for a in assertions:
                supports[a.support_id] = a
            if supports == self._supports:
                return self._snapshot
            explicit = {canonical(s.fact) for s in supports.values()}
            facts = closure(explicit, self.rules)
            snap = TruthSnapshot(self.session_id, self._snapshot.version + 1, facts, frozenset(supports),
                                 facts - explicit)
            self._supports = supports
            self._snapshot = snap
            self.history.append({"version": snap.version, "asserted": ids, "retracted": retractions})
            return snap

    def holds(self, fact: str) -> bool:
        return canonical(fact) in self._snapshot.facts
