"""Precedent search: each signal a function of the query and the candidates, fused by ``engine/fusion``.

``find_precedents`` (``DecisionRecorder.find_precedents`` delegates here) takes the candidates from the decision
index (``index.py``), then asks each signal for its scores, every one in [0, 1]:

- ``semantic``: the cosine of the scenario and each decision's embedding, calibrated by ``fusion.RELEVANCE``;
- ``structural``: the Jaccard overlap of each decision's linked entities and policies with the query's
  (``links``), the cosine of its Node2Vec vector with their mean (``node2vec``), or the mean of both (``blend``);
- ``proximity``: graph proximity to the query's anchors (``engine/proximity.store_proximity``).

``fusion.blend`` mixes them: ``hybrid = RELEVANCE(blend(cosine, structural, 0.3))`` when there is a structural
score, then ``combined = blend(hybrid, proximity, proximity_weight)``. ``keyword_precedents`` (words alone) and
``query_decisions`` (meaning and keywords, then causal neighbours) are the other two searches over decisions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..engine import proximity
from ..engine.fusion import RELEVANCE, blend
from ..errors import ValidationError
from ..model import MEMORY_KIND, Edge, Node, to_utc_iso
from ..seams import GraphHandle
from ..store.base import Store
from ..workspace import Workspace
from .common import CAUSAL_TYPES, DECISION, ENTITY, POLICY, epoch, policy_node_id, resolve_entities
from .index import index_for
from .models import Decision



class RecorderLike(Protocol):
    """What the searches use of the ``DecisionRecorder`` (recorder.py) that delegates to them."""

    graph: Any
    namespace: str
    _handle: GraphHandle | None

    @property
    def store(self) -> Store: ...

    @property
    def ws(self) -> Workspace: ...

    def check(self, level: str, action: str, target: str = "") -> None: ...

    def sees(self) -> Callable[[Node], bool] | None: ...

    def seen(self, nodes: dict[str, Node]) -> dict[str, Node]: ...

    def follows(self) -> Callable[[str], bool] | None: ...

    def links_of(self, ids: Sequence[str]) -> dict[str, set[str]]: ...

    def structural_links(self, limit: int | None = None, **where: Any) -> list[Edge]: ...

    def get_decisions(self, ids: Sequence[str]) -> dict[str, Decision]: ...

    def with_embeddings(self, decisions: list[Decision], node2vec: bool = False) -> list[Decision]: ...

    def _embeddings(self) -> Any: ...

KEYWORD_WEIGHT = 0.3  # query_decisions: what full keyword coverage adds to the cosine before calibration
ANCHOR_MIN = 0.5  # a graph node the precedent query matches this well (node_search score) anchors proximity
STRUCTURAL_WEIGHT = 0.3  # how much shared entities and policies weigh beside meaning (use_hybrid_search)
STRUCTURAL_KINDS = ("links", "node2vec", "blend")


# --- what the query is about ----------------------------------------------------------------------
def query_links(rec: RecorderLike, scenario: str, entities: Sequence[str] | None,
                policies: Sequence[str] | None) -> set[str]:
    """The store ids of the entities and policies a precedent query is about: those given, else the graph
    nodes the scenario names (whole words, as ``engine/proximity.mentioned_nodes`` finds them)."""
    links = set(resolve_entities(rec.graph, rec.store, list(entities or ()), rec.sees())[0].values())
    links |= {policy_node_id(p) for p in (policies or ())}
    if links or entities or policies or rec._handle is None:
        return links
    graph = rec._handle
    named = [graph.resolve(n) for n in proximity.mentioned_nodes(graph, scenario)]
    found = rec.seen(rec.store.get_nodes([n for n in named if n]))
    return {i for i, node in found.items() if node.kind not in (DECISION, MEMORY_KIND)}  # any node it names


def visible_ids(rec: RecorderLike) -> Callable[[list[str]], set[str]] | None:
    """For walks: which of some store ids the principal may read (None: all of them)."""
    sees = rec.sees()
    if sees is None:
        return None
    return lambda ids: {i for i, node in rec.store.get_nodes(ids).items() if sees(node)}


def anchors(rec: RecorderLike, scenario: str, links: set[str]) -> dict[str, float]:
    """Where graph proximity is measured from: the query's entities and policies (relevance 1) and, when it
    names none, the entities and policies its text matches best (relevance: the share of its words they hold)."""
    if links:
        return {i: 1.0 for i in links}
    hits = rec.store.text_search(scenario, namespace=rec.namespace, kind=[ENTITY, POLICY], limit=5)
    nodes = rec.seen(rec.store.get_nodes([i for i, _ in hits]))
    out = {i: proximity.term_share(scenario, " ".join((n.key, n.title, n.summary, n.content)).replace("_", " "))
           for i, n in nodes.items()}
    if rec._handle is not None:  # a ContextGraph: its nodes by meaning, words and name
        for hit in rec._handle.search_nodes(scenario, limit=5):
            if hit["score"] >= ANCHOR_MIN and hit["node"].get("type") not in (DECISION, MEMORY_KIND):
                out[hit["store_id"]] = max(out.get(hit["store_id"], 0.0), float(hit["score"]))
    return {i: r for i, r in out.items() if r > 0}


# --- the signals ------------------------------------------------------------------------------------
@dataclass
class Structure:
    """The structural signal: a score per candidate and the links each shares with the query."""

    scores: dict[str, float] = field(default_factory=dict)
    shared: dict[str, list[str]] = field(default_factory=dict)


def semantic(cosine: dict[str, float]) -> dict[str, float]:
    """Each candidate's cosine through the relevance curve memory scores use."""
    return {i: float(RELEVANCE(c)) for i, c in cosine.items()}


