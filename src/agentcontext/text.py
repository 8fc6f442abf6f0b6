"""Plain-text helpers shared by the store's text index and the services' scoring."""
from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have he her his how i if in into is it "
    "its me my no not of on or our she so than that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split())

COMMON_SHARE = 0.5  # text search drops query terms found in more than this share of indexed rows


def query_terms(text: str) -> list[str]:
    """The distinct words of a free-text query, stopwords dropped unless nothing else is left."""
    words = [w for w in _WORD.findall(text.lower()) if w]
    return list(dict.fromkeys([w for w in words if w not in STOPWORDS] or words))


def informative(terms: list[str], counts: dict[str, int], total: int, share: float | None = None) -> list[str]:
    """Terms found in at most ``share`` (default COMMON_SHARE) of ``total`` rows (their BM25 weight is about nil,
    yet scoring every row they match dominates a query); the rarest term always stays. Small indexes keep every
    term."""
    if len(terms) < 2 or total < 1000:
        return terms
    limit = (COMMON_SHARE if share is None else share) * total
    kept = [t for t in terms if counts[t] <= limit]
    return kept or [min(terms, key=counts.__getitem__)]
