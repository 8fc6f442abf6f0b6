"""``RetrievalConfig``: everything retrieval reads, in one validated, frozen value (issue 27 s5).

The facade (``AgentContext``) builds one from its constructor arguments (and ``AGENTCONTEXT_RERANK``) and hands the
same object to memory, the retriever, decisions and reasoning; a call's own keyword arguments make a copy for that
call (``override``), validated the same way. A bad value is a ``ValidationError`` naming the field and what it takes.

- ``sources``: where candidates come from: ``memory`` (the memory store), ``vector`` (a vector store's rows),
  ``graph`` (the knowledge graph's nodes), ``docs`` (knowledge packs) and ``decisions`` (recorded decisions); the
  retriever reads the first three, a cited context (reasoning) all five;
- signal weights: ``hybrid_alpha`` (retrieval vs graph expansion score, 0 = the graph changes nothing),
  ``proximity_weight`` (graph proximity blended into the final score, and into precedents), ``weights`` (the memory
  fusion weights, engine/fusion.py; None = the memory's own);
- expansion: ``graph_expansion`` and ``max_expansion_hops``;
- ``min_score``: the one bound on a result's final score, applied once (``keep``), after every rescaling;
- ``budget_tokens``: the cited context's token budget (reasoning);
- ``truth_filter``: a ``TruthMaintenanceContextFilter`` (or None) applied to local retrieval's candidates;
- ``rerank``: the second stage over the memory's first candidates (engine/rerank.py);
- ``ranker``: the memory's order: ``linear`` (the fusion, engine/fusion.py), ``learned`` (the fusion's first
  candidates put in the order of the shipped trees, engine/ltr.py) or ``facets`` (the fusion's, with the candidates
  of the question's clauses merged in after its first hits, memory/facet_search.py);
- answer stage: ``answer_max_tokens`` and ``answer_temperature`` for ``query_with_reasoning``'s model call.

The echo's shape is declared for the doors' output types as ``operations/types.py``'s ``ConfigEcho``.

``summary()`` is the small, stable echo each result carries beside its signals (``config``): what ran, not the
whole object (the weights by a short fingerprint, the truth filter by its session).
"""
from __future__ import annotations

import dataclasses
import hashlib
import numbers
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterable, Protocol, runtime_checkable

from ..errors import ValidationError
from .fusion import FusionWeights

SOURCES = ("memory", "vector", "graph", "docs", "decisions")
RANKERS = ("linear", "learned", "facets")


class _FromConfig:
    """The default of a keyword whose None means something (``budget_tokens=None``: no budget): the call names no
    value, so the configuration's applies."""

    def __repr__(self) -> str:
        return "FROM_CONFIG"


FROM_CONFIG: Any = _FromConfig()
RETRIEVER_SOURCES = ("memory", "vector", "graph")


@runtime_checkable
class TruthFilterLike(Protocol):
    """What local retrieval calls on a truth filter (truth/filter.py's ``TruthMaintenanceContextFilter``)."""

    session_id: str

    def begin(self) -> Any: ...

    def filter(self, candidates: Any, snapshot: Any) -> Any: ...

    def finish(self, snapshot: Any) -> None: ...