def structural(rec: RecorderLike, ids: list[str], links: set[str], kind: str, embeddings: object) -> Structure:
    """The Jaccard overlap of each decision's links with the query's, or (``node2vec``, ``blend``) the cosine of
    its Node2Vec vector with their mean vector (``blend``: the mean of both)."""
    out = Structure()
    for did, mine in rec.links_of(ids).items():
        union = mine | links
        out.scores[did] = len(mine & links) / len(union) if union else 0.0
        out.shared[did] = sorted(mine & links)
    if embeddings is not None:  # Node2Vec: the cosine with the mean vector of the query's links
        vecs = embeddings.by_store_id([*ids, *sorted(links)])  # type: ignore[attr-defined]
        found = [vecs[a] for a in sorted(links) if a in vecs]
        anchor = np.mean(found, axis=0) if found else None
        norm = float(np.linalg.norm(anchor)) if anchor is not None else 0.0
        for did in ids:
            vec = vecs.get(did)
            cos = max(0.0, float(vec @ anchor) / norm) if vec is not None and norm > 0 else 0.0
            out.scores[did] = cos if kind == "node2vec" else (out.scores.get(did, 0.0) + cos) / 2
    return out


def nearness(rec: RecorderLike, near: dict[str, float], ids: list[str], max_hops: int) -> dict[str, float]:
    """Graph proximity of each candidate to the anchors, over what the principal reads."""
    return proximity.store_proximity(rec.store, near, ids, max_hops, visible_ids(rec), rec.follows()) if near else {}


# --- the searches -----------------------------------------------------------------------------------
def find_precedents(rec: RecorderLike, scenario: str, category: str | None = None, limit: int = 5,
                    use_hybrid_search: bool = True, max_hops: int = 2, as_of: str | datetime | None = None,
                    entities: Sequence[str] | None = None, policies: Sequence[str] | None = None,
                    proximity_weight: float | None = None, min_similarity: float = 0.0,
                    exclude: Sequence[str] | None = None, structural_kind: str = "links",
                    node2vec: bool | None = None) -> list[Decision]:
    """See ``DecisionRecorder.find_precedents``."""
    rec.check("read", "decision.precedents")
    if not isinstance(scenario, str) or not scenario.strip():
        raise ValidationError("find_precedents needs a non-empty scenario text")
    if structural_kind not in STRUCTURAL_KINDS:
        raise ValidationError(f"structural must be links, node2vec or blend (got {structural_kind!r})",
                              structural=structural_kind)
    embeddings = rec._embeddings() if structural_kind != "links" else None
    if limit <= 0:
        return []
    w = proximity.check_weight(0.0 if proximity_weight is None else proximity_weight)
    index = index_for(rec.ws, rec.namespace)
    at = epoch(as_of, 0.0) if as_of is not None else None
    skip = set(exclude or ())
    pool = max(limit * 4, 20) + len(skip)
    hits, scores_of = index.top(rec.ws.embed_query(scenario), pool, category, at)
    cosine = {i: s for i, s in hits if i not in skip}
    links = query_links(rec, scenario, entities, policies) if use_hybrid_search or w > 0 else set()
    if use_hybrid_search and links and max_hops >= 2:  # decisions sharing the query's links, near in meaning or not
        sharing = [e.src for e in rec.structural_links(dst=sorted(links), limit=pool * 10)
                   if e.src not in cosine and e.src not in skip]
        cosine.update(scores_of(list(dict.fromkeys(sharing))))
    sem = semantic(cosine)
    struct = structural(rec, list(sem), links, structural_kind, embeddings) if use_hybrid_search and links and sem \
        else Structure()
    sw = STRUCTURAL_WEIGHT if struct.scores else 0.0  # mixed with the cosine, then calibrated like it
    hybrid = {i: float(RELEVANCE(blend(cosine[i], struct.scores.get(i, 0.0), sw))) if sw else sem[i] for i in sem}
    near = anchors(rec, scenario, links) if w > 0 and sem else {}
    if not near:  # nothing in the graph to be near: proximity cannot rank, so it does not scale scores down
        w = 0.0
    prox = nearness(rec, near, list(sem), max_hops)
    combined = {i: blend(hybrid[i], prox.get(i, 0.0), w) for i in sem}
    scored = [i for i in sorted(combined, key=lambda i: (-combined[i], i)) if combined[i] >= min_similarity]
    found = rec.get_decisions(scored[:limit])
    out: list[Decision] = []
    for rank, did in enumerate(scored[:limit], 1):
        d = found.get(did)
        if d is None:  # retracted between the index sync and the read
            continue
        shared = struct.shared.get(did, [])
        score = round(combined[did], 6)
        d.metadata = {**d.metadata, "similarity": score, "combined_score": score,
                      "semantic_score": round(sem[did], 6), "cosine": round(cosine[did], 6),
                      "structural_score": round(struct.scores.get(did, 0.0), 6), "hybrid_score": round(hybrid[did], 6),
                      "proximity_score": round(prox.get(did, 0.0), 6), "shared_links": shared,
                      "relationship_type": "same_policy" if any(x.startswith("policy:") for x in shared)
                      else "similar_scenario",
                      "proximity_weight": w, "proximity_anchors": sorted(near), "rank": rank}
        out.append(d)
    return rec.with_embeddings(out, structural_kind != "links" if node2vec is None else node2vec)


