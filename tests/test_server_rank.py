"""The client's ranking of the server's candidates (memory/server_rank.py, issue 23 s3) reads each candidate once a
round and the time bits only of candidates that can reach the k best: the hits, their order, scores and signals,
and every ghost's bound are those of the ranking before (44dc6e9's ``server_search._rank``, kept below as the
reference, every candidate read afresh at each call) to the bit, on a real PostgreSQL store of a few hundred LoCoMo
turns searched on its large (one round) path and on its exact path, for every question of their conversations."""
from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import pytest

from agentcontext.engine.fusion import FusionWeights, fuse, fused_value, neighbour_sum
from agentcontext.engine.vectors import top_k
from agentcontext.eval_locomo import turn_text, turns
from agentcontext.memory import AgentMemory, server_rank, server_search
from agentcontext.memory.answers import lifted
from agentcontext.memory.dates import asks_when
from agentcontext.memory.search import Hit, near_shares
from agentcontext.memory.server_rank import prev_of, timing_of
from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

from .test_locomo import DEV

pytestmark = pytest.mark.postgres
SAMPLES, TURNS = ("conv-30", "conv-26"), 150  # 300 memories


@pytest.fixture(scope="module")
def memory(pg_server, tmp_path_factory):
    samples = {s["sample_id"]: s for s in json.loads(DEV.read_text()) if s["sample_id"] in SAMPLES}
    items, questions = [], []
    for sid in SAMPLES:
        for t in turns(samples[sid])[:TURNS]:
            items.append({"content": turn_text(t), "conversation_id": sid, "user_id": t.get("speaker"),
                          "created_at": t["created_at"], "metadata": {"dia_id": t["dia_id"]}})
        questions += [q["question"] for q in samples[sid]["qa"] if q.get("category") != 5]
    ws = Workspace(open_store(pg_server.url("server_rank")))
    mem = AgentMemory(workspace=ws, max_memory_size=None)
    mem.batch_store(items)
    yield mem, list(dict.fromkeys(questions))
    ws.close()


@contextmanager
def large_path(mem: AgentMemory, monkeypatch) -> Iterator[None]:
    """The namespace searched as a large one (one round, pools smaller than the namespace)."""
    large = mem.workspace.held("memory:large-namespaces", set)
    monkeypatch.setattr(server_search, "COMMON_MIN_DOCS", 20)
    monkeypatch.setattr(server_search, "LARGE_DENSE_POOL", 40)
    monkeypatch.setattr(server_search, "LARGE_TEXT_POOL", 60)
    monkeypatch.setattr(server_search, "LARGE_NAMED_POOL", 12)
    try:
        yield
    finally:
        large.clear()  # the other tests see a small namespace again


def compared(monkeypatch) -> list[int]:
    """Make every ranking run the reference beside it and check they agree; the count of calls, and of the calls
    that ranked a round a second time (the second stages' candidates added)."""
    calls = [0, 0]
    real = server_search.rank_candidates

    def both(ws, qv, candidates, links, raw, named, k, weights, ghosts, known, scale, query, table=None):
        again = table is not None and bool(table.slot)
        hits, fused, ghost_scores = real(ws, qv, candidates, links, raw, named, k, weights, ghosts, known, scale,
                                         query, table)
        ref_hits, ref_fused, ref_ghosts = reference_rank(ws, qv, candidates, links, dict(raw), named, k, weights,
                                                         ghosts, known, scale, query)
        assert [(h.id, h.score, h.signals) for h in hits] == [(h.id, h.score, h.signals) for h in ref_hits], query
        assert ghost_scores == ref_ghosts
        kth = min(k, fused.size)
        assert np.array_equal(np.sort(fused)[::-1][:kth], np.sort(ref_fused)[::-1][:kth])  # the ghosts' test
        calls[0] += 1
        calls[1] += again
        return hits, fused, ghost_scores
    monkeypatch.setattr(server_search, "rank_candidates", both)
    return calls


def test_the_large_paths_ranking_is_the_one_before_to_the_bit(memory, monkeypatch):
    mem, questions = memory
    calls = compared(monkeypatch)
    with large_path(mem, monkeypatch):
        for question in questions[::4]:  # both conversations' (every fourth: the suite's budget)
            assert len(mem.retrieve(question, max_results=10)) == 10
    assert calls[0] >= len(questions[::4]) and calls[1] >= 5, calls  # some re-ranked with a stage's turns


