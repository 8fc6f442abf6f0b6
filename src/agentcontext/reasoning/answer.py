"""Reading a grounded answer: its citations, checked against the bundle, and how far to trust it.

Citations are bracketed source numbers (``[2]``, ``[1, 3]``, ``[1][3]``) or bracketed source ids
(``[mem_...]``, ``[lib:notes#intro]``, a decision id). One that names no source of the bundle is kept
apart in ``unknown_citations`` and never reported as a citation.

``confidence`` (in [0, 1]) is the product of three parts, each in [0, 1]:

- ``coverage``: the share of the answer's sentences that a real citation covers: its own, or, for a sentence
  without one, the next citing sentence's of the same paragraph ("A. B [1]." cites [1] for both);
- ``support``: how far the cited sources hold what the covered sentences say: per sentence, the share of its
  content words (stopwords out, words matched on their first five letters, numbers exactly) found in the text of
  the sources it cites, as ``min(1, share / FULL_SUPPORT) ** 2`` (full at 0.6, since an answer rephrases; squared
  below, so a sentence whose details are half made up loses more than half), averaged over them;
- ``precision``: the share of citation markers that name a real source (invented ones lower it).

So a grounded answer that cites the sources holding what it says scores high whatever their retrieval scores,
and an uncited one, one citing a source that does not say it, or one inventing citations scores low (a labelled set
of 20 answers in tests/test_reasoning_confidence.py). ``relevance``, the mean retrieval score of the sources cited,
is reported beside the parts but is not one of them (it ranked the sources; it says nothing of the answer).
An answer that cites nothing (including "the sources do not say") has confidence 0: nothing in the
context vouches for it. It is not the model's own opinion of itself and never a constant.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.fusion import STOPWORDS
from .bundle import ContextBundle

if TYPE_CHECKING:
    from ..llms.base import Completion

FULL_SUPPORT = 0.6  # the share of a sentence's content words its sources must hold to support it fully
_TOKEN = re.compile(r"[^\W_]+")

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
    relevance: float = 0.0  # the mean retrieval score of the sources cited (reported, not a factor)

    @property
    def confidence(self) -> float:
        return round(self.coverage * self.support * self.precision, 4)

    def parts(self) -> dict[str, float]:
        return {"coverage": round(self.coverage, 4), "support": round(self.support, 4),
                "precision": round(self.precision, 4), "relevance": round(self.relevance, 4)}


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


def _content(text: str) -> set[str]:
    """Content words: lower case, no stopwords, a word cut to its first five letters (invoices ~ invoiced), a
    number kept whole (2014 is not 2015)."""
    out = set()
    for token in _TOKEN.findall(text.lower()):
        if token.isdigit():
            out.add(token)
        elif len(token) >= 3 and token not in STOPWORDS:
            out.add(token[:5])
    return out


def _sentence_support(sentence: str, labels: list[int], bundle: ContextBundle,
                      held: dict[int, set[str]]) -> float:
    said = _content(_MARKER.sub(" ", sentence))
    if not said:
        return 1.0  # nothing to check ("See [1].")
    for label in labels:
        if label not in held:
            source = bundle.sources[label - 1]
            held[label] = _content(f"{source.title} {source.content}")
    found = set().union(*(held[label] for label in labels))
    return min(1.0, len(said & found) / len(said) / FULL_SUPPORT) ** 2


def ground(response: str, bundle: ContextBundle) -> Grounding:
    cited: list[int] = []
    unknown: list[str] = []
    markers_total = markers_real = 0
    claims: list[tuple[str, list[int]]] = []  # each sentence and the real labels it cites itself
    paragraphs: list[list[int]] = []  # the claims' indexes, paragraph by paragraph
    for paragraph in response.split("\n"):
        here: list[int] = []
        for sentence in _SENTENCE.findall(paragraph):
            if not _WORDS.search(_MARKER.sub("", sentence)):
                continue
            labels: list[int] = []
            for marker in _MARKER.findall(sentence):
                real, bad = _resolve(marker, bundle)
                markers_total += len(real) + len(bad)
                markers_real += len(real)
                unknown.extend(bad)
                labels += [x for x in real if x not in labels]
                cited += [x for x in real if x not in cited]
            here.append(len(claims))
            claims.append((sentence, labels))
        paragraphs.append(here)
    held: dict[int, set[str]] = {}
    supports: list[float] = []
    for here in paragraphs:
        carried: list[int] = []
        for index in reversed(here):  # a sentence without a citation takes the next citing one's
            sentence, labels = claims[index]
            carried = labels or carried
            if carried:
                supports.append(_sentence_support(sentence, carried, bundle, held))
    coverage = len(supports) / len(claims) if claims else 0.0
    support = sum(supports) / len(supports) if supports else 0.0
    precision = markers_real / markers_total if markers_total else 0.0
    scores = [bundle.sources[label - 1].score for label in cited]
    relevance = sum(scores) / len(scores) if scores else 0.0
    return Grounding(cited, list(dict.fromkeys(unknown)), coverage, support, precision, relevance)


def result(bundle: ContextBundle, response: str, completion: Completion | None = None) -> dict[str, Any]:
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
        "provider": completion.provider if completion is not None else None,
        "model": completion.model if completion is not None else None,
        "query": bundle.query,
        "config": bundle.config,
    }