def keyword_precedents(rec: RecorderLike, scenario: str, category: str | None = None, limit: int = 5,
                       as_of: str | datetime | None = None) -> list[Decision]:
    """Precedents by words alone (BM25 over scenario, outcome and reasoning), no embeddings."""
    rec.check("read", "decision.precedents")
    hits = rec.store.text_search(scenario, namespace=rec.namespace, kind=DECISION, limit=max(limit * 10, 50))
    found = rec.get_decisions([i for i, _ in hits])
    at = to_utc_iso(as_of)
    out: list[Decision] = []
    for did, score in hits:
        d = found.get(did)
        if d is None or (category and d.category != category):
            continue
        if at and not ((d.valid_from or "") <= at and (d.valid_until is None or d.valid_until > at)):
            continue
        d.metadata = {**d.metadata, "similarity": round(score, 6), "keyword_score": round(score, 6)}
        out.append(d)
        if len(out) >= limit:
            break
    return out


def query_decisions(rec: RecorderLike, query: str, max_hops: int = 2, use_hybrid_search: bool = True,
                    limit: int = 10, category: str | None = None) -> list[Decision]:
    """See ``DecisionRecorder.query_decisions``."""
    rec.check("read", "decision.query")
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query_decisions needs a non-empty query")
    index = index_for(rec.ws, rec.namespace)
    hits, scores_of = index.top(rec.ws.embed_query(query), max(limit * 2, 20), category)
    fused: dict[str, float] = dict(hits)
    if use_hybrid_search:
        text = rec.store.text_search(query, namespace=rec.namespace, kind=DECISION, limit=max(limit * 2, 20))
        if text:
            best = rec.store.get_node(text[0][0])
            share = proximity.term_share(query, " ".join((best.title, best.summary, best.content))) if best else 0.0
            top = max(s for _, s in text) or 1.0
            cos = scores_of([i for i, _ in text if i not in fused])
            for i, s in text:
                fused[i] = fused.get(i, cos.get(i, 0.0)) + KEYWORD_WEIGHT * share * s / top
    scores: dict[str, float] = {i: float(RELEVANCE(v)) for i, v in fused.items()}
    ranked = sorted(scores, key=lambda i: (-scores[i], i))[:limit]
    hop_of = _causal_neighbours(rec, ranked, scores, max_hops)
    found = rec.get_decisions(list(hop_of))
    if category:
        found = {i: d for i, d in found.items() if d.category == category}
    order = sorted(found, key=lambda i: (-scores.get(i, 0.0), hop_of[i], i))[:limit]
    out = []
    for did in order:
        d = found[did]
        d.metadata = {**d.metadata, "similarity": round(scores.get(did, 0.0), 6), "hops": hop_of[did]}
        out.append(d)
    return out


def _causal_neighbours(rec: RecorderLike, ranked: list[str], scores: dict[str, float],
                       max_hops: int) -> dict[str, int]:
    """The hop each decision was reached at from ``ranked`` over causal links (``scores`` gains the neighbours:
    ``0.5 ** h`` of the score that reached them), never through what the principal does not see."""
    hop_of = {i: 0 for i in ranked}
    sees, follows = rec.sees(), rec.follows()
    if max_hops <= 0 or not ranked:
        return hop_of
    frontier = list(ranked)
    for hop in range(1, max_hops + 1):
        nxt: list[str] = []
        edges = [*rec.store.edges(src=frontier, type=list(CAUSAL_TYPES)),
                 *rec.store.edges(dst=frontier, type=list(CAUSAL_TYPES))]
        shown = None if sees is None else set(rec.seen(rec.store.get_nodes({x for e in edges for x in (e.src, e.dst)})))
        for e in edges:
            if shown is not None and not (e.src in shown and e.dst in shown):
                continue  # never through a decision the principal does not see...
            if follows is not None and not follows(e.namespace):
                continue  # ...nor over a link another namespace holds (that namespace's record)
            for other in (e.src, e.dst):
                if other not in hop_of:
                    hop_of[other] = hop
                    scores[other] = max(scores.get(other, 0.0),
                                        max(scores.get(e.src, 0.0), scores.get(e.dst, 0.0)) * 0.5 ** hop)
                    nxt.append(other)
        frontier = nxt
        if not frontier:
            break
    return hop_of
