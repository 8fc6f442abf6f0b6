"""The ranking of the candidates memory/server_search.py gathers from the server: each scored exactly as the
in-process index scores it (memory/search.py), with numpy over candidate rows.

What the ranking reads of a candidate (its inner products, its previous and next turn, its speaker, its time bits) is
read once a round into a ``Table`` by node id, not again each time ``rank`` runs: the second stages (the replies
to the best hits' questions, the turns around a when-question's best hit) add a few candidates and the round is
ranked again, each time over every candidate (at 200,000 memories ~1,250 a query, two or three times). Only the
candidates new to the table are read; the rest is array arithmetic, the same operations on the same values as a
fresh ranking, so the hits, their order and their scores are the same to the bit (tests/test_server_rank.py).

The time signals are read (their texts' regexes: memory/dates.py) only for the candidates that can still rank among
the k best with them, as in process (memory/search.py ``top_with_time``): the k best without them, with theirs added,
give a floor the final k-th best is above, and a candidate whose value plus every time weight times its gate is
below it keeps its value without them.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..engine.fusion import FusionWeights, fuse, fused_value, neighbour_sum
from ..engine.vectors import top_k
from ..model import Node
from ..workspace import Workspace
from .answers import lifted
from .dates import asks_when, month_numbers, time_refs
from .search import Hit, near_shares, time_values



class Links(Protocol):
    """What the ranking reads of the candidate side's turns (memory/server_search.py ``_Links``)."""

    nodes: dict[str, Node]
    next: dict[str, str]

    def whole(self, nodes: list[Node]) -> list[Node]: ...

    def replies(self, ids: list[str]) -> dict[str, str]: ...

    def within(self, node_id: str, turns: int) -> dict[str, int]: ...

TIME_CACHE = 65536  # texts and dates whose time bits a workspace keeps (``time_bits``), then it starts again
BOUND_SLACK = 1e-9  # a time lift's bound is a sum of the same weights in another order: rounding, kept safe


def prev_of(node: Node) -> str | None:
    return (node.props or {}).get("prev")


