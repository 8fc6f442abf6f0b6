"""Plain-text helpers shared by the store's text index and the services' scoring, and ``parse_pairs`` (the
``KEY=VALUE`` items of a command line)."""
from __future__ import annotations

import json
import re
from typing import Any

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


def _cons(w: str, i: int) -> bool:
    ch = w[i]
    if ch in "aeiou":
        return False
    if ch == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem_``."""
    m, i, n = 0, 0, len(stem_)
    while i < n and _cons(stem_, i):
        i += 1
    while i < n:
        while i < n and not _cons(stem_, i):
            i += 1
        if i >= n:
            break
        m += 1
        while i < n and _cons(stem_, i):
            i += 1
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _cons(stem_, i) for i in range(len(stem_)))


def _double(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    return (len(w) >= 3 and _cons(w, len(w) - 3) and not _cons(w, len(w) - 2) and _cons(w, len(w) - 1)
            and w[-1] not in "wxy")


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            base = w[: len(w) - len(suffix)]
            return base + repl if _measure(base) > min_m else w
    return w


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
          ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
          ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
          "ate", "iti", "ous", "ive", "ize")


def stem(word: str) -> str:
    """The Porter stemmer (M. F. Porter, 1980), the one SQLite's FTS5 ``porter`` tokenizer applies, so words
    match here as they match in the text index (camping/camped/camps -> camp, approval/approved -> approv)."""
    w = word.lower()
    if len(w) <= 2:
        return w
    # step 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    for suffix in sorted(_STEP4, key=len, reverse=True):
        if w.endswith(suffix):
            base = w[: len(w) - len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    # step 5
    if w.endswith("e"):
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            w = base
    if _measure(w) > 1 and _double(w) and w.endswith("l"):
        w = w[:-1]
    return w


def informative(terms: list[str], counts: dict[str, int], total: int, share: float | None = None) -> list[str]:
    """Terms found in at most ``share`` (default COMMON_SHARE) of ``total`` rows (their BM25 weight is about nil,
    yet scoring every row they match dominates a query); the rarest term always stays. Small indexes keep every
    term."""
    if len(terms) < 2 or total < 1000:
        return terms
    limit = (COMMON_SHARE if share is None else share) * total
    kept = [t for t in terms if counts[t] <= limit]
    return kept or [min(terms, key=counts.__getitem__)]


def parse_pairs(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict; VALUE is read as JSON when it parses (true, 0.8, [..], "x"), else as text."""
    from .errors import ValidationError

    found: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"{flag} expects KEY=VALUE, got {pair!r}", option=flag, value=pair)
        try:
            found[key] = json.loads(raw)
        except ValueError:
            found[key] = raw
    return found