def _number(name: str, value: Any, low: float, high: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise ValidationError(f"{name} must be a number {_range(low, high)}, got {value!r}", field=name,
                              allowed=_range(low, high))
    if value < low or (high is not None and value > high):
        raise ValidationError(f"{name} must be {_range(low, high)}, got {value!r}", field=name,
                              allowed=_range(low, high))
    return float(value)


def _integer(name: str, value: Any, low: int, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    allowed = f"an integer >= {low}" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValidationError(f"{name} must be {allowed}, got {value!r}", field=name, allowed=allowed)
    return int(value)


def _range(low: float, high: float | None) -> str:
    return f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be True or False, got {value!r}", field=name, allowed="True or False")
    return value


@dataclass(frozen=True)
class RetrievalConfig:
    """One validated retrieval configuration (see the module docstring)."""

    sources: tuple[str, ...] = SOURCES
    hybrid_alpha: float = 0.5
    proximity_weight: float = 0.0
    weights: FusionWeights | None = None
    graph_expansion: bool = True
    max_expansion_hops: int = 2
    min_score: float = 0.0
    budget_tokens: int | None = 4000
    truth_filter: Any = None
    rerank: bool = False
    ranker: str = "linear"
    answer_max_tokens: int | None = 1024
    answer_temperature: float | None = None

    def __post_init__(self) -> None:
        now = vars(self)
        for name, check in CHECKS.items():  # frozen: the normalised values are set once, here
            object.__setattr__(self, name, check(now[name]))

    # --- one call's copy ---------------------------------------------------------------------
    def override(self, **given: Any) -> "RetrievalConfig":
        """This configuration with the given fields set for one call. None (or ``FROM_CONFIG``) leaves a field as
        it is; for a field whose None means something (``budget_tokens``, ``answer_max_tokens``,
        ``answer_temperature``), None sets it and only ``FROM_CONFIG`` leaves it."""
        unknown = set(given) - set(FIELDS)
        if unknown:
            raise ValidationError(f"RetrievalConfig has no field {', '.join(sorted(unknown))}; its fields: "
                                  f"{', '.join(FIELDS)}", field=sorted(unknown)[0], allowed=list(FIELDS))
        now = vars(self)
        changed = {k: v for k, v in given.items()
                   if v is not FROM_CONFIG and (v is not None or k in NONE_MEANS) and now[k] != v}
        if not changed:
            return self
        new = object.__new__(RetrievalConfig)  # a copy with only the changed fields checked (a call's cost)
        fields = {name: now[name] for name in FIELDS}
        fields.update({name: CHECKS[name](value) for name, value in changed.items()})
        vars(new).update(fields)
        return new

    def uses(self, source: str) -> bool:
        return source in self.sources

    @property
    def hops(self) -> int:
        """The expansion hops that run: 0 when expansion is off."""
        return self.max_expansion_hops if self.graph_expansion else 0

    # --- the one min_score filter ------------------------------------------------------------
    def keep(self, results: Iterable[Any]) -> list[Any]:
        """The results whose final ``score`` reaches ``min_score`` (``above``)."""
        return above(results, self.min_score)

    # --- the echo ----------------------------------------------------------------------------
    @cached_property
    def echo(self) -> dict[str, Any]:
        """The small, stable summary each result carries (computed once per configuration; copy before changing)."""
        tf = self.truth_filter
        return {"sources": list(self.sources), "hybrid_alpha": self.hybrid_alpha,
                "proximity_weight": self.proximity_weight, "hops": self.hops, "min_score": self.min_score,
                "rerank": self.rerank, "ranker": self.ranker, "weights": _fingerprint(self.weights),
                "truth_filter": None if tf is None else str(tf.session_id)}

    def summary(self) -> dict[str, Any]:
        """A copy of ``echo`` (safe to change)."""
        return dict(self.echo, sources=list(self.sources))


def check_min_score(value: Any) -> float:
    """``min_score`` checked as the configuration checks it (a number in [0, 1]), for a door that takes it alone."""
    return _number("min_score", value, 0.0, 1.0)


def above(results: Iterable[Any], min_score: float) -> list[Any]:
    """The results whose final ``score`` reaches ``min_score``, in their order: the one min_score filter of every
    retrieval path (memory, the retriever, cited context, knowledge search), applied once, after every rescaling.
    Results are ``RetrievedContext`` or anything with a ``score`` attribute, or dicts with a ``score`` key."""
    if min_score <= 0.0:
        return list(results)
    return [r for r in results if (r["score"] if isinstance(r, dict) else r.score) >= min_score]


def _sources(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationError(f"sources must be a list of {', '.join(SOURCES)}, got {value!r}", field="sources",
                              allowed=list(SOURCES))
    sources = tuple(value)
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValidationError(f"sources: unknown {', '.join(map(repr, unknown))}; use any of {', '.join(SOURCES)}",
                              field="sources", allowed=list(SOURCES))
    return tuple(dict.fromkeys(sources))


def _weights(value: Any) -> FusionWeights | None:
    if value is not None and not isinstance(value, FusionWeights):
        raise ValidationError(f"weights must be a FusionWeights (engine/fusion.py) or None, got "
                              f"{type(value).__name__}", field="weights", allowed="FusionWeights or None")
    return value


def _ranker(value: Any) -> str:
    if value not in RANKERS:
        raise ValidationError(f"ranker must be one of {', '.join(RANKERS)}, got {value!r}", field="ranker",
                              allowed=list(RANKERS))
    return str(value)


def _truth_filter(value: Any) -> Any:
    if value is not None and not isinstance(value, TruthFilterLike):
        raise ValidationError("truth_filter must be a TruthMaintenanceContextFilter (session_id, begin, filter, "
                              f"finish) or None, got {type(value).__name__}", field="truth_filter",
                              allowed="TruthMaintenanceContextFilter or None")
    return value


# Each field's check, returning the normalised value (a ValidationError names the field and what it takes).
CHECKS: dict[str, Callable[[Any], Any]] = {
    "sources": _sources,
    "hybrid_alpha": lambda v: _number("hybrid_alpha", v, 0.0, 1.0),
    "proximity_weight": lambda v: _number("proximity_weight", v, 0.0, 1.0),
    "weights": _weights,
    "graph_expansion": lambda v: _flag("graph_expansion", v),
    "max_expansion_hops": lambda v: _integer("max_expansion_hops", v, 0),
    "min_score": lambda v: _number("min_score", v, 0.0, 1.0),
    "budget_tokens": lambda v: _integer("budget_tokens", v, 1, optional=True),
    "truth_filter": _truth_filter,
    "rerank": lambda v: _flag("rerank", v),
    "ranker": _ranker,
    "answer_max_tokens": lambda v: _integer("answer_max_tokens", v, 1, optional=True),
    "answer_temperature": lambda v: None if v is None else _number("answer_temperature", v, 0.0, 2.0),
}
FIELDS = tuple(f.name for f in dataclasses.fields(RetrievalConfig))
assert set(CHECKS) == set(FIELDS), "every field of RetrievalConfig has its check"
NONE_MEANS = frozenset({"budget_tokens", "answer_max_tokens", "answer_temperature"})  # None: no budget, no cap


def _fingerprint(weights: FusionWeights | None) -> str:
    """"default", or a short digest of the weights (two configurations with the same weights echo the same)."""
    if weights is None or weights == FusionWeights():
        return "default"
    return hashlib.sha1(repr(weights).encode()).hexdigest()[:8]