def time_bits(nodes: list[Node], kept: dict[Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the time bits of each node's text, (its month, the month 7 days before) from its created_at): what
    ``time_values`` reads (memory/dates.py). ``kept`` remembers ``time_refs`` by text and ``month_numbers`` by date
    (both pure), as the in-process index keeps them per memory: a memory that is a candidate again costs two
    lookups, not its regexes."""
    kept = {} if kept is None else kept
    if len(kept) > TIME_CACHE:
        kept.clear()
    refs = np.empty(len(nodes), dtype=np.uint8)
    months = np.empty((len(nodes), 2), dtype=np.int64)
    for j, c in enumerate(nodes):
        text, date = c.content, (c.props or {}).get("created_at")
        if (bits := kept.get(text)) is None:
            bits = kept[text] = time_refs(text)
        if (month := kept.get(("month", date))) is None:
            month = kept[("month", date)] = month_numbers(date)
        refs[j], months[j] = bits, month
    return refs, months


def timing_of(query: str, nodes: list[Node], kept: dict[Any, Any] | None = None) -> dict[str, np.ndarray]:
    """The time signals of ``nodes`` for ``query`` (search.time_values, from each text and created_at; ``kept``:
    ``time_bits``)."""
    refs, months = time_bits(nodes, kept)
    return time_values(query, refs, months[:, 0], months[:, 1])


class Table:
    """What the ranking reads of each candidate of one round, read once by node id (module doc): the inner products
    of its own vector, its pair vector and its next turn's pair vector with the query, its previous and next turn,
    its speaker, and (when read) its time bits."""

    def __init__(self) -> None:
        self.slot: dict[str, int] = {}  # node id: its row in the columns
        self.titles: dict[str, int] = {}  # a speaker: its number (the ``title`` column)
        # own, pair, next pair inner products (float32 as a fresh ranking holds them; 0 where absent), how many of
        # the three exist, the speaker, the previous and the next turn's id ("" for none)
        self._cols: tuple[np.ndarray, ...] = (
            np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32),
            np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object),
            np.zeros(0, dtype=object))
        self.refs = np.zeros(0, dtype=np.uint8)  # time bits, read for the rows where ``timed``
        self.months = np.zeros((0, 2), dtype=np.int64)
        self.timed = np.zeros(0, dtype=bool)

    def rows(self, ws: Workspace, qv: np.ndarray, candidates: list[Node], links: Links,
             known: dict[str, float]) -> np.ndarray:
        """The table's row of each candidate, the new ones read (their inner products not in ``known`` asked of the
        server in one statement; ``known`` gains them, NaN: no such vector)."""
        slot = self.slot
        new = [c for c in candidates if c.id not in slot]
        if new:
            self._add(ws, qv, new, links, known)
        return np.fromiter((slot[c.id] for c in candidates), dtype=np.int64, count=len(candidates))

    def _add(self, ws: Workspace, qv: np.ndarray, new: list[Node], links: Links, known: dict[str, float]) -> None:
        nodes, following = links.nodes, links.next
        ids = [c.id for c in new]
        props = [c.props or {} for c in new]
        after = [following.get(i) or "" for i in ids]
        owns = [c.embed_hash for c in new]
        pairs = [p.get("pair_hash") for p in props]
        follows = [(nodes[a].props or {}).get("pair_hash") if a in nodes else None for a in after]
        todo = [h for h in dict.fromkeys([*owns, *pairs, *follows]) if h and h not in known]
        if todo:
            found = ws.store.similarities(qv, ws.model_name, todo)
            known.update({h: found.get(h, np.nan) for h in todo})

        def sims(hashes: list[str | None]) -> np.ndarray:  # NaN: no hash, or no such vector
            return np.array([known[h] if h else np.nan for h in hashes], dtype=np.float64)

        own, pair, follow = sims(owns), sims(pairs), sims(follows)
        has_pair, has_follow = pair == pair, follow == follow
        count = 1 + has_pair.astype(np.int64) + has_follow.astype(np.int64)
        titles = self.titles
        added = (np.where(own == own, own, 0.0).astype(np.float32), np.where(has_pair, pair, 0.0).astype(np.float32),
                 np.where(has_follow, follow, 0.0).astype(np.float32), count,
                 np.array([titles.setdefault(c.title or "", len(titles)) for c in new], dtype=np.int64),
                 np.array([p.get("prev") or "" for p in props], dtype=object), np.array(after, dtype=object))
        self.slot.update(zip(ids, range(len(self.slot), len(self.slot) + len(ids))))
        self._cols = tuple(np.concatenate((col, more)) for col, more in zip(self._cols, added))
        grown = len(ids)
        self.refs = np.concatenate((self.refs, np.zeros(grown, dtype=np.uint8)))
        self.months = np.concatenate((self.months, np.zeros((grown, 2), dtype=np.int64)))
        self.timed = np.concatenate((self.timed, np.zeros(grown, dtype=bool)))

    def dense_parts(self) -> tuple[np.ndarray, ...]:
        """(own, pair, next pair: float32 as a fresh ranking holds them, how many of the three exist, the speaker,
        the previous and the next turn's id), by row."""
        return self._cols

    def timing(self, query: str, rows: np.ndarray, candidates: list[Node], at: np.ndarray, links: Links,
               kept: dict[Any, Any]) -> dict[str, np.ndarray]:
        """The time signals of the candidates at positions ``at`` (``rows``: their table rows), their texts read
        whole and their bits computed for the rows not read before."""
        mine = rows[at]
        todo = np.flatnonzero(~self.timed[mine])
        if todo.size:  # each candidate has its own row: no row is read twice
            refs, months = time_bits(links.whole([candidates[int(j)] for j in at[todo]]), kept)
            wanted = mine[todo]
            self.refs[wanted], self.months[wanted], self.timed[wanted] = refs, months, True
        return time_values(query, self.refs[mine], self.months[mine, 0], self.months[mine, 1])


def rank(ws: Workspace, qv: np.ndarray, candidates: list[Node], links: Links, raw: dict[str, float],
         named: set[str], k: int, weights: FusionWeights, ghosts: list[tuple[float, float, bool]],
         known: dict[str, float], scale: float, query: str,
         table: Table | None = None) -> tuple[list[Hit], np.ndarray, list[float]]:
    """(the k best candidates, every candidate's fused value, each ghost's); ``known`` holds the inner products
    read so far (by vector hash, absent: no such vector) and gains the new ones; ``scale`` turns a BM25 score into
    a keyword score (the best hit's coverage over its BM25, as in process); ``table``: what earlier calls of the
    round read (module doc; a new one when None). The time signals (``timing_of``; a ghost is bounded as if it had
    each of them) add at most their weights times the gate to a candidate, so, as in process
    (search.top_with_time), they are read only for the candidates that can reach the k best with them (module doc);
    a candidate outside keeps its value without them (below the k-th best either way)."""
    table = Table() if table is None else table
    n = len(candidates)
    rows = table.rows(ws, qv, candidates, links, known)
    own_all, pair_all, follow_all, count_all, title_all, prev_all, next_all = table.dense_parts()
    own, pair, follow, count = own_all[rows], pair_all[rows], follow_all[rows], count_all[rows]
    # dense = the mean of the own, pair and next pair inner products that exist (float32, summed in that order)
    dense = ((own + pair + follow) / count).astype(np.float32)
    # keyword scores: the candidates' (rows [0, n)), then their previous turns' and their next turns' (a turn's
    # keyword score is its own whether it is a candidate or not)
    prev_ids, next_ids = prev_all[rows].tolist(), next_all[rows].tolist()
    bm25_raw = np.array([raw.get(c.id, 0.0) for c in candidates], dtype=np.float32)
    around = np.array([raw.get(i, 0.0) for i in prev_ids] + [raw.get(i, 0.0) for i in next_ids], dtype=np.float32)
    keyword = (np.clip(np.concatenate((bm25_raw, around)), 0.0, None) * scale).astype(np.float32)
    at = np.arange(n, dtype=np.int64)
    prev = np.full(3 * n, -1, dtype=np.int64)
    nxt_rows = np.full(3 * n, -1, dtype=np.int64)
    prev[:n] = np.where(prev_all[rows] != "", n + at, -1)
    nxt_rows[:n] = np.where(next_all[rows] != "", 2 * n + at, -1)
    values = {"dense": dense, "keyword": keyword[:n], "neighbour": neighbour_sum(keyword, prev, nxt_rows)[:n]}
    if named:
        speaks = np.array([t in named for t in table.titles], dtype=bool)
        values["mention"] = speaks[title_all[rows]].astype(np.float32)
    content = fuse(values, weights.content())
    gate = weights.gate(content)  # the mention and time lifts count as much as the content is relevant (fusion.py)
    fused = content + fuse(values, {"mention": weights.mention}) * gate
    names = list(time_values(query, np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)))
    lifts = weights.lifts()
    time_w = {name: lifts[name] for name in names}
    first = top_k(fused, k)
    timed = np.zeros(n, dtype=bool)  # the candidates whose time lifts are in ``fused``
    kept = ws.held("memory:time-bits", dict)  # time bits by text and date (``time_bits``), per workspace
    if any(time_w.values()) and first.size:
        if min(time_w.values()) < 0:
            pool = np.arange(n)
        else:  # the k best with their lifts give a floor; a candidate gains at most the weights' sum times its gate
            lifted_first = fused[first] + fuse(table.timing(query, rows, candidates, first, links, kept),
                                               time_w) * gate[first]
            floor = float(lifted_first.min())
            can = fused + sum(time_w.values()) * gate >= floor - BOUND_SLACK
            can[first] = True
            pool = np.flatnonzero(can)
        timing = table.timing(query, rows, candidates, pool, links, kept)
        fused[pool] = fused[pool] + fuse(timing, time_w) * gate[pool]
        timed[pool] = True
        for name in names:
            values[name] = np.zeros(n, dtype=np.float32)
            values[name][pool] = timing[name]
    stage = _Stage(query, candidates, rows, table, links, fused, values, gate, weights, timed, kept)
    answered = _answers(stage, k)
    raised = _near(stage)
    ghost_values = {"dense": np.array([d for d, _, _ in ghosts], dtype=np.float32),
                    "keyword": np.array([b * scale for _, b, _ in ghosts], dtype=np.float32),
                    "mention": np.array([float(m) for _, _, m in ghosts], dtype=np.float32),
                    **{name: np.ones(len(ghosts), dtype=np.float32) for name in names}}
    ghost_scores = [float(x) for x in fused_value(ghost_values, weights)]  # grows with every signal: a bound
    out: list[Hit] = []
    best = top_k(fused, k)
    scores = np.atleast_1d(weights.calibration(fused[best])).tolist() if best.size else []
    for j, score in zip(best.tolist(), scores):
        signals: dict[str, float] = {"dense": float(own[j])}
        if abs(float(dense[j]) - signals["dense"]) > 1e-6:
            signals["dense_context"] = float(dense[j])
        if bm25_raw[j] > 0:
            signals["bm25"] = float(bm25_raw[j])
            signals["keyword"] = float(values["keyword"][j])
        if values["neighbour"][j] > 0:
            signals["neighbours"] = float(values["neighbour"][j])
        if "mention" in values and values["mention"][j]:
            signals["mention"] = 1.0
        for name in ("timed", "date"):
            if name in values and values[name][j]:
                signals[name] = 1.0
        if j in raised:
            signals["near"] = 1.0
        if j in answered:
            signals["answer"] = 1.0
        out.append(Hit(candidates[int(j)].id, float(score), signals))
    return out, fused, ghost_scores


class _Stage:
    """What the second stages read and lift: the candidates, their fused values (lifted in place), signals and
    gates, which of them have their time lifts (``timed``) and where each candidate id stands (``position``)."""

    def __init__(self, query: str, candidates: list[Node], rows: np.ndarray, table: Table, links: Links,
                 fused: np.ndarray, values: dict[str, np.ndarray], gate: np.ndarray,
                 weights: FusionWeights, timed: np.ndarray, kept: dict[Any, Any]) -> None:
        self.query, self.candidates, self.rows, self.table, self.links = query, candidates, rows, table, links
        self.fused, self.values, self.gate, self.weights = fused, values, gate, weights
        self.timed, self.kept = timed, kept
        self._at = np.full(len(table.slot), len(candidates), dtype=np.int64)  # by table row: the position
        self._at[rows] = np.arange(len(candidates))

    def position(self, node_id: str) -> int:
        """Where this candidate stands (the number of candidates when it is none)."""
        r = self.table.slot.get(node_id)
        return len(self.candidates) if r is None else int(self._at[r])

    def add_time(self, at: list[int]) -> None:
        """Add their time lifts to the candidates at ``at`` where ``rank`` had not (``timed``), so a turn a second
        stage lifts keeps its own value with them, as in process."""
        names = list(time_values(self.query, np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)))
        time_w = {name: self.weights.lifts()[name] for name in names}
        todo = np.array([j for j in at if not self.timed[j]], dtype=np.int64)
        if todo.size and any(time_w.values()):
            timing = self.table.timing(self.query, self.rows, self.candidates, todo, self.links, self.kept)
            self.fused[todo] = self.fused[todo] + fuse(timing, time_w) * self.gate[todo]
            for name in names:
                self.values.setdefault(name, np.zeros(len(self.candidates), dtype=np.float32))[todo] = timing[name]
            self.timed[todo] = True