def test_the_exact_paths_ranking_is_the_one_before_to_the_bit(memory, monkeypatch):
    mem, questions = memory
    monkeypatch.setattr(server_search, "DENSE_POOL", 8)  # small pools: rounds grow, second stages read late turns
    monkeypatch.setattr(server_search, "TEXT_POOL", 8)
    calls = compared(monkeypatch)
    for question in questions[1::8]:
        mem.retrieve(question, max_results=5)
    assert calls[1] > 0, calls


def test_a_round_reads_each_candidate_once(memory, monkeypatch):
    """The second ranking of a round (the replies and the turns around the best hit added) reads only the
    candidates it adds: no node's inner products are asked twice, and no time bits are computed twice."""
    mem, questions = memory
    read: list[list[str]] = []
    real = server_rank.Table._add

    def spy(self, ws, qv, new, links, known):
        read.append([n.id for n in new])
        return real(self, ws, qv, new, links, known)
    monkeypatch.setattr(server_rank.Table, "_add", spy)
    rounds = []
    real_rank = server_search._Query.rank

    def each_round(self, *args, **kwargs):
        read.clear()
        out = real_rank(self, *args, **kwargs)
        rounds.append(list(read))
        return out
    monkeypatch.setattr(server_search._Query, "rank", each_round)
    with large_path(mem, monkeypatch):
        for question in questions[2::8]:
            mem.retrieve(question, max_results=10)
    again = [r for r in rounds if len(r) > 1]
    assert again, rounds
    for r in rounds:
        ids = [i for batch in r for i in batch]
        assert len(ids) == len(set(ids))
    assert all(len(r[1]) < len(r[0]) / 4 for r in again)  # a stage adds a few


def test_the_large_path_reads_the_context_vectors_only_of_candidates_within_reach(memory, monkeypatch):
    """Issue 23 s3 (memory/server_bound.py): on the large path the context vectors' inner products are read only for
    the candidates whose bound can still reach the k best; the hits, their order and scores are those of the ranking
    with every candidate read, and fewer candidates are ranked and fewer vectors asked."""
    mem, questions = memory
    monkeypatch.setattr(mem.db, "READ_AHEAD", False)  # every read on the one connection, where the spy counts them
    asked: list[int] = []
    ranked: list[int] = []
    real = mem.db.similarities

    def spy(qv, model, hashes):
        asked.append(len(set(hashes)))
        return real(qv, model, hashes)
    monkeypatch.setattr(mem.db, "similarities", spy)
    real_rank = server_search.rank_candidates

    def counted(ws, qv, candidates, *args):
        ranked.append(len(candidates))
        return real_rank(ws, qv, candidates, *args)
    monkeypatch.setattr(server_search, "rank_candidates", counted)
    out: dict[bool, list[list[tuple[str, float]]]] = {}
    figures: dict[bool, tuple[int, int]] = {}
    with large_path(mem, monkeypatch):
        for bound in (False, True):
            monkeypatch.setattr(server_search, "LARGE_BOUND", bound)
            asked.clear()
            ranked.clear()
            out[bound] = [[(r["id"], r["score"]) for r in mem.retrieve(q, max_results=10)] for q in questions[::4]]
            figures[bound] = (sum(asked), sum(ranked))
    for every, within in zip(out[False], out[True]):
        assert [i for i, _ in within] == [i for i, _ in every]
        assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(within, every))  # an int8 context row: a float32 step
    assert figures[True][0] < 0.9 * figures[False][0], figures
    assert figures[True][1] < 0.8 * figures[False][1], figures


# 44dc6e9's ranking (memory/server_search.py ``_rank`` and its second stages), every candidate read afresh


