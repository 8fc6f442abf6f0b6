"""Memory search in the store's server (stores with ``Capability.VECTOR_SEARCH``): the ranking of ``search.py``,
computed over candidates the server finds, so no process holds a namespace's vectors.

The candidates are the memories whose own vector is nearest the query (a pool of ``DENSE_POOL``, the filters
applied in the server), the text search's best hits (a pool of ``TEXT_POOL``), the nearest memories of each speaker
the query names, and the turns before and after every one of those (a reply is found through its question, and a
turn inherits its neighbours' keyword scores). Each candidate is then scored exactly as the in-process index
scores it: dense = the mean of the inner products of its own vector, its pair vector and its next turn's pair vector
with the query (computed in the server: ``similarities``), the keyword score (BM25, for candidates beyond the
text pool too: ``text_search(ids=)``, scaled by the best hit's keyword coverage), its neighbours' keyword scores,
the mention, the time signals (memory/dates.py, from the candidate's text and created_at); ``fuse``, ``top_k`` and
the calibration as in process. The dense query leaves out the names of the speakers it names (the mention signal's;
``without_names``), and so does the keyword query, as in process, where the names come from every speaker of the
namespace: here from the speakers of the first text hits (the text index holds each memory's speaker; a named speaker
none of whose memories is among them keeps the name in both), read before the dense pool so the ranking stays one
round; a query that names a speaker then asks the text search once more, without the names. On PostgreSQL the reads
that need only the names (that second text search, the dense pool, the named speakers' nearest, the own vectors'
inner products) start on the store's second connection on a guess of the names, from the speakers earlier queries
heard, while the first text search runs, and are taken only when the guess held (memory/server_gather.py,
store/pg_parallel.py): the same hits and scores, sooner. While the dense pool is walked there, the main connection
reads the inner products of the own vectors of the nodes the text hits brought (``_sims_early``), which the batch
started after the walk read before (1,000,000 memories, session 21: retrieve p50 0.79x-1.08x, median 0.84x, of the
code before over five runs at load 3-5). Reading the dense pool's nodes there too
(``nodes_linked`` right after ``nearest``, on that connection, while the main one reads the text hits') was built and
measured in session 20, and removed: at 1,000,000 memories, the same top 10 and scores every
run: busy (load 10-13) retrieve p50 0.96x-1.12x, p95 0.88x-1.06x of the code before (four runs; the main connection's
links stage 0.65x-0.74x, the wait for the dense pool longer by as much); quiet (load ~2, session 20, on against off in
the same run) p50 1.056x / 0.984x, p95 1.041x / 0.961x (benchmarks/results/postgres_scale_1000000_quiet_s20_runB*.json):
no gain. The second stages
run as in process: the replies to the questions that follow the k best (memory/answers.py) and, for a query that
asks when, the turns around the best hit become candidates and are lifted (memory/server_rank.py).

A memory outside the candidates has its own vector's score below the dense pool's last and its text score below the
text pool's last; a "ghost" candidate with both scores is fused with the others, and while it would still rank among
the top k, the pools grow (``GROWTH``, up to ``MAX_POOL`` and ``BM25_LIMIT``) and the query runs again: the threshold
rule of top-k over sorted lists. (Its text bound leaves out the shares a ghost's neighbours could add, and its dense
bound the context vectors: the ranking is exact up to those.) On a large namespace (``_large``) the pools would grow
to their largest for almost every query (its memories are near ties, and a ghost is bounded as if it had every time
signal), each round costing a full query: there one round runs, with pools of ``LARGE_DENSE_POOL`` and
``LARGE_TEXT_POOL``, and the ranking is approximate. Measured on the 200,000-memory benchmark store (99 labelled
LoCoMo questions, benchmarks/postgres_scale.py): hit@10 0.414 and precision@10 0.234, against 0.414 and 0.232 with the
pools grown to their largest, at a fifth of the time. The pools were 160 / 300 until issue 23 s3: 100 / 150 keep
hit@10 0.414 on 198 labelled questions (top-10 overlap with 160 / 300: 0.82) at 0.56x the time
(benchmarks/postgres_pools.py). ``LARGE_EXPAND`` (off): only the best seeds on the first stage's signals become
candidates with their neighbours (``_Query._seeds``); measured, it cost hit@10 (0.38-0.40 at 120 of ~400 seeds), the
neighbours of seeds ranked low carry the answers. On that path the context vectors' inner products are read only for
the candidates whose upper bound on what the first stage read can still reach the k best (``LARGE_BOUND``,
memory/server_bound.py): at 200,000 memories 0.62x the candidates ranked and 0.64x the inner products asked on
the query's clock, the same top 10 for every benchmark question.
tests/test_memory_postgres.py compares the rankings on a LoCoMo
conversation; benchmarks/postgres_scale.py on a million memories.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..engine.fusion import (COMMON_MIN_DOCS, COMMON_SHARE, FusionWeights, keyword_coverage,
                             keyword_query, meaning_keywords, stemmed)
from ..engine.vectors import top_k
from ..model import Node
from ..workspace import Workspace
from .records import CONV, KIND, USER
from .dates import asks_when
from .answers import asks
from .search import BM25_LIMIT, Hit
from .server_bound import AHEAD_NEAREST, AHEAD_TEXT, within_reach
from .server_gather import Reads, hear, known_speakers, meaning_of, named_guess
from .server_rank import Table, prev_of, rank as rank_candidates

DENSE_POOL = 120  # nearest memories asked of the server at first (at least 4 x k)
TEXT_POOL = 200  # best text hits asked at first (at least 10 x k); BM25_LIMIT at most, as in process
GROWTH, MAX_POOL = 2, 480  # while a memory outside the pools could still rank, ask for this many times more
LARGE_DENSE_POOL, LARGE_TEXT_POOL = 100, 150  # a large namespace (``_large``): one round with these pools
# and this many nearest turns of each named speaker (at least 4 x k): a filter one row in 40 passes makes the HNSW
# scan walk about 40 times the rows it returns (1M memories: about 1 s for 160, 0.1 s for 40)
LARGE_NAMED_POOL = 40
# and this many of the seeds (the nearest, the text hits, the named speakers' nearest) that rank best on what the first
# stage reads (``_Query._seeds``) become candidates with their neighbours (None: every seed)
LARGE_EXPAND: int | None = None
# and the context vectors' inner products are read only for the candidates that can still reach the k best on what
# the first stage read (memory/server_bound.py; False: for every candidate)
LARGE_BOUND = True
# the own vectors' inner products of the nodes the text hits brought are read on the main connection while the second
# walks the dense pool (``_Query._sims_early``; False: all in the batch ``_sims_ahead`` starts after the walk)
EARLY_SIMS = True
Keep = Callable[[dict[str, Any]], bool]
# the props of a candidate the ranking reads (``_Query.passes``, ``prev_of``, ``server_rank``): the linked
# nodes bring only these (no JSON decoded in the client: at 200,000 memories ~2,000 rows a query, 98 ms of 169)
FIELDS = ("prev", "pair_hash", "created_at", "conversation_id", "user_id")


def server_filters(conversation_id: str | None, user_id: str | None,
                   metadata: dict[str, Any]) -> tuple[list[str] | None, dict[str, Any] | None]:
    """The filters the server applies: tags, and the metadata values JSON containment tests exactly (text,
    numbers; the rest is checked here, on the candidates)."""
    tags = [CONV + str(conversation_id)] if conversation_id is not None else []
    if user_id is not None:
        tags.append(USER + str(user_id))
    exact = {k: v for k, v in metadata.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    return tags or None, {"metadata": exact} if exact else None


def _large(ws: Workspace, namespace: str) -> bool:
    """Whether the namespace holds at least COMMON_MIN_DOCS memories (then common words leave the text query, as
    in process), counted through an index (``holds_at_least``: memories retracted and not yet purged count too; at
    1,000,000 memories 5-14 ms, where reading the 20,000th row took 21-74 ms); once large, a namespace stays large
    for this workspace."""
    seen: set[str] = ws.held("memory:large-namespaces", set)
    if namespace not in seen and ws.store.holds_at_least(COMMON_MIN_DOCS, namespace, KIND):
        seen.add(namespace)
    return namespace in seen


def search(ws: Workspace, namespace: str, query: str, k: int, conversation_id: str | None, user_id: str | None,
           keep: Keep | None, metadata: dict[str, Any], weights: FusionWeights = FusionWeights()) -> list[Hit]:
    """The ``k`` best memories of ``namespace`` for ``query`` under the filters (``keep``: the exact metadata
    check), each with the signals behind its score."""
    if k <= 0:
        return []
    qv = ws.embed_query(query)
    keywords = keyword_query(query)
    large = _large(ws, namespace)
    common = COMMON_SHARE if keywords and large else None
    query_ = _Query(ws, namespace, query, qv, keywords, common, conversation_id, user_id, keep, metadata, weights)
    query_.bound = large and LARGE_BOUND
    if large:
        pool, text_pool = max(LARGE_DENSE_POOL, 4 * k), min(max(LARGE_TEXT_POOL, 10 * k), BM25_LIMIT)
    else:
        pool, text_pool = max(DENSE_POOL, 4 * k), max(TEXT_POOL, 10 * k)
    named_pool = max(LARGE_NAMED_POOL, 4 * k) if large else None
    expand = max(LARGE_EXPAND, 4 * k) if large and LARGE_EXPAND is not None else None
    while True:
        hits, complete = query_.rank(k, pool, text_pool, named_pool or pool, expand)
        if complete or large or (pool >= MAX_POOL and text_pool >= BM25_LIMIT):
            return hits
        pool, text_pool = min(pool * GROWTH, MAX_POOL), min(text_pool * GROWTH, BM25_LIMIT)


class _Query:
    """One query's candidates, gathered from the server pool by pool."""

    def __init__(self, ws: Workspace, namespace: str, text: str, qv: np.ndarray, keywords: str,
                 common: float | None, conversation_id: str | None, user_id: str | None, keep: Keep | None,
                 metadata: dict[str, Any], weights: FusionWeights) -> None:
        self.ws, self.store, self.model, self.namespace = ws, ws.store, ws.model_name, namespace
        self.text, self.qv, self.keywords, self.common, self.weights = text, qv, keywords, common, weights
        self.conversation_id, self.user_id, self.keep = conversation_id, user_id, keep
        self.tags, self.contains = server_filters(conversation_id, user_id, metadata)
        # what earlier rounds read (nodes, followers) stays; the props the ranking reads, the metadata for ``keep``
        self.links = _Links(ws, namespace, (*FIELDS, "metadata") if keep is not None else FIELDS)
        self.sims: dict[str, float] = {}  # inner products by vector hash
        self.texts: dict[str, float] = {}  # text scores of candidates beyond the text pool
        self.restated = False  # whether the speakers the query names have left its dense vector (rank)
        self.meaning, self.named = text, set()  # what ``qv`` embeds; the named speakers the last round found
        self.bound = False  # whether only the candidates within reach of the k best are ranked (server_bound.py)

    def passes(self, node: Node) -> bool:
        props = node.props or {}
        return ((self.conversation_id is None or props.get("conversation_id") == str(self.conversation_id))
                and (self.user_id is None or props.get("user_id") == str(self.user_id))
                and (self.keep is None or self.keep(props)))

    def _nearest(self, pool: int, titles: list[str] | None = None) -> list[tuple[str, float]]:
        return self.store.nearest(self.qv, self.model, pool, namespace=self.namespace, kind=KIND, tags=self.tags,
                                  props=self.contains, titles=titles)

    def _ahead(self, pool: int, text_pool: int, named_pool: int) -> Reads:
        """The reads that need not wait for the text hits, started on what the query most likely means
        (memory/server_gather.py): the text search without the names, the dense pool, the named speakers' nearest."""
        reads, meaning, qv, named = Reads(self.store), self.meaning, self.qv, self.named
        if not self.restated and self.weights.mention:  # the names: those of the speakers heard before
            known = known_speakers(self.ws, self.namespace)
            meaning, named = meaning_of(self.text, known), named_guess(self.text, known)
            if meaning != self.text:
                qv = self.ws.embed_query(meaning)
                if (keywords := meaning_keywords(self.text, meaning)) != self.keywords and keywords:
                    reads.start("text", (keywords, text_pool), lambda s: s.text_search(
                        keywords, namespace=self.namespace, kind=KIND, limit=text_pool, common=self.common))
        where = {"namespace": self.namespace, "kind": KIND, "tags": self.tags, "props": self.contains}
        reads.start("nearest", (meaning, pool), lambda s: s.nearest(qv, self.model, pool, **where))
        if named:
            titles = sorted(named)
            reads.start("named", (meaning, named_pool, tuple(titles)),
                        lambda s: s.nearest(qv, self.model, named_pool, titles=titles, **where))
        return reads

    def _sims_ahead(self, reads: Reads, nearest: list[tuple[str, float]],
                    text_hits: list[tuple[str, float]]) -> list[str]:
        """Start the inner products of the own vectors of the nodes read so far (the seeds and their neighbours: most
        of the candidates) with the query, while their neighbours and text scores are read; the hashes asked. Own
        vectors only: the server scores each row alone (the same value in any batch), where a context vector held as
        int8 is scored in the client a batch at a time (pg_q8.scores: a row at a batch's end can come a float32 step
        apart), so those stay in the one batch ``Table`` reads, as before. The dense pool's own vectors are left out:
        the server scored them already. With ``bound`` (a large namespace), the context vectors of the best seeds
        and their neighbours are read too (``server_bound.AHEAD_NEAREST``, ``AHEAD_TEXT``): their values give the
        floor the other candidates' bounds are held against (their rows may then come a float32 step apart)."""
        nodes = self.links.nodes
        scored = {n.embed_hash for i, _ in nearest if (n := nodes.get(i)) is not None}
        context = {h for n in nodes.values() if (h := (n.props or {}).get("pair_hash"))}
        hashes = list(dict.fromkeys(h for n in nodes.values() if (h := n.embed_hash) and h not in self.sims
                                    and h not in scored and h not in context))
        if self.bound:
            hashes += [h for h in dict.fromkeys(self._context_of(
                [i for i, _ in nearest[:AHEAD_NEAREST]] + [i for i, _ in text_hits[:AHEAD_TEXT]]))
                if h not in self.sims]
        if hashes:
            qv = self.qv
            reads.start("sims", self.meaning, lambda s: s.similarities(qv, self.model, hashes))
        return hashes

    def _sims_early(self) -> None:
        """The inner products of the own vectors of the nodes read so far (the text hits and their neighbours) with
        the query, read on the main connection while the second one walks the dense pool, so ``_sims_ahead`` later
        asks only for those of the dense pool's neighbourhood. The same rule as there (the own vectors only, no hash
        a node read so far holds as its pair vector: those stay in the ranking's one batch), the same values (the
        server scores each own vector alone), NaN where there is no such vector."""
        nodes = self.links.nodes
        context = {h for n in nodes.values() if (h := (n.props or {}).get("pair_hash"))}
        hashes = list(dict.fromkeys(h for n in nodes.values() if (h := n.embed_hash) and h not in self.sims
                                    and h not in context))
        if hashes:
            found = self.store.similarities(self.qv, self.model, hashes)
            for h in hashes:
                self.sims.setdefault(h, found.get(h, np.nan))

    def _context_of(self, ids: list[str]) -> list[str]:
        """The context vectors' hashes a ranking reads for these seeds and their neighbours as candidates: the pair
        vectors of the turn before, the seed, the next turn and the one after."""
        nodes, following = self.links.nodes, self.links.next
        out = []
        for i in ids:
            at = [prev_of(nodes[i]) if i in nodes else None, i, following.get(i)]
            at.append(following.get(at[2] or ""))
            out += [h for x in at if x and (n := nodes.get(x)) is not None and (h := (n.props or {}).get("pair_hash"))]
        return out

    def rank(self, k: int, pool: int, text_pool: int, named_pool: int,
             expand: int | None = None) -> tuple[list[Hit], bool]:
        """(the k best hits among this round's candidates, whether nothing outside them can outrank those);
        ``expand``: how many of the nearest and text hits (the seeds) become candidates with their neighbours, the
        best on the signals read with them (``_seeds``; None: every one)."""
        store, namespace = self.store, self.namespace
        reads = self._ahead(pool, text_pool, named_pool)
        text_hits = store.text_search(self.keywords, namespace=namespace, kind=KIND, limit=text_pool,
                                      common=self.common) if self.keywords else []
        raw = dict(text_hits)
        links = self.links
        if not self.restated:  # as in process, the named speakers are the mention signal's: the dense query drops
            self.restated = True  # their names, found among the text hits' speakers (the names are keywords)
            heard = {n.title for n in links.load(list(raw)).values() if n.title} if self.weights.mention else set()
            hear(self.ws, namespace, heard)
            meaning = meaning_of(self.text, heard)
            if meaning != self.text:
                self.qv, self.meaning = self.ws.embed_query(meaning), meaning
                if (keywords := meaning_keywords(self.text, meaning)) != self.keywords:  # keywords too
                    self.keywords = keywords
                    text_hits = reads.take("text", (keywords, text_pool))
                    if text_hits is None:
                        text_hits = store.text_search(keywords, namespace=namespace, kind=KIND, limit=text_pool,
                                                      common=self.common) if keywords else []
                    raw = dict(text_hits)
        if EARLY_SIMS and reads.running("nearest"):  # the main connection is free while the dense pool is walked
            self._sims_early()
        nearest = reads.take("nearest", (self.meaning, pool))
        if nearest is None:  # the guess missed the names
            nearest = self._nearest(pool)
        nodes = links.load([i for i, _ in nearest] + list(raw))
        ahead = self._sims_ahead(reads, nearest, text_hits)
        named = self.named = _named(self.text, nodes.values(), self.weights)
        named_nearest: list[tuple[str, float]] = []
        if named:  # each named speaker's nearest turns: the boost may lift them above the pool
            named_nearest = reads.take("named", (self.meaning, named_pool, tuple(sorted(named))))
            if named_nearest is None:
                named_nearest = self._nearest(named_pool, sorted(named))
            nodes.update(links.load([i for i, _ in named_nearest]))
        for i, score in [*nearest, *named_nearest]:  # the server scored these own vectors already (the same product)
            if (own := links.nodes.get(i)) is not None and own.embed_hash:
                self.sims.setdefault(own.embed_hash, score)
        best = nodes.get(text_hits[0][0]) if text_hits else None
        coverage = 0.0
        if best is not None:  # each keyword weighted by its idf (engine/fusion.py keyword_coverage) from the counts
            # the counts the server ranks with, of this namespace (the in-process index: its own)
            rows, counts = store.term_counts(self.keywords, namespace=namespace)  # the search's, remembered
            searched = " ".join(t for t in self.keywords.split() if t in counts)  # a word with no lexeme finds nothing
            text = " ".join((best.title or "", best.summary or "", best.content or ""))
            coverage = keyword_coverage(searched, text, {stemmed(t): n for t, n in counts.items()}, rows)
        scale = coverage / text_hits[0][1] if text_hits and text_hits[0][1] > 0 else 0.0
        seeds = [i for i, n in nodes.items() if self.passes(n)]
        if expand is not None and len(seeds) > expand:  # a large namespace: the best seeds on what is known so far
            seeds = self._seeds(seeds, raw, named, scale, expand)
        candidates = [n for n in links.around(seeds) if self.passes(n)]
        if not candidates:
            return [], len(nearest) < pool and len(text_hits) < text_pool
        candidates.sort(key=lambda n: (n.key, n.id))  # the in-process order (insertion), for ties
        self._complete(candidates, raw, len(text_hits) >= text_pool)
        named = _named(self.text, [*nodes.values(), *candidates], self.weights)
        # Ghosts: the best a memory outside the candidates could score (module doc), with and without a named speaker
        text_bound = text_hits[-1][1] if len(text_hits) >= text_pool else 0.0
        ghosts = [(nearest[-1][1] if len(nearest) >= pool else 0.0, text_bound, False)]
        if named:
            ghosts.append((named_nearest[-1][1] if len(named_nearest) >= named_pool else 0.0, text_bound, True))
        if ahead:  # the inner products started ahead: as ``Table`` would have read them (NaN: no such vector)
            found = reads.take("sims", self.meaning)
            for h in ahead:
                self.sims.setdefault(h, found.get(h, np.nan))
        every, left = candidates, set()  # every candidate; those left out as out of reach (server_bound.py)
        if self.bound:
            candidates = within_reach(self.text, k, candidates, links.nodes, links.next, self.sims, raw, scale, named,
                                      self.weights)
            left = {c.id for c in every} - {c.id for c in candidates}
        table = Table()  # what the ranking read of each candidate, read once a round (memory/server_rank.py)
        hits, fused, ghost_scores = rank_candidates(self.ws, self.qv, candidates, links, raw, named, k, self.weights,
                                                    ghosts, self.sims, scale, self.text, table)
        rounds = 0
        while rounds < 3:  # the second stages' turns are candidates (ranked and lifted): the replies to the questions
            # that follow the k best (memory/answers.py) and, for a question that asks when, the turns around the best
            wanted: list[str] = []
            if self.weights.answer and hits:
                wanted += list(links.replies([h.id for h in hits]).values())
            if self.weights.near and hits and asks_when(self.text):
                wanted += list(links.within(hits[0].id, self.weights.near_turns))
            have = {c.id for c in candidates}
            extra = [links.nodes[i] for i in dict.fromkeys(wanted) if i not in have and self.passes(links.nodes[i])]
            if not extra:
                break
            rounds += any(c.id not in left for c in extra)  # a candidate left out as out of reach, back: no new round
            every = [*every, *(c for c in extra if c.id not in left)]
            left -= {c.id for c in extra}
            candidates = sorted([*candidates, *extra], key=lambda n: (n.key, n.id))
            self._complete(candidates, raw, len(text_hits) >= text_pool)
            named = _named(self.text, [*nodes.values(), *every], self.weights)
            hits, fused, ghost_scores = rank_candidates(self.ws, self.qv, candidates, links, raw, named, k,
                                                        self.weights, ghosts, self.sims, scale, self.text, table)
        open_ended = len(nearest) >= pool or len(named_nearest) >= named_pool or len(text_hits) >= text_pool
        if not open_ended:
            return hits, True
        kth = float(np.sort(fused)[-k]) if fused.size >= k else -np.inf
        return hits, all(g < kth for g in ghost_scores)

    def _seeds(self, ids: list[str], raw: dict[str, float], named: set[str], scale: float, n: int) -> list[str]:
        """The ``n`` of these seeds that rank best on what the first stage read: their dense score (the mean of their
        own, pair and next turn's pair vectors' scores, as ``_rank`` computes it; the turns were read with the seeds),
        their keyword score, their neighbours' (those among the text hits) and the mention; the time signals and
        the second stages are left for the candidates (a large namespace only: the ranking is approximate there)."""
        nodes, nexts, w = self.links.nodes, self.links.next, self.weights
        after = [nodes.get(nexts.get(i, "")) for i in ids]
        own = [nodes[i].embed_hash or "" for i in ids]
        pair = [(nodes[i].props or {}).get("pair_hash") or "" for i in ids]
        follow = [((x.props or {}).get("pair_hash") or "") if x is not None else "" for x in after]
        todo = list(dict.fromkeys(h for h in [*own, *pair, *follow] if h and h not in self.sims))
        if todo:
            found = self.store.similarities(self.qv, self.model, todo)
            self.sims.update({h: found.get(h, np.nan) for h in todo})
        scores = np.array([[self.sims.get(h, np.nan) if h else np.nan for h in hs] for hs in zip(own, pair, follow)],
                          dtype=np.float64).reshape(len(ids), 3)
        held = ~np.isnan(scores)
        held[:, 0] = True  # no own vector: 0, as in ``_rank``
        dense = np.where(held, np.nan_to_num(scores), 0.0).sum(axis=1) / held.sum(axis=1)
        keyword = np.array([max(raw.get(i, 0.0), 0.0) for i in ids]) * scale
        around = np.array([max(raw.get(prev_of(nodes[i]) or "", 0.0), 0.0) + max(raw.get(nexts.get(i, ""), 0.0), 0.0)
                           for i in ids]) * scale
        content = w.dense * dense + w.keyword * keyword + w.neighbour * around
        mention = np.array([1.0 if (nodes[i].title or "") in named else 0.0 for i in ids])
        value = content + w.mention * mention * w.gate(content)
        return [ids[j] for j in sorted(top_k(value, n).tolist())]

    def _complete(self, candidates: list[Node], raw: dict[str, float], beyond: bool) -> None:
        """Read each candidate's next turn and, when the text pool was full (``beyond``), the text scores of the
        candidates and their neighbours beyond it into ``raw``."""
        links = self.links
        links.complete(candidates)
        if not (self.keywords and beyond):
            return
        around = {c.id for c in candidates} | {x for c in candidates for x in (prev_of(c), links.next.get(c.id))}
        missing = sorted(x for x in around if x and x not in raw and x not in self.texts)
        if missing:
            found = dict(self.store.text_search(self.keywords, namespace=self.namespace, kind=KIND,
                                                limit=len(missing), common=self.common, ids=missing))
            self.texts.update({x: found.get(x, 0.0) for x in missing})
        raw.update({x: score for x in around if x and x not in raw and (score := self.texts.get(x, 0.0))})