def _answers(stage: _Stage, k: int) -> set[int]:
    """The replies to the questions that follow the ``k`` best candidates rank at least ``weights.answer`` times
    their source's value, in ``fused`` (memory/answers.py ``answer_best``; the candidate side made them candidates),
    their time lifts added first: the positions so raised."""
    candidates, fused, weights = stage.candidates, stage.fused, stage.weights
    n = len(candidates)
    if not weights.answer or n == 0:
        return set()
    best = [int(j) for j in top_k(fused, k)]
    source: dict[int, float] = {}
    at = {candidates[j].id: j for j in best}
    for turn, reply in stage.links.replies(list(at)).items():
        j, value = stage.position(reply), float(fused[at[turn]])
        if j < n and value > 0:
            source[j] = max(source.get(j, 0.0), value)
    if not source:
        return set()
    stage.add_time(list(source))
    raised = set()
    for j, value in source.items():
        got = lifted(weights.answer, float(fused[j]), value)
        if got > fused[j]:
            fused[j] = got
            raised.add(j)
    return raised


def _near(stage: _Stage) -> set[int]:
    """For a question that asks when, the candidates within ``weights.near_turns`` of the best rank at least
    ``weights.near ** d`` times its value, ``d`` links away, in ``fused`` (memory/search.py ``near_best``; the
    candidate side made them candidates), their time lifts added first where ``rank`` had not: the positions so
    raised."""
    candidates, fused, weights = stage.candidates, stage.fused, stage.weights
    n = len(candidates)
    if not weights.near or n == 0 or not asks_when(stage.query):
        return set()
    best = int(top_k(fused, 1)[0])
    around = stage.links.within(candidates[best].id, weights.near_turns)
    distance = {j: d for i, d in around.items() if (j := stage.position(i)) < n}
    at = list(distance)
    if not at:
        return set()
    stage.add_time(at)
    idx = np.array(at, dtype=np.int64)
    floor = near_shares(weights.near, [distance[j] for j in at]) * float(fused[best])
    raised = {int(j) for j, f in zip(idx.tolist(), floor.tolist()) if fused[j] < f}
    fused[idx] = np.maximum(fused[idx], floor)
    return raised
