"""A learned second stage (issue 29): the first ``POOL`` candidates of the linear fusion (engine/fusion.py) put in the
order of a small model of gradient-boosted trees over features the search already computes for each of them.

The features of a candidate (``features``; ``FEATURES`` names them) are its signals as the fusion sees them (the
calibrated fused score, the dense cosine with context, keyword, neighbours, mention, the time lifts, whether the
answer or near stage raised it), its place among the pool (its rank, the gap to the best, its rank by dense and by
keyword alone), where it sits against the best hits (links to the first, to the nearest of the first three, how many
of the first ten are within two links, the same speaker as the first, the days between its date and the first's),
its neighbours' values, and the query's cues (asks when, names a speaker, how many words). No feature reads a label.

The model is a list of depth-limited regression trees (``Trees``: for each tree its nodes' feature, threshold, left
and right child, and leaf value, as numpy arrays) whose sum is a candidate's score; candidates are ordered by it,
ties by their linear order. It is fitted on LoCoMo's dev split by benchmarks/locomo_ltr.py (leave one conversation
out for the held-out figure; on all five for the shipped file ``ltr_weights.json`` beside this module) and scored here
in numpy. A weights file that is not what ``load`` expects is refused with our ValidationError, never half read.
The shipped file must be fitted again whenever the signals it reads change (its ``meta.linear`` records the linear
fusion's figures it was fitted beside): refitted in session 21 on the current signals (``locomo_ltr.py --trees 120
--rate 0.1 --depth 2 --loss logistic --linear-when --save``), ``agentcontext eval locomo --ranker learned`` 0.762 /
0.836, every category at or above the linear default (temporal R@5 0.897, where session 17's file, fitted on older
signals, gave 0.890 under it).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ValidationError
from .fusion import keyword_query, stemmed, without_names, words

POOL = 80  # the linear fusion's first candidates the learned ranker reorders
FAR = 4  # a link distance beyond 3 (or none) counts as this
WEIGHTS = Path(__file__).with_name("ltr_weights.json")
FEATURES = ("score", "score_gap", "rank", "dense", "dense_gap", "dense_rank", "keyword", "keyword_rank", "neighbour",
            "mention", "timed", "date", "answer", "near", "links_first", "links_top3", "top10_within2",
            "same_speaker", "days_first", "side_score", "side_dense", "asks_when", "names", "words",
            "keyword_share", "first_score", "tenth_gap", "terms_held", "terms_new")
FORMAT = "agentcontext-ltr-trees-1"


@dataclass(frozen=True)
class Pool:
    """The pool's candidates in the linear order (index 0 the best), each signal one value a candidate."""

    score: np.ndarray  # calibrated fused value
    dense: np.ndarray  # the dense cosine with conversation context
    keyword: np.ndarray
    neighbour: np.ndarray
    mention: np.ndarray
    timed: np.ndarray
    date: np.ndarray
    answer: np.ndarray  # 1: the answer stage raised it
    near: np.ndarray  # 1: the near stage raised it
    links: np.ndarray  # (n, n) link distance between candidates (FAR: more than 3 or none)
    speaker: np.ndarray  # an integer a speaker (-1: unknown)
    days: np.ndarray  # its date in days (nan: unknown)
    held: np.ndarray  # the share of the query's keywords it holds (``terms``)
    new: np.ndarray  # the share it holds that none of the first three (others than itself) holds