def reference_rank(ws: Workspace, qv: np.ndarray, candidates: list[Node], links: Any, raw: dict[str, float],
          named: set[str], k: int, weights: FusionWeights, ghosts: list[tuple[float, float, bool]],
          known: dict[str, float], scale: float, query: str) -> tuple[list[Hit], np.ndarray, list[float]]:
    """(the k best candidates, every candidate's fused value, each ghost's); ``known`` holds the inner products
    read so far (by vector hash, absent: no such vector) and gains the new ones; ``scale`` turns a BM25 score into
    a keyword score (the best hit's coverage over its BM25, as in process). The time signals (``timing_of``; a ghost
    is bounded as if it had each of them) add at most their weights' sum to a candidate, so, as in process
    (search.top_with_time), they are read only for the candidates within that sum of the k-th best without them; a
    candidate outside keeps its value without them (below the k-th best either way)."""
    nexts = [links.nodes.get(links.next.get(n.id, "")) for n in candidates]
    hashes = [n.embed_hash for n in candidates if n.embed_hash]
    hashes += [h for n in [*candidates, *nexts] if n is not None and (h := (n.props or {}).get("pair_hash"))]
    todo = [h for h in dict.fromkeys(hashes) if h not in known]
    if todo:
        found = ws.store.similarities(qv, ws.model_name, todo)
        known.update({h: found.get(h, np.nan) for h in todo})
    sims = {h: v for h in hashes if (v := known[h]) == v}  # NaN: no such vector
    own = np.array([sims.get(n.embed_hash or "", 0.0) for n in candidates], dtype=np.float32)
    # dense = the mean of the own, pair and next pair inner products that exist (float32, summed in that order)
    pair = np.zeros(len(candidates), dtype=np.float32)
    follow = np.zeros(len(candidates), dtype=np.float32)
    count = np.ones(len(candidates), dtype=np.int64)
    for j, (node, nxt) in enumerate(zip(candidates, nexts)):
        if (h := (node.props or {}).get("pair_hash")) in sims:
            pair[j], count[j] = sims[h], count[j] + 1
        if nxt is not None and (h := (nxt.props or {}).get("pair_hash")) in sims:
            follow[j], count[j] = sims[h], count[j] + 1
    dense = ((own + pair + follow) / count).astype(np.float32)
    # keyword scores and their neighbours': rows [0, n) are the candidates, then neighbours that are not candidates
    n = len(candidates)
    row = {c.id: j for j, c in enumerate(candidates)}
    pairs = [(prev_of(c), links.next.get(c.id)) for c in candidates]
    for neighbours in pairs:
        for other in neighbours:
            if other and other not in row:
                row[other] = len(row)
    every = sorted(row, key=row.__getitem__)
    bm25_raw = np.array([raw.get(i, 0.0) for i in every], dtype=np.float32)
    keyword = (np.clip(bm25_raw, 0.0, None) * scale).astype(np.float32)
    prev = np.full(len(every), -1, dtype=np.int64)
    nxt_rows = np.full(len(every), -1, dtype=np.int64)
    prev[:n] = [row.get(p or "", -1) for p, _ in pairs]
    nxt_rows[:n] = [row.get(q or "", -1) for _, q in pairs]
    values = {"dense": dense, "keyword": keyword[:n], "neighbour": neighbour_sum(keyword, prev, nxt_rows)[:n]}
    if named:
        values["mention"] = np.array([1.0 if (c.title or "") in named else 0.0 for c in candidates], dtype=np.float32)
    content = fuse(values, weights.content())
    gate = weights.gate(content)  # the mention and time lifts count as much as the content is relevant (fusion.py)
    fused = content + fuse(values, {"mention": weights.mention}) * gate
    names = list(timing_of(query, []))
    lifts = weights.lifts()
    time_w = {name: lifts[name] for name in names}
    first = top_k(fused, k)
    timed = np.zeros(n, dtype=bool)  # the candidates whose time lifts are in ``fused``
    kept = ws.held("memory:time-bits", dict)  # time bits by text and date (``timing_of``), per workspace
    if any(time_w.values()) and first.size:
        if min(time_w.values()) < 0:
            pool = np.arange(n)
        else:  # the time lifts add at most their weights' sum (times a gate of at most 1)
            pool = np.flatnonzero(fused >= float(fused[first].min()) - sum(time_w.values()))
        timing = timing_of(query, links.whole([candidates[int(j)] for j in pool]), kept)
        fused[pool] = fused[pool] + fuse(timing, time_w) * gate[pool]
        timed[pool] = True
        for name in names:
            values[name] = np.zeros(n, dtype=np.float32)
            values[name][pool] = timing[name]
    answered = _ref_answers(query, candidates, links, row, fused, values, gate, weights, timed, kept, k)
    raised = _ref_near(query, candidates, links, row, fused, values, gate, weights, timed, kept)
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


