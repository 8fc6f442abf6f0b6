"""Find known entities in text: a word-level dictionary matcher (the token form of Aho-Corasick).

Every surface form of every entity becomes a key of casefolded words, under the EntityLinker's
rules (engine/names.py), ranked as the linker ranks them:

1. ``exact_name``    a name or stored alias, word for word (case, accents and punctuation aside)   1.00
2. ``legal_suffix``  the name without its legal suffixes ("Acme Corp." is found as "Acme")         0.95
3. ``alias``         a known ticker or short name of the entity ("AAPL" for Apple), in capitals    0.90
4. ``acronym``       the initials of a multi-word name ("IBM"), in capitals                        0.85

A scan walks the text's words once; at each word whose casefolded form starts a key it tries the
longest key first, so "Acme Labs" wins over "Acme" and a match is never counted twice. A key of
one short word (under four letters) must be written as the name is ("AI", not "ai"); tickers and
acronyms must be written in capitals, so "meta" and "dis" in a sentence stay words. A key shared by
entities keeps those of the best rule; several entities left for one key are all returned, marked
``ambiguous``. Cost: one dictionary lookup per word plus one per candidate key length.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .names import KNOWN_ALIASES, STOP, core_name, key_words, strip_suffixes, tokens

RULES = ("exact_name", "legal_suffix", "alias", "acronym")
SCORES = {"exact_name": 1.0, "legal_suffix": 0.95, "alias": 0.9, "acronym": 0.85}
SHORT = 4  # one-word keys shorter than this match only as written
UPPER = "\x00upper"  # a key entry's case rule: the text's words must be in capitals


@dataclass
class Mention:
    """One known name found in a text: the entities it denotes, the words as written, the rule."""

    entities: list[str]
    surface: str
    start: int  # word index in the text
    rule: str
    score: float
    count: int = 1

    @property
    def ambiguous(self) -> bool:
        return len(self.entities) > 1


@dataclass
class MentionMatcher:
    """Keys of casefolded words -> {entity: [(rule rank, case rule), best rank first]}; kept up to date
    entity by entity."""

    alias_names: dict[str, str] = field(default_factory=lambda: dict(KNOWN_ALIASES))
    keys: dict[str, dict[str, list[tuple[int, str | None]]]] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)  # first word -> the longest key starting with it
    entity_keys: dict[str, list[str]] = field(default_factory=dict)
    counter: int = -1  # the store's change counter this matcher reflects

    def __post_init__(self) -> None:
        self._tickers: dict[str, list[str]] = {}
        for alias, target in self.alias_names.items():
            self._tickers.setdefault(core_name(target), []).append(alias)

    def __len__(self) -> int:
        return len(self.entity_keys)

    # --- building ---------------------------------------------------------------------------
    def _key(self, entity: str, words: list[str], rank: int, case: str | None) -> None:
        if not words or all(w in STOP for w in words):
            return
        key = " ".join(words)
        entry = self.keys.setdefault(key, {})
        options = entry.get(entity)
        if options is None:
            options = entry[entity] = []
            self.entity_keys.setdefault(entity, []).append(key)
        if (rank, case) not in options:  # one key may come by several rules, each with its case rule
            options.append((rank, case))
            options.sort(key=lambda o: o[0])
        if len(words) > self.first.get(words[0], 0):
            self.first[words[0]] = len(words)

    def add(self, entity: str, names: Iterable[str], aliases: Iterable[str] = ()) -> None:
        """(Re)index one entity under its names and aliases."""
        self.remove(entity)
        self.entity_keys[entity] = []
        for rank, forms in ((0, names), (2, aliases)):
            for form in forms:
                if not isinstance(form, str) or not form.strip():
                    continue
                written = tokens(form)
                words = [w.lower() for w in written]
                if not words:
                    continue
                short = len(words) == 1 and len(words[0]) < SHORT
                self._key(entity, words, rank, written[0] if short else None)
                core = strip_suffixes(words)
                if core != words:
                    self._key(entity, core, max(rank, 1), written[0] if len(core) == 1 and len(core[0]) < SHORT
                              else None)
                significant = [w for w in core if w not in STOP]
                if len(significant) > 1 and 2 <= len(significant) <= 6:
                    self._key(entity, ["".join(w[0] for w in significant)], 3, UPPER)
                for ticker in self._tickers.get(" ".join(core), ()):
                    self._key(entity, key_words(ticker), 2, UPPER)

    def remove(self, entity: str) -> None:
        for key in self.entity_keys.pop(entity, ()):
            entry = self.keys.get(key)
            if entry is not None:
                entry.pop(entity, None)
                if not entry:
                    del self.keys[key]
        # ``first`` may keep a longer length than any key now needs: a few extra lookups, never a wrong match

    # --- scanning ---------------------------------------------------------------------------
    def scan(self, text: str) -> list[Mention]:
        """The known names in ``text``, in order of first appearance, each once (``count`` = occurrences)."""
        written = tokens(text)
        low = [w.lower() for w in written]
        n = len(low)
        found: dict[tuple[str, ...], Mention] = {}
        first, keys = self.first, self.keys
        i = 0
        while i < n:
            longest = first.get(low[i])
            if longest is None:
                i += 1
                continue
            step = 1
            for length in range(min(longest, n - i), 0, -1):
                entry = keys.get(low[i] if length == 1 else " ".join(low[i: i + length]))
                if not entry:
                    continue
                words = written[i: i + length]
                hits = [(rank, e) for e, options in entry.items()
                        for rank in [next((r for r, case in options if _case_ok(case, words)), None)]
                        if rank is not None]
                if not hits:
                    continue
                best = min(rank for rank, _ in hits)
                ents = sorted(e for rank, e in hits if rank == best)
                key = tuple(ents)
                if key in found:
                    found[key].count += 1
                else:
                    found[key] = Mention(ents, " ".join(words), i, RULES[best], SCORES[RULES[best]])
                step = length
                break
            i += step
        return list(found.values())


def _case_ok(case: str | None, words: list[str]) -> bool:
    if case is None:
        return True
    if case == UPPER:
        return all(w.isupper() for w in words)
    return len(words) == 1 and words[0] == case