def _rank(values: np.ndarray) -> np.ndarray:
    """Each value's 0-based rank, largest first (ties by position)."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(values.size, dtype=np.float64)
    out[order] = np.arange(values.size)
    return out


def link_matrix(rows: Sequence[int], prev: np.ndarray, nxt: np.ndarray, turns: int = 3) -> np.ndarray:
    """The link distance (previous / next turns, at most ``turns``; FAR beyond) between every two of ``rows``."""
    n = len(rows)
    at = {int(r): i for i, r in enumerate(rows)}
    out = np.full((n, n), float(FAR))
    np.fill_diagonal(out, 0.0)
    for i, r in enumerate(rows):
        for links in (prev, nxt):
            cur = int(r)
            for d in range(1, turns + 1):
                cur = int(links[cur])
                if cur < 0:
                    break
                j = at.get(cur)
                if j is not None and j != i:
                    out[i, j] = min(out[i, j], d)
    return out


def terms(query: str, names: Sequence[str], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the share of the query's keyword stems each text holds, the share none of the first three others holds):
    the keywords as the keyword search takes them (the speakers the query names left out; engine/fusion.py)."""
    wanted = {stemmed(w) for w in words(keyword_query(without_names(query, list(names))))}
    n = len(texts)
    if not wanted:
        return np.zeros(n), np.zeros(n)
    held = [wanted & {stemmed(w) for w in words(t)} for t in texts]
    new = []
    for i, h in enumerate(held):
        others = set().union(*(held[j] for j in range(min(n, 3)) if j != i))
        new.append(len(h - others))
    return np.array([len(h) for h in held]) / len(wanted), np.array(new, dtype=np.float64) / len(wanted)


def query_cues(asks_when: bool, names: bool, query: str) -> tuple[float, float, float]:
    return float(asks_when), float(names), float(len(query.split()))


def features(pool: Pool, cues: tuple[float, float, float]) -> np.ndarray:
    """One row of ``FEATURES`` per candidate of ``pool``."""
    n = pool.score.size
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    rank = np.arange(n, dtype=np.float64)
    links = pool.links
    first = links[:, 0]
    top3 = links[:, :3].copy()
    top3[np.arange(min(n, 3)), np.arange(min(n, 3))] = FAR  # a candidate is not near itself
    within = (links[:, :10] <= 2).sum(axis=1) - (rank < 10)
    side = np.where(links == 1, 1.0, 0.0)
    side_score = (side * pool.score[None, :]).max(axis=1) if n > 1 else np.zeros(n)
    side_dense = (side * pool.dense[None, :]).max(axis=1) if n > 1 else np.zeros(n)
    same = (pool.speaker == pool.speaker[0]) & (pool.speaker >= 0)
    days = np.abs(pool.days - pool.days[0])
    days = np.where(np.isnan(days), -1.0, np.log1p(np.nan_to_num(days, nan=0.0)))
    keyword_rank = np.where(pool.keyword > 0, _rank(pool.keyword), n)
    tenth = pool.score[min(n, 10) - 1]
    cols = [pool.score, pool.score - pool.score[0], np.log1p(rank), pool.dense, pool.dense - pool.dense.max(),
            np.log1p(_rank(pool.dense)), pool.keyword, np.log1p(keyword_rank), pool.neighbour, pool.mention,
            pool.timed, pool.date, pool.answer, pool.near, first, top3.min(axis=1), within, same.astype(float),
            days, side_score, side_dense, np.full(n, cues[0]), np.full(n, cues[1]), np.full(n, cues[2]),
            np.full(n, float((pool.keyword > 0).mean())), np.full(n, pool.score[0]), pool.score - tenth, pool.held,
            pool.new]
    return np.column_stack([np.asarray(c, dtype=np.float64) for c in cols])


