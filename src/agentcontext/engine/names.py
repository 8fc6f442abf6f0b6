"""How entity names are compared: normalised forms, legal suffixes, initials, and the words of a text.

These are the EntityLinker's rules (graph/entity_table.py resolves mentions with them) and what the
mention matcher (engine/mentions.py) scans texts with, so a name found in text and a name resolved
one at a time agree.
"""
from __future__ import annotations

import re
import unicodedata

LEGAL_SUFFIXES = frozenset({
    "inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc", "llp", "lp", "plc",
    "gmbh", "ag", "sa", "nv", "bv", "ab", "oy", "asa", "spa", "srl", "pty", "pte", "kk", "se", "sarl", "sas",
})
# Well-known tickers and short names; extend per table with aliases= or add_alias().
KNOWN_ALIASES = {
    "aapl": "apple", "msft": "microsoft", "googl": "alphabet", "goog": "alphabet", "amzn": "amazon",
    "meta": "meta platforms", "fb": "facebook", "tsla": "tesla", "nvda": "nvidia",
    "ibm": "international business machines",
    "orcl": "oracle", "csco": "cisco systems", "intc": "intel", "amd": "advanced micro devices", "nflx": "netflix",
    "crm": "salesforce", "adbe": "adobe", "jpm": "jpmorgan chase", "gs": "goldman sachs", "ko": "coca cola",
    "pep": "pepsico", "wmt": "walmart", "dis": "walt disney", "ba": "boeing", "ge": "general electric",
}
STOP = frozenset({"of", "and", "the", "for", "&"})

_TOKEN = re.compile(r"[0-9A-Za-z_&]+")


def normalize(text: str) -> str:
    """Casefolded, accents and punctuation removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s&]", " ", text.casefold().replace("'", ""))
    return " ".join(text.split())


def core_name(text: str) -> str:
    """The normalised name without trailing legal suffixes ("Apple Inc." -> "apple")."""
    words = normalize(text).split()
    while len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words.pop()
    return " ".join(words)


def initials(text: str) -> str:
    return "".join(w[0] for w in core_name(text).split() if w not in STOP)


def tokens(text: str) -> list[str]:
    """The words of a text as written (accents folded to ASCII; punctuation, apostrophes included, splits)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _TOKEN.findall(text)


def key_words(text: str) -> list[str]:
    """The casefolded words of a name, as the matcher keys it (``tokens`` lowered)."""
    return [t.lower() for t in tokens(text)]


def strip_suffixes(words: list[str]) -> list[str]:
    """``words`` without trailing legal suffixes (one word always stays)."""
    end = len(words)
    while end > 1 and words[end - 1] in LEGAL_SUFFIXES:
        end -= 1
    return words[:end]
