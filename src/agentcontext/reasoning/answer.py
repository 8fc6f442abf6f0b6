"""Reading a grounded answer: its citations, checked against the bundle, and how far to trust it.

Citations are bracketed source numbers (``[2]``, ``[1, 3]``, ``[1][3]``) or bracketed source ids
(``[mem_...]``, ``[lib:notes#intro]``, a decision id). One that names no source of the bundle is kept
apart in ``unknown_citations`` and never reported as a citation.

``confidence`` (in [0, 1]) is the product of three parts, each in [0, 1]:

- ``coverage``: the share of the answer's sentences that cite at least one real source;
- ``support``: the mean retrieval score of the distinct sources cited (how relevant the evidence was);
- ``precision``: the share of citation markers that name a real source (invented ones lower it).

An answer that cites nothing (including "the sources do not say") has confidence 0: nothing in the
context vouches for it. It is not the model's own opinion of itself and never a constant.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .bundle import ContextBundle

_MARKER = re.compile(r"\[([^\[\]\n]{1,200})\]")
_NUMBERS = re.compile(r"\s*\d+(?:\s*[,;]\s*\d+)*\s*")
_SENTENCE = re.compile(r"[^.!?\n]*[^\s.!?\n][^.!?\n]*(?:[.!?]+|\n|$)(?:\s*\[[^\[\]\n]{1,200}\])*")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_ID_SHAPED = re.compile(r"(?:mem|dec|decision)_\w+|[\w.-]+:[\w.-]+#[\w.]+|graph:[\w.-]+/\S+|[Ss](?:ource)?\s*\d+")


@dataclass
class Grounding:
    citations: list[int]  # labels of the cited sources, in order of first citation
    unknown: list[str]
    coverage: float
    support: float
    precision: float

    @property
    def confidence(self) -> float:
        return round(self.coverage * self.support * self.precision, 4)

    def parts(self) -> dict[str, float]:
        return {"coverage": round(self.coverage, 4), "support": round(self.support, 4),
                "precision": round(self.precision, 4)}


def _resolve(marker: str, bundle: ContextBundle) -> tuple[list[int], list[str]]:
    """(labels a marker names, the parts of it that name nothing)."""
    n = bundle.num_sources
    if _NUMBERS.fullmatch(marker):
        nums = [int(x) for x in re.findall(r"\d+", marker)]
        return [x for x in nums if 1 <= x <= n], [str(x) for x in nums if not 1 <= x <= n]
    labels, unknown = [], []
    for part in re.split(r"\s*[,;]\s*", marker.strip()):
        label = bundle.label_of(part.strip())
        if label is not None:
            labels.append(label)
        elif _looks_like_citation(part):
            unknown.append(part.strip())
    return labels, unknown


def _looks_like_citation(part: str) -> bool:
    """An unknown id-shaped marker ("[mem_123]", "[S7]", "[source 4]") counts as an invented citation; other
    bracketed prose ("[sic]", "[citation needed]") is not a citation at all."""
    token = part.strip()
    return bool(_ID_SHAPED.fullmatch(token))


def ground(response: str, bundle: ContextBundle) -> Grounding:
    cited: list[int] = []
    unknown: list[str] = []
    markers_total = markers_real = 0
    sentences = [s for s in _SENTENCE.findall(response) if _WORDS.search(_MARKER.sub("", s))]
    covered = 0
    for sentence in sentences:
        real_here = False
        for marker in _MARKER.findall(sentence):
            labels, bad = _resolve(marker, bundle)
            markers_total += len(labels) + len(bad)
            markers_real += len(labels)
            unknown.extend(bad)
            for label in labels:
                real_here = True
                if label not in cited:
                    cited.append(label)
        covered += real_here
    coverage = covered / len(sentences) if sentences else 0.0
    scores = [bundle.sources[label - 1].score for label in cited]
    support = sum(scores) / len(scores) if scores else 0.0
    precision = markers_real / markers_total if markers_total else 0.0
    return Grounding(cited, list(dict.fromkeys(unknown)), coverage, support, precision)


def result(bundle: ContextBundle, response: str, completion: Any = None) -> dict[str, Any]:
    """The dict query_with_reasoning returns (seed 003's keys first)."""
    g = ground(response, bundle)
    usage = completion.usage.to_dict() if completion is not None else {"input_tokens": None, "output_tokens": None,
                                                                       "total_tokens": None}
    return {
        "response": response,
        "confidence": g.confidence,
        "num_sources": bundle.num_sources,
        "sources": [s.to_dict(i) for i, s in enumerate(bundle.sources, 1)],
        "citations": [{"label": label, "id": bundle.sources[label - 1].id, "kind": bundle.sources[label - 1].kind,
                       "title": bundle.sources[label - 1].title, "score": round(bundle.sources[label - 1].score, 4)}
                      for label in g.citations],
        "unknown_citations": g.unknown,
        "confidence_parts": g.parts(),
        "reasoning_path": bundle.reasoning_path,
        "usage": usage,
        "context_tokens": bundle.tokens,
        "budget_tokens": bundle.budget_tokens,
        "dropped": bundle.dropped,
        "skipped": bundle.skipped,
        "provider": getattr(completion, "provider", None),
        "model": getattr(completion, "model", None),
        "query": bundle.query,
    }