@dataclass(frozen=True)
class Trees:
    """Regression trees stored flat: node ``i`` of tree ``t`` is ``feature[t, i]`` (-1: a leaf of value
    ``value[t, i]``), going ``left[t, i]`` when the feature is <= ``threshold[t, i]``, else ``right[t, i]``."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    base: float = 0.0
    prior: float = 0.0  # the trees correct ``prior`` times the logit of the linear score (feature 0)

    def start(self, x: np.ndarray) -> np.ndarray:
        """Each row's value before the trees: ``base + prior * logit(score)``."""
        p = np.clip(x[:, 0], 1e-6, 1 - 1e-6)
        return self.base + self.prior * np.log(p / (1 - p))

    def score(self, x: np.ndarray) -> np.ndarray:
        """Each row's sum of leaf values, from ``start``."""
        trees, n = self.feature.shape[0], x.shape[0]
        if trees == 0 or n == 0:
            return self.start(x)
        t = np.arange(trees)[:, None]
        cols = np.arange(n)[None, :]
        at = np.zeros((trees, n), dtype=np.int64)  # every tree walked at once, one level a step
        for _ in range(self.feature.shape[1]):
            f = self.feature[t, at]
            inner = f >= 0
            if not inner.any():
                break
            go = x[cols, np.maximum(f, 0)] <= self.threshold[t, at]
            at = np.where(inner, np.where(go, self.left[t, at], self.right[t, at]), at)
        return self.start(x) + self.value[t, at].sum(axis=0)

    def to_json(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {"feature": self.feature.tolist(), "threshold": self.threshold.tolist(), "left": self.left.tolist(),
                "right": self.right.tolist(), "value": self.value.tolist(), "base": self.base,
                "prior": self.prior}
        return {"format": FORMAT, "features": list(FEATURES), "pool": POOL, "meta": meta or {}, "trees": body,
                "sha256": digest(body)}


def digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def parse(data: Any, where: str = "the learned ranker's weights") -> Trees:
    """The trees of a weights document (``Trees.to_json``'s), checked whole: its format, its feature list, its
    checksum and every array's shape and range; anything else is our ValidationError naming ``where``."""
    def bad(why: str) -> ValidationError:
        return ValidationError(f"{where} are damaged or not ours ({why}); reinstall agentcontext or refit them with "
                               "benchmarks/locomo_ltr.py --save", path=where)

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f"format is not {FORMAT}")
    if data.get("features") != list(FEATURES):
        raise bad("its features are not this version's")
    body = data.get("trees")
    if not isinstance(body, dict) or data.get("sha256") != digest(body):
        raise bad("checksum mismatch")
    try:
        feature = np.asarray(body["feature"], dtype=np.int64)
        threshold = np.asarray(body["threshold"], dtype=np.float64)
        left, right = np.asarray(body["left"], dtype=np.int64), np.asarray(body["right"], dtype=np.int64)
        value = np.asarray(body["value"], dtype=np.float64)
        base, prior = float(body["base"]), float(body.get("prior", 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(str(exc)) from exc
    shape = feature.shape
    if len(shape) != 2 or any(a.shape != shape for a in (threshold, left, right, value)) or shape[1] == 0:
        raise bad("arrays of different shapes")
    if feature.min() < -1 or feature.max() >= len(FEATURES) or not (np.isfinite(value).all() and math.isfinite(base)
                                                                                 and math.isfinite(prior)):
        raise bad("a node out of range")
    inner = feature >= 0
    if ((left[inner] <= 0) | (left[inner] >= shape[1]) | (right[inner] <= 0) | (right[inner] >= shape[1])).any():
        raise bad("a child out of range")
    return Trees(feature, threshold, left, right, value, base, prior)


_LOADED: dict[str, Trees] = {}


def load(path: str | Path = WEIGHTS) -> Trees:
    """The trees in ``path`` (the shipped file by default), read once a process."""
    key = str(path)
    if key not in _LOADED:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValidationError(f"cannot read the learned ranker's weights {path}: {exc}; reinstall agentcontext "
                                  "or refit them with benchmarks/locomo_ltr.py --save", path=key) from exc
        _LOADED[key] = parse(data, str(path))
    return _LOADED[key]


def order(trees: Trees, pool: Pool, cues: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(the pool's positions best first by the model, their model scores); ties keep the linear order."""
    return ranked(trees, features(pool, cues))


def ranked(trees: Trees, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the rows of the feature matrix ``x`` best first by the model, their scores); ties keep their order."""
    scores = trees.score(x)
    out = np.lexsort((np.arange(scores.size), -scores))
    return out, scores[out]