def _ref_timed(query: str, at: list[int], candidates: list[Node], links: Any, fused: np.ndarray,
           values: dict[str, np.ndarray], gate: np.ndarray, weights: FusionWeights, timed: np.ndarray,
           kept: dict[Any, Any]) -> None:
    """Add their time lifts to the candidates at ``at`` where ``_rank`` had not (``timed``; ``kept``: the time bits
    ``timing_of`` remembers), so a turn a second stage lifts keeps its own value with them, as in process."""
    names = list(timing_of(query, []))
    time_w = {name: weights.lifts()[name] for name in names}
    todo = np.array([j for j in at if not timed[j]], dtype=np.int64)
    if todo.size and any(time_w.values()):
        timing = timing_of(query, links.whole([candidates[int(j)] for j in todo]), kept)
        fused[todo] = fused[todo] + fuse(timing, time_w) * gate[todo]
        for name in names:
            values.setdefault(name, np.zeros(len(candidates), dtype=np.float32))[todo] = timing[name]
        timed[todo] = True


def _ref_answers(query: str, candidates: list[Node], links: Any, row: dict[str, int], fused: np.ndarray,
             values: dict[str, np.ndarray], gate: np.ndarray, weights: FusionWeights, timed: np.ndarray,
             kept: dict[Any, Any], k: int) -> set[int]:
    """The replies to the questions that follow the ``k`` best candidates rank at least ``weights.answer`` times
    their source's value, in ``fused`` (memory/answers.py ``answer_best``; ``rank`` made them candidates), their time
    lifts added first: the positions so raised."""
    n = len(candidates)
    if not weights.answer or n == 0:
        return set()
    best = [int(j) for j in top_k(fused, k)]
    source: dict[int, float] = {}
    for turn, reply in links.replies([candidates[j].id for j in best]).items():
        j, value = row.get(reply, n), float(fused[row[turn]])
        if j < n and value > 0:
            source[j] = max(source.get(j, 0.0), value)
    if not source:
        return set()
    _ref_timed(query, list(source), candidates, links, fused, values, gate, weights, timed, kept)
    raised = set()
    for j, value in source.items():
        got = lifted(weights.answer, float(fused[j]), value)
        if got > fused[j]:
            fused[j] = got
            raised.add(j)
    return raised


def _ref_near(query: str, candidates: list[Node], links: Any, row: dict[str, int], fused: np.ndarray,
          values: dict[str, np.ndarray], gate: np.ndarray, weights: FusionWeights, timed: np.ndarray,
          kept: dict[Any, Any]) -> set[int]:
    """For a question that asks when, the candidates within ``weights.near_turns`` of the best rank at least
    ``weights.near ** d`` times its value, ``d`` links away, in ``fused`` (memory/search.py ``near_best``; ``rank``
    made them candidates), their time lifts added first where ``_rank`` had not (``timed``; ``kept``: the time bits
    ``timing_of`` remembers): the positions so raised."""
    n = len(candidates)
    if not weights.near or n == 0 or not asks_when(query):
        return set()
    best = int(top_k(fused, 1)[0])
    around = links.within(candidates[best].id, weights.near_turns)
    distance = {j: d for i, d in around.items() if (j := row.get(i, n)) < n}
    at = list(distance)
    if not at:
        return set()
    _ref_timed(query, at, candidates, links, fused, values, gate, weights, timed, kept)
    idx = np.array(at, dtype=np.int64)
    floor = near_shares(weights.near, [distance[j] for j in at]) * float(fused[best])
    raised = {int(j) for j, f in zip(idx.tolist(), floor.tolist()) if fused[j] < f}
    fused[idx] = np.maximum(fused[idx], floor)
    return raised


def test_the_linked_rows_fields_are_those_of_the_whole_rows(memory):
    """``nodes_linked(fields=)`` (issue 23 s3: the props come as text and the client keeps the fields, the server
    parses no JSON for them) gives, on a real store, the nodes (the followers' order too) and columns of the whole
    read, each node's
    props the set fields among the whole props (all of them when one is neither a string nor null)."""
    from agentcontext.store.pg_sql import linked_sql

    assert "jsonb_typeof" not in linked_sql("prev", server_search.FIELDS)  # no field parsed in the server
    assert " UNION SELECT" not in linked_sql("prev", server_search.FIELDS)  # no named row hashed whole to dedupe
    mem, _ = memory
    store = mem.workspace.store
    ids = [n.id for n in store.find_nodes(namespace=mem.namespace, kind="memory")][::5]
    fields = (*server_search.FIELDS, "metadata")  # metadata (an object): every prop comes
    for wanted in (server_search.FIELDS, fields):
        named, followers = store.nodes_linked(ids, "prev", mem.namespace, "memory", fields=wanted)
        whole_named, whole_followers = store.nodes_linked(ids, "prev", mem.namespace, "memory")
        assert sorted(named) == sorted(whole_named) and len(named) > len(ids)  # (a dict: no order promised)
        assert [n.id for n in followers] == [n.id for n in whole_followers] and len(followers) > 10
        for got, whole in [*((named[i], whole_named[i]) for i in named), *zip(followers, whole_followers)]:
            assert (got.id, got.kind, got.namespace, got.key, got.title, got.summary, got.content, got.embed_hash) == (
                whole.id, whole.kind, whole.namespace, whole.key, whole.title, whole.summary, whole.content,
                whole.embed_hash)
            picked = {k: v for k in ("prev", *wanted) if (v := whole.props.get(k)) is not None}
            assert got.props == (picked if all(isinstance(v, str) for v in picked.values()) else whole.props)
        assert any("pair_hash" in n.props for n in named.values())


