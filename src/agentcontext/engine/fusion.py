"""Fusion: absolute signals, a linear fusion of them, and the calibration that turns it into a relevance in [0, 1].

Pure numpy over candidate rows; services decide which rows are candidates and gather the signals.
Every signal means the same in every query (none is divided by the best candidate's), so the fused
value, and the calibrated score, compare across queries and ``min_score`` filters:

- ``dense``: the cosine of the query and the memory's vector (with conversation context), the query without the
  names of the speakers it names (``without_names``: those are the mention signal's), so a turn is not found for
  holding a name ("Thanks, Melanie!") rather than for what is asked. The keyword query leaves them out too
  (``meaning_keywords``);
- ``keyword``: the BM25 score scaled into query coverage, ``bm25 / bm25_best * coverage(best)``:
  ``coverage`` is the share of the query's keywords that the best BM25 hit contains, each keyword weighted by its
  idf (``keyword_coverage``: the in-process index counts the memories holding each stem; PostgreSQL gives the counts
  its text search ranks with), so a memory holding every keyword scores about 1 whatever the backend's
  BM25 scale (SQLite FTS5 and PostgreSQL rank on different scales), and one sharing only a common word of the
  query little (issue 11 s5 (b): "team", in half the memories, was a third of "What does the team think of the
  vintage synthesizer?" unweighted, and any "team" memory scored 0.75; weighted, 0.33);
- ``neighbours``: the keyword scores of the previous and next turn, summed (a reply is found through
  the question that prompted it);
- ``mention``: 1 when the query names the memory's speaker (its title);
- ``timed``: 1 when the memory places an event in time ("yesterday", "last Friday", "three years ago", a
  month or a year): such a turn states what happened, where chit-chat does not; ``when``: the same signal
  again, for a query that asks when or how long;
- ``date``: 1 when the query names a month or a year and the memory's events fall in it: its own date
  (``created_at``, a conversation turn's session date) shifted by its relative expressions ("last month").
  Those three are memory/dates.py's, weighted by leave-one-conversation-out on LoCoMo's dev split
  (benchmarks/locomo_loco.py); 0 turns each off.
- ``near`` (a second stage, for a query that asks when): the turns within ``near_turns`` links of the best hit
  rank at least ``near ** d`` times its fused value, ``d`` links away (0.8, 0.64, 0.51 at near 0.8): the event is
  named in one turn, its time is in the exchange around it ("Another script of mine was shown last Sunday" answers
  "what's been up since we last chatted?", the session's greeting; memory/search.py ``near_best``). A share of the
  best hit's value, so a weak best hit lifts little, and less the further a turn is from it.
- ``answer`` (a second stage, for every query): a turn whose previous turn asks a question ranks at least
  ``answer`` times the value of the turn before that question, when that one is among the best k: an elliptical
  reply ("Super good!", "Some fun ones like charades") is found through the exchange it answers (memory/answers.py).

``content = dense * w.dense + keyword * w.keyword + neighbours * w.neighbour`` is in cosine units (``w.dense`` = 1:
the other weights say how much cosine each signal is worth, chosen for ranking on the LoCoMo development split);
the lifts, ``mention * w.mention + timed * w.timed + ...``, say who and when, and count in proportion to how relevant
the content already makes the memory: ``fused = content + lifts * gate(content)``, ``gate = RELEVANCE(content +
w.lift_gate)`` (0.5 at content 0.255; ``fused_value``). So a memory by the speaker a query names ranks above the
other speaker's equally relevant one, but a weakly related memory of that speaker (content 0.1) scores 0.10, not the
0.95 an ungated mention of 0.5 gave, and an unrelated one (content 0) 0.02, not 0.85 (issue 13 s4: a score means
relevant); the gate also ranks better held out (benchmarks/locomo_loco.py). The named speakers' names are left out
of the keyword query as well as the dense one (the text index holds each memory's speaker, so a name among the
keywords gave every memory of that speaker keyword content and opened the gate: "Has Melanie ever repaired a diesel
engine?" scored her unrelated turns 0.99), and so are the verbs a question is framed with ("know", "think", "say").
What remains: a memory sharing a rare word, or a stem, of the query ("bond" in "the bond market" meets "we bonded",
"computing" meets "computer") has keyword content like a related one (the idf weighs a word by how rare it is, not by
whether it means what the query means), and the mention then lifts it as it lifts a related one.
``score = RELEVANCE(fused)``: the logistic curve fitted once on that split to "this turn is evidence for the
question" against the cosine of the two (``Calibration``; ``benchmarks/locomo_weights.py`` fits and prints it). So a
memory found by meaning alone scores what its cosine earns, and keywords, speakers and conversation context add to
that; a bare cosine (a precedent, a vector store's row) is scored by the same curve.

The same fit on the fused value itself (scale 8.19, offset -6.05) separates LoCoMo's evidence from
the other turns of its conversation better, but scores a paraphrase found by meaning alone (cosine
0.45, no shared word) at 0.09, so it is not the curve used: a score says "relevant to the query",
not "the one turn that answers it among its neighbours".
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np

from ..embed import pair
from ..embed.models import PAIRS
from ..text import stem

# Words that carry no topic in a question; dropped from the BM25 query (the dense query keeps them).
STOPWORDS = frozenset(
    "a an the is are was were be been being am do does did doing done have has had having i me my mine we us our "
    "you your yours he him his she her hers it its they them their what which who whom whose when where why how "
    "this that these those to of in on at by for with about from as into onto over under and or but if then so "
    "than too very can could would should will shall may might must not no nor yes any some all each every other "
    "such only own same just also ever there here up down out off again once s t don ve ll re d m".split()
    # and the verbs a question is framed with ("What does Melanie know / think / say about ..."): in a conversation
    # they match turns whatever their topic, which then score as if they shared the question's keywords
    + "know knows knew think thinks say says said tell tells told mention mentions mentioned talk talks talked".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Calibration:
    """A logistic curve: ``score = 1 / (1 + exp(-(scale * value + offset)))``, so 0.5 at ``-offset / scale``."""

    scale: float
    offset: float

    def __call__(self, value: np.ndarray | float) -> np.ndarray | float:
        z = np.clip(self.scale * np.asarray(value, dtype=np.float64) + self.offset, -60.0, 60.0)
        out = 1.0 / (1.0 + np.exp(-z))
        return float(out) if np.ndim(out) == 0 else out

    def value(self, score: float) -> float:
        """The fused value a calibrated ``score`` came from (the curve's inverse; exact inside its clip)."""
        s = min(max(float(score), 1e-300), 1.0 - 1e-16)
        return (math.log(s / (1.0 - s)) - self.offset) / self.scale

    @property
    def midpoint(self) -> float:
        return -self.offset / self.scale


# Fitted once on the LoCoMo development split (benchmarks/locomo_weights.py prints the fit): logistic
# regression of "the turn is evidence for the question" on the cosine of the question's and the turn's
# own embeddings (all-MiniLM-L6-v2), evidence and non-evidence turns weighted equally, so a score does not
# depend on how many memories a store holds: 0.5 = as typical of evidence as of the other turns of the
# conversation (cosine ~0.36); unrelated text (cosine < 0.1) scores < 0.05.
RELEVANCE = Calibration(scale=11.8, offset=-4.19)


@dataclass(frozen=True)
class FusionWeights:
    """The weight of each absolute signal in the fused value (see the module docstring), and its calibration."""

    dense: float = 1.0
    keyword: float = 0.6  # 0.7 while a named speaker's name was a keyword too (diluting every keyword's share)
    neighbour: float = 0.36  # weight of the previous + next turn's keyword score
    # the query names the memory's speaker / title (0.3 before issue 11 s5; 0.5 until the keyword coverage was weighted
    # by idf, when every LOCO fold chose 0.4)
    mention: float = 0.4
    # the memory places an event in time ("yesterday", "last week", "in May"): memory/dates.py. At most 0.15: at 0.2
    # (LOCO's choice when allowed) seed 003's "who approves trades today?" outranks its compliance rule
    timed: float = 0.15
    when: float = 0.0  # the same again when the query asks when / how long
    date: float = 0.2  # the memory's events (its date, shifted by "last month" etc.) fall in a month the query names
    calibration: Calibration = RELEVANCE
    # The lifts (mention and time) count in proportion to calibration(content + lift_gate), content being the dense,
    # keyword and neighbour part: 0.05 at content 0 (an unrelated memory), 0.22 at 0.15, half at 0.255, 0.85 at 0.4;
    # None: in full. At most 0.1 so that a memory of the speaker a query names, unrelated to what it asks (cosine
    # 0.15, no shared keyword), scores below 0.5 with the mention and a time lift (issue 13 s4: a score means
    # relevant); LOCO chose 0.1 over 0 (benchmarks/locomo_loco.py), and would choose 0.2-0.3 if allowed
    lift_gate: float | None = 0.1
    # For a query that asks when (memory/dates.py ``asks_when``): the turns within ``near_turns`` links (previous /
    # next turn) of the best hit rank at least ``near ** d`` times its fused value, d links away (0: off). The event
    # is named in one turn, the time is in the exchange around it (the reply saying "last Sunday", the greeting of
    # the session whose date dates it; memory/search.py ``near_best``). Chosen by leave-one-conversation-out
    # (benchmarks/locomo_loco.py, session 10: four folds chose 0.8 / 3, one 0.8 / 2)
    near: float = 0.8
    near_turns: int = 3
    # A turn that answers a question (its previous turn asks: holds a "?") ranks at least ``answer`` times the value
    # of the turn the question followed up on, when that turn is among the best k ("Coconut milk ice cream is at the
    # top of my list" / "What did you think of it?" / "Super good! Rich and creamy": the reply names nothing the query
    # does; memory/answers.py). 0: off. Chosen by leave-one-conversation-out (benchmarks/locomo_loco.py, issue 29:
    # four folds chose 0.75, one 0.7)
    answer: float = 0.75
    # The bridge stage (memory/bridge.py; 0: off, the default): the capitalised words (names) of the first
    # ``bridge_hits`` hits that the query does not hold and at most ``bridge_rare`` memories hold pull up the other
    # memories holding them, by ``bridge`` times the hit's value. The option's values: the modes of
    # benchmarks/locomo_bridge.py's leave-one-conversation-out choices (0.2 in three folds, 0.15 in two; 8 hits in
    # three, 5 in two; rare 5 in all five)
    bridge: float = 0.0
    bridge_hits: int = 8
    bridge_rare: int = 5

    def content(self) -> dict[str, float]:
        return {"dense": self.dense, "keyword": self.keyword, "neighbour": self.neighbour}

    def lifts(self) -> dict[str, float]:
        return {"mention": self.mention, "timed": self.timed, "when": self.when, "date": self.date}

    def gate(self, content: np.ndarray) -> np.ndarray:
        """How much of its lifts a memory with this content value gets (module doc)."""
        if self.lift_gate is None:
            return np.ones_like(np.asarray(content, dtype=np.float64))
        return np.asarray(self.calibration(np.asarray(content, dtype=np.float64) + self.lift_gate), dtype=np.float64)


# The weights fitted for an embedding model other than the default (embed/models.py's name -> FusionWeights). A
# memory whose workspace uses such a model, given no weights of its own, ranks with them (``weights_for``).
# MiniLM + MPNet (embed/pair.py): chosen by leave-one-conversation-out on the LoCoMo dev split (four folds of five:
# the mixed cosine's weight 2.0, keyword 0.6, mention 0.5, answer 0.8; benchmarks/locomo_fit_models.py --pairs
# minilm+mpnet), the dense weight times the pair vector's n ** 2
MODEL_WEIGHTS: dict[str, FusionWeights] = {name: FusionWeights(
    dense=2.0 * pair.norm2(pair.MIX, pair.SCALE, pair.OFFSET), keyword=0.6, mention=0.5, answer=0.8)
    for name in PAIRS}  # MPNet in int8 (minilm+mpnet-int8) keeps the float pair's weights


def weights_for(model: str, given: FusionWeights | None = None) -> FusionWeights:
    """``given``, unless it is None or the defaults and ``model`` has weights of its own (MODEL_WEIGHTS)."""
    if given is not None and given != FusionWeights():
        return given
    return MODEL_WEIGHTS.get(model) or given or FusionWeights()


def fused_value(signals: Mapping[str, np.ndarray], weights: FusionWeights) -> np.ndarray:
    """``content + lifts * gate(content)``: the weighted content signals (dense, keyword, neighbours) plus the
    weighted lifts (mention, time), which count as much as the content makes the memory relevant (module doc)."""
    content = fuse(signals, weights.content())
    return content + fuse(signals, weights.lifts()) * weights.gate(content)


# In a large store, a word found in more than COMMON_SHARE of the memories is left out of the BM25
# query: SQLite scores every row a term matches (O(matches)), and such a word's IDF is low anyway.
# Measured at 100k memories: a 4-word query over words in ~5% of rows costs 30-50 ms in FTS5 alone.
COMMON_SHARE = 0.01
COMMON_MIN_DOCS = 20000


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def keyword_query(query: str, df: Mapping[str, int] | None = None, total: int = 0) -> str:
    """The query's content words for BM25: stopwords removed and, in a store of at least
    ``COMMON_MIN_DOCS`` memories, words found in more than ``COMMON_SHARE`` of them (they barely
    change BM25's order but make SQLite score every row). A query of stopwords only keeps them."""
    kept = [w for w in words(query) if w not in STOPWORDS] or words(query)
    if df is not None and total >= COMMON_MIN_DOCS:
        kept = [w for w in kept if df.get(stemmed(w), 0) <= COMMON_SHARE * total]
    return " ".join(kept)


def meaning_keywords(query: str, meaning: str, df: Mapping[str, int] | None = None, total: int = 0) -> str:
    """The BM25 query of ``meaning`` (the query without the speakers it names, ``without_names``): none when the
    names took every content word ("What did Ben do?" searches no keyword; the mention signal finds Ben's memories),
    rather than the stopwords ``keyword_query`` would fall back to."""
    if meaning != query and not any(w not in STOPWORDS for w in words(meaning)):
        return ""
    return keyword_query(meaning, df, total)


# ``text.stem`` remembered (in C: the index stems every word of every memory it takes in, and most recur)
stemmed = lru_cache(maxsize=1 << 16)(stem)


def idf(holding: int, total: int) -> float:
    """A keyword's weight in ``keyword_coverage``: BM25's inverse document frequency, kept positive
    (``ln(1 + (N - n + 0.5) / (n + 0.5))``), of a word whose stem ``holding`` of ``total`` memories hold."""
    return math.log(1.0 + (max(total - holding, 0) + 0.5) / (max(holding, 0) + 0.5))


def keyword_coverage(keywords: str, text: str, df: Mapping[str, int] | None = None, total: int = 0) -> float:
    """The share of ``keywords`` that ``text`` contains (stemmed, so camping meets camped): 1 when every keyword
    is there, whatever the store's size. Weighted by each keyword's ``idf`` when ``df`` (memories holding each stem,
    of ``total``) is given: a memory sharing only a common word of the query ("market" in "the bond market") covers
    little of it, one holding its rare word much (issue 11 s5 (b), a score means relevant). The in-process index
    counts its stems (memory/index.py); a store that ranks text in its server gives its own counts."""
    terms = list(dict.fromkeys(stemmed(w) for w in keywords.split()))
    if not terms:
        return 0.0
    present = {stemmed(w) for w in words(text)}
    if df is None:
        return sum(1 for t in terms if t in present) / len(terms)
    weights = [idf(int(df.get(t, 0)), total) for t in terms]
    return sum(w for t, w in zip(terms, weights) if t in present) / sum(weights)


def keyword_scores(bm25: np.ndarray, best_coverage: float) -> np.ndarray:
    """BM25 scores as absolute keyword scores: each relative to the best hit, times the best hit's coverage."""
    top = float(bm25.max()) if bm25.size else 0.0
    if top <= 0:
        return np.zeros_like(bm25, dtype=np.float32)
    return (np.clip(bm25, 0.0, None) * (best_coverage / top)).astype(np.float32)


def neighbour_sum(scores: np.ndarray, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Each row's previous plus next row's score (index -1 = none)."""
    out = np.zeros_like(scores)
    if scores.size == 0:
        return out
    has_prev = prev >= 0
    has_next = nxt >= 0
    out[has_prev] += scores[prev[has_prev]]
    out[has_next] += scores[nxt[has_next]]
    return out


def mentioned(query: str, names: list[str]) -> np.ndarray:
    """1.0 where the row's name (a speaker, a title) appears in the query as a whole word."""
    out = np.zeros(len(names), dtype=np.float32)
    if not names:
        return out
    words = set(_WORD.findall(query.lower()))
    cache: dict[str, bool] = {}
    for i, name in enumerate(names):
        if not name:
            continue
        hit = cache.get(name)
        if hit is None:
            parts = _WORD.findall(name.lower())
            hit = cache[name] = bool(parts) and all(p in words for p in parts)
        if hit:
            out[i] = 1.0
    return out


def without_names(query: str, names: list[str]) -> str:
    """The query without the words of ``names`` (the speakers it names, which the mention signal scores): what is
    embedded for meaning, so a turn is not found for holding the name (another speaker's "Thanks, Melanie!") rather
    than for what the query asks. The query itself when nothing else would be left."""
    parts = {p for name in names for p in _WORD.findall(name.lower())} - STOPWORDS
    if not parts:
        return query
    kept = [t for t in query.split() if not parts & set(_WORD.findall(t.lower()))]
    return " ".join(kept) if kept else query


def fuse(signals: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """``sum(weights[s] * signals[s])`` over the signals both name (absent signals count 0)."""
    out: np.ndarray | None = None
    for name, w in weights.items():
        values = signals.get(name)
        if values is None or not w:
            continue
        term = w * values.astype(np.float64, copy=False)
        out = term if out is None else out + term
    if out is None:
        size = next((v.size for v in signals.values()), 0)
        return np.zeros(size, dtype=np.float64)
    return out


def blend(first: float, second: float, weight: float) -> float:
    """``(1 - weight) * first + weight * second``: how one score is mixed into another (graph, structure)."""
    return (1.0 - weight) * first + weight * second

