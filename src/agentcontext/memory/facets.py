"""The facets of a question (issue 29, candidate generation for multi-hop questions): model-free parts of it that each
get their own dense + keyword candidates (memory/facet_search.py merges them into the pool the fusion orders).

- **speakers**: a question naming two or more speakers ("What do Jon and Gina both have in common?") gives one facet
  per speaker: the question's meaning, scoped to that speaker's turns;
- **clauses**: parts joined by and / or / both / commas / semicolons, or by a time clause (after, before, when,
  while, since: "When did Melanie go on a hike after the roadtrip?" -> "go on a hike", "the roadtrip"), each with at
  least one content word;
- **time phrases**: the question without the phrase placing it in time ("in 2023", "last May", "4 years ago"), when
  one is there (the date signal scores the phrase; the facet searches what happened);
- **keywords** (``keywords=True``): each content word of the question alone (its own best turns, so one rare word
  does not decide the whole pool: "What LGBTQ+ events has Caroline participated in?" -> "lgbtq", "events", ...).

No facet repeats the question or another facet; the question itself is never one (it is the pool's own query)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..engine.fusion import STOPWORDS, without_names, words

MAX_FACETS = 6

_CLAUSE = re.compile(r"\s*(?:[,;]|\band\b|\bor\b|\bboth\b|\bafter\b|\bbefore\b|\bwhile\b|\bsince\b|"
                     r"(?<!^)\bwhen\b)\s*", re.I)
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_TIME = re.compile(
    rf"\s*\b(?:(?:in|on|during|by|since|around|from|of)\s+)?(?:(?:the\s+)?(?:last|past|next|this|early|late)\s+)?"
    rf"(?:(?:{_MONTHS})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+\d{{4}})?|\d{{4}}|"
    rf"(?:week|weekend|month|year|summer|winter|spring|fall|autumn)s?\b|"
    rf"(?:\d+|a|an|one|two|three|four|five|six|few|several)\s+(?:days?|weeks?|months?|years?)\s+ago|"
    rf"yesterday|today|tomorrow|recently)\b", re.I)
_WH = re.compile(r"^\s*(?:what|which|who|whom|whose|where|when|why|how(?:\s+(?:many|much|long|often))?|"
                 r"in what ways?|do|does|did|is|are|was|were|has|have|had)\b", re.I)


@dataclass(frozen=True)
class Facet:
    """One part of a question: ``text`` to search (dense and keywords), and ``speaker`` (a name the question gives)
    when only that speaker's turns are its candidates."""

    text: str
    speaker: str | None = None
    kind: str = "clause"  # speaker / clause / time / keyword


# words that frame a question rather than say what it is about (beside engine/fusion.py STOPWORDS)
FRAME = frozenset("both either after before while since when many much times time often long ago year years month "
                  "months week weeks day days go went gone get got make made take took kind kinds type types".split())


def _content(text: str, frame: bool = False) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and not w.isdigit() and len(w) > 1
            and not (frame and w in FRAME)]


_JOIN = re.compile(r"\b(?:and|or|both)\b", re.I)
_AUX = re.compile(r"^\s*(?:do|does|did|is|are|was|were|has|have|had)\b", re.I)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip(" ,;?.!")


def _framed(text: str) -> str:
    """``text`` without its question word, leading auxiliary and dangling and / or / both."""
    return _clean(_AUX.sub(" ", _WH.sub(" ", _JOIN.sub(" ", text))))


def time_phrase_removed(query: str) -> str:
    """``query`` without the phrases that place it in time (the query itself when it has none)."""
    return _clean(_TIME.sub(" ", query))


def clauses(query: str, names: Sequence[str] = ()) -> list[str]:
    """The parts of ``query`` (its speakers' names left out first, so "Jon and Gina" is no clause) joined by and / or
    / both / commas / a time clause, each with a content word; [] when there is only one."""
    meaning = without_names(query, list(names)) if names else query
    parts = [_framed(p) for p in _CLAUSE.split(meaning)]
    parts = [p for p in parts if _content(p)]
    return parts if len(parts) > 1 else []


def facets(query: str, speakers: Sequence[str] = (), keywords: bool = False,
           limit: int = MAX_FACETS) -> list[Facet]:
    """The facets of ``query`` (module doc); ``speakers``: the speakers it names (memory search's ``mentioned``)."""
    out: list[Facet] = []
    seen = {_clean(query).lower()}

    def add(facet: Facet) -> None:
        key = (facet.text.lower(), facet.speaker)
        if facet.text and _content(facet.text) and key not in seen and len(out) < limit:
            seen.add(key)
            out.append(facet)

    names = [s for s in speakers if s]
    meaning = without_names(query, names) if names else query
    if len(names) > 1:
        for name in names:
            add(Facet(_framed(meaning), name, "speaker"))
    for part in clauses(query, names):
        add(Facet(part))
    timeless = time_phrase_removed(meaning)
    if timeless.lower() != _clean(meaning).lower():
        add(Facet(_framed(timeless), kind="time"))
    if keywords:
        for word in dict.fromkeys(_content(meaning, frame=True)):
            add(Facet(word, kind="keyword"))
    return out