def _named(query: str, nodes: Any, weights: FusionWeights) -> set[str]:
    """The speakers (titles) among ``nodes`` that the query names, when there is more than one speaker."""
    titles = sorted({n.title or "" for n in nodes})
    if not weights.mention or len(titles) < 2:
        return set()
    return named_guess(query, titles)


class _Links:
    """Candidate nodes with their previous and next turns (``props.prev`` and the first turn naming it), read from
    the store with the candidates: ``nodes_linked`` brings a batch of nodes, the turns they name and two levels of
    followers, with their text, in one round trip, so ``around`` and ``complete`` find what they need already read;
    the followers a second stage asks for (``_followers``: the replies to the best hits' questions, the turns around
    a when-question's best hit) come the same way, with their text and their own followers (before, ``nodes_naming``
    sent them without their text, and ``whole`` read it with ``get_nodes``: at 1,000,000 memories, 30 questions, the
    main connection's reads of turns inside a search were nodes_linked 2.2 + nodes_naming 1.6 + get_nodes 0.6 a
    query, now nodes_linked 2.8)."""

    def __init__(self, ws: Workspace, namespace: str, fields: tuple[str, ...] = FIELDS) -> None:
        self.store, self.namespace, self.fields = ws.store, namespace, fields
        self.nodes: dict[str, Node] = {}
        self.next: dict[str, str] = {}
        self._full: set[str] = set()  # read with their content
        self._asked: set[str] = set()  # whose followers are known
        self._gone: set[str] = set()  # asked for, not a memory of the namespace
        self._whole: dict[str, Node] = {}  # followers with their content (``whole``)

    def load(self, ids: list[str]) -> dict[str, Node]:
        """These nodes (the memories of the namespace among them), read once, with their neighbourhood."""
        todo = [i for i in dict.fromkeys(ids) if i and i not in self._full and i not in self._gone]
        if todo:
            self.add(todo, *self.store.nodes_linked(todo, "prev", self.namespace, KIND, fields=self.fields,
                                                    content=True))
        return {i: self.nodes[i] for i in dict.fromkeys(ids) if i in self.nodes}

    def add(self, ids: list[str], named: dict[str, Node], followers: list[Node]) -> None:
        """What ``nodes_linked`` (with ``fields`` and content) gave for ``ids``, kept as ``load`` keeps it: a node read
        before stays as it was read (a node's followers are all read whenever any are, so its next turn is the
        same whichever read found it)."""
        named = {i: n for i, n in named.items() if i not in self._full}
        self.nodes.update(named)
        self._full.update(named)
        self._gone.update(i for i in ids if i not in named and i not in self._full)
        first = [n.id for n in followers if prev_of(n) in named]
        for node in followers:  # insertion order: the first follower of each node is its next turn
            self.next.setdefault(node.props["prev"], node.id)
            self.nodes.setdefault(node.id, node)
            self._whole.setdefault(node.id, node)  # with its text (``whole``: no ``get_nodes`` for it)
        self._asked.update(named, first)

    def whole(self, nodes: list[Node]) -> list[Node]:
        """These nodes with their content, so their time expressions count as in process: every read here brings the
        text (``nodes_linked`` with ``content``), so ``get_nodes`` reads only a node that came some other way (at
        200,000 memories the followers read without it cost 4.8 ``get_nodes`` a query, ~28 turns)."""
        light = [n.id for n in nodes if n.id not in self._full and n.id not in self._whole]
        if light:
            self._whole.update(self.store.get_nodes(light))
        return [n if n.id in self._full else self._whole.get(n.id, n) for n in nodes]

    def _followers(self, ids: list[str]) -> None:
        todo = [i for i in dict.fromkeys(ids) if i not in self._asked]
        self._asked.update(todo)
        if not todo:
            return
        named, followers = self.store.nodes_linked(todo, "prev", self.namespace, KIND, fields=self.fields,
                                                   content=True)
        for i, node in named.items():  # a node read before keeps its object (a candidate may hold it): its text
            if i in self.nodes:  # is kept for ``whole``
                self._whole.setdefault(i, node)
            else:
                self.nodes[i] = node
                self._full.add(i)
        self.add([], {}, followers)
        self._asked.update(named, (n.id for n in followers if prev_of(n) in named))

    def around(self, ids: list[str]) -> list[Node]:
        """These nodes and their neighbours."""
        self._followers(ids)
        self.load([prev_of(self.nodes[i]) or "" for i in ids])
        found = set(ids) | {self.next[i] for i in ids if i in self.next}
        found |= {p for i in ids if (p := prev_of(self.nodes[i])) in self.nodes}
        return [self.nodes[i] for i in found]

    def complete(self, nodes: list[Node]) -> None:
        """Make sure each node's next turn is known (its pair vector is part of the node's dense score)."""
        self._followers([n.id for n in nodes])

    def replies(self, ids: list[str]) -> dict[str, str]:
        """For each of these turns followed by a question (its next turn asks, memory/answers.py ``asks``), the turn
        answering that question: {turn: reply}, read in two batches whatever the number of turns."""
        self._followers(ids)
        asked = {i: q for i in ids if (q := self.next.get(i)) and q in self.nodes}
        if not asked:
            return {}
        whole = {n.id: n for n in self.whole([self.nodes[q] for q in dict.fromkeys(asked.values())])}
        asked = {i: q for i, q in asked.items() if asks(whole[q].content)}
        self._followers(list(asked.values()))
        return {i: r for i, q in asked.items() if (r := self.next.get(q)) and r in self.nodes}

    def within(self, node_id: str, turns: int) -> dict[str, int]:
        """The turns within ``turns`` previous / next links of this one (read as needed), it left out, each with its
        distance in links: as in process (memory/search.py ``turns_around``)."""
        out: dict[str, int] = {}
        at: str | None = node_id
        for distance in range(1, max(turns, 0) + 1):
            before = prev_of(self.nodes[at]) if at in self.nodes else None
            if not before or before not in self.load([before]):
                break
            if before != node_id:
                out[before] = min(out.get(before, distance), distance)
            at = before
        at = node_id
        for distance in range(1, max(turns, 0) + 1):
            self._followers([at])
            at = self.next.get(at)
            if not at or at not in self.nodes:
                break
            if at != node_id:
                out[at] = min(out.get(at, distance), distance)
        return out