def test_the_linked_followers_with_their_text_are_the_followers_nodes_naming_finds(memory):
    """``nodes_linked(content=True)`` (issue 23 s3: a ranking reads the text of some followers; they come with it
    instead of a ``get_nodes`` round trip each time) gives the nodes of ``content=False``, the followers with their
    stored text; and the followers of either are those ``nodes_naming`` finds at two levels (the second level is
    asked only of first-level followers not named already), each turn's first follower the same."""
    mem, _ = memory
    store = mem.workspace.store
    ids = [n.id for n in store.find_nodes(namespace=mem.namespace, kind="memory")][3::7]
    stored = {n.id: n for n in store.find_nodes(namespace=mem.namespace, kind="memory")}
    named, followers = store.nodes_linked(ids, "prev", mem.namespace, "memory", fields=server_search.FIELDS)
    texts_named, texts = store.nodes_linked(ids, "prev", mem.namespace, "memory", fields=server_search.FIELDS,
                                            content=True)
    assert texts_named == named and len(named) > len(ids)
    assert [n.id for n in texts] == [n.id for n in followers] and len(texts) > 10
    for got, light in zip(texts, followers):
        assert got.content == stored[got.id].content and got.content
        assert (got.id, got.title, got.props, got.embed_hash) == (light.id, light.title, light.props,
                                                                   light.embed_hash)
    first = store.nodes_naming("prev", list(named), namespace=mem.namespace, kind="memory")
    second = store.nodes_naming("prev", [n.id for n in first], namespace=mem.namespace, kind="memory")
    assert {n.id for n in followers} == {n.id for n in [*first, *second]}
    nexts: dict[str, str] = {}
    for n in sorted([*first, *second], key=lambda n: stored[n.id].key):
        nexts.setdefault(n.props["prev"], n.id)
    got_nexts: dict[str, str] = {}
    for n in followers:
        got_nexts.setdefault(n.props["prev"], n.id)
    assert got_nexts == nexts


def test_a_ranking_reads_no_text_of_a_follower_nodes_linked_sent(memory, monkeypatch):
    """The turns' texts a ranking reads (time signals, whether a turn asks) of followers ``nodes_linked`` sent come
    with them: inside the search, ``get_nodes`` reads none of those again (it did ~28 a query at 200,000
    memories, in ~4.8 round trips), and the hits are the same with ``whole`` reading every text afresh."""
    mem, questions = memory
    store = mem.workspace.store
    sent: set[str] = set()  # of the current search
    again: list[str] = []
    count = [0]
    real_linked, real_get, real_search = store.nodes_linked, store.get_nodes, server_search.search

    def linked(*a, **kw):
        named, followers = real_linked(*a, **kw)
        sent.update(n.id for n in followers if n.id not in named)
        count[0] += len(followers)
        return named, followers

    def get(ids, *a, **kw):
        again.extend(i for i in ids if i in sent)
        return real_get(ids, *a, **kw)

    def search(*a, **kw):
        try:
            return real_search(*a, **kw)
        finally:
            sent.clear()  # the results' fetch after it reads the hits whole
    monkeypatch.setattr(store, "nodes_linked", linked)
    monkeypatch.setattr(store, "get_nodes", get)
    monkeypatch.setattr(server_search, "search", search)
    asked = questions[2::9]
    with large_path(mem, monkeypatch):
        ours = [[(h["id"], h["score"]) for h in mem.retrieve(q, max_results=10)] for q in asked]
        assert count[0] > 100 and not again
        monkeypatch.setattr(server_search._Links, "whole", lambda self, nodes: [
            real_get([n.id]).get(n.id, n) for n in nodes])
        assert [[(h["id"], h["score"]) for h in mem.retrieve(q, max_results=10)] for q in asked] == ours
