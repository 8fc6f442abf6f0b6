"""Graph proximity: how near a result sits, in a graph, to what the query names.

The query's anchors are the graph nodes it names (relevance 1) and its best BM25 matches in the
graph's text index (relevance: the share of the query's words the node's name and text hold, so an
unrelated query's best match is a weak anchor, not a perfect one). A result is placed in the graph by its own id
(memories and decisions can be nodes) and by the nodes its text names; its proximity is
``max relevance / (1 + hops)`` over anchors and placements, within ``hops`` edges in either
direction (0 beyond). Blending gives ``combined_score = (1 - w) * semantic_score + w * proximity_score``.

Plain functions over a graph passed in: anything shaped like ``ProximityGraph`` (a ``ContextGraph`` is).
The names the nodes go by are ``engine/name_index``'s per-namespace indexes, kept by the graph's workspace: they
follow the change log and persist beside the store, so a new process maps them instead of reading every node.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar

from ..errors import ValidationError
from ..store.base import Store
from ..text import query_terms, stem
from .fusion import blend
from .name_index import Holder, NodeNames, node_names
from .retrieved import RetrievedContext

T = TypeVar("T")

_WORD = re.compile(r"\w+")


class ProximityGraph(Protocol):
    """What proximity ranking reads of a graph."""

    scope: str | Sequence[str] | None
    workspace: Holder

    @property
    def store(self) -> Store: ...

    def cached(self, what: str, build: Callable[[], T]) -> T: ...

    def user_id(self, store_id: str) -> str: ...

    def resolve(self, node_id: str) -> str | None: ...

    def query(self, query: str, skip: int = 0, limit: int | None = 10) -> list[dict[str, Any]]: ...

    def hop_distances(self, node_id: str, max_hops: int | None = None, direction: str = "out",
                      as_of: Any = None) -> dict[str, int]: ...


def check_weight(proximity_weight: float) -> float:
    w = float(proximity_weight)
    if not 0.0 <= w <= 1.0:
        raise ValidationError(f"proximity_weight must be in [0, 1], got {w}", proximity_weight=w)
    return w


class Names:
    """The names of the nodes in a graph's scope -> the graph's ids of the nodes so named."""

    def __init__(self, parts: Sequence[NodeNames], user_id: Callable[[str], str]) -> None:
        self.parts, self.user_id = parts, user_id

    def get(self, name: str, default: Sequence[str] = ()) -> list[str]:
        found = [self.user_id(i) for part in self.parts for i in part.get(name)]
        return found or list(default)


def name_index(graph: ProximityGraph) -> Names:
    """Lower-cased node names (key and title, as words) -> node ids, up to date with the store (the names of each
    namespace in the graph's scope, or of every namespace, from ``engine/name_index``)."""
    scope = graph.scope
    namespaces: Sequence[str | None] = [scope] if scope is None or isinstance(scope, str) else list(scope)
    return Names([node_names(graph.workspace, ns) for ns in namespaces], graph.user_id)


def mentioned_nodes(graph: ProximityGraph, text: str, max_words: int = 4) -> list[str]:
    """Graph nodes whose name appears in ``text`` as whole words (n-grams up to ``max_words``)."""
    index = name_index(graph)
    words = _WORD.findall(text.lower())
    found: dict[str, None] = {}
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            for nid in index.get(" ".join(words[i:i + n]), ()):
                found[nid] = None
    return list(found)


def term_share(query: str, text: str) -> float:
    """The share of the query's words (stopwords aside, stemmed) that ``text`` holds: absolute, in [0, 1]."""
    terms = {stem(t) for t in query_terms(query)}
    if not terms:
        return 0.0
    return len(terms & {stem(w) for w in _WORD.findall(text.lower())}) / len(terms)


def query_anchors(graph: ProximityGraph, query: str, limit: int = 5) -> dict[str, float]:
    """The query's anchors: nodes it names (relevance 1.0) and its best text matches (relevance ``term_share``)."""
    if not query.strip():
        return {}
    anchors = {}
    for h in graph.query(query, limit=limit):
        node = h.get("node") or {}
        text = " ".join([str(h["id"]), str(h.get("content") or ""), *map(str, node.get("tags") or ())])
        anchors[h["id"]] = term_share(query, text.replace("_", " "))
    anchors.update({nid: 1.0 for nid in mentioned_nodes(graph, query)})
    return anchors


def proximity_scores(graph: ProximityGraph, query: str, node_ids: Iterable[str], hops: int = 2,
                     anchors: dict[str, float] | None = None,
                     texts: dict[str, str] | None = None) -> dict[str, float]:
    """Graph proximity (0..1) of each item to the query's anchors.

    An item is placed in the graph by its own id (when it is a node) and by the nodes its text
    (``texts[id]``) names; it scores ``max relevance / (1 + hops)`` over those placements and anchors."""
    wanted = list(dict.fromkeys(node_ids))
    scores = {nid: 0.0 for nid in wanted}
    if not wanted:
        return scores
    places = {nid: ([nid] if graph.resolve(nid) is not None else [])
              + mentioned_nodes(graph, (texts or {}).get(nid, "")) for nid in wanted}
    for anchor, relevance in (anchors if anchors is not None else query_anchors(graph, query)).items():
        if graph.resolve(anchor) is None:
            continue
        distances = graph.hop_distances(anchor, max_hops=hops, direction="both")
        for nid, spots in places.items():
            for spot in spots:
                h = distances.get(spot)
                if h is not None:
                    scores[nid] = max(scores[nid], relevance / (1.0 + h))
    return scores


def blend_proximity(graph: ProximityGraph, results: Sequence[dict[str, Any]], query: str, proximity_weight: float,
                    hops: int = 2, id_key: str = "id", score_key: str = "score") -> list[dict[str, Any]]:
    """Add ``semantic_score``, ``proximity_score`` and ``combined_score`` to each result and re-rank by the last.

    ``score`` becomes the combined score. With weight 0 the order is the semantic order."""
    w = check_weight(proximity_weight)
    texts = {str(r[id_key]): str(r.get("content", "")) for r in results}
    prox = proximity_scores(graph, query, list(texts), hops, texts=texts) if w > 0 else {}
    out = []
    for r in results:
        sem = float(r.get("semantic_score", r[score_key]))
        p = prox.get(str(r[id_key]), 0.0)
        combined = blend(sem, p, w)
        out.append({**r, "semantic_score": sem, "proximity_score": p, "combined_score": combined,
                    score_key: combined})
    out.sort(key=lambda r: -r["combined_score"])
    return out


def blend_results(graph: ProximityGraph, results: Sequence[RetrievedContext], query: str, proximity_weight: float,
                  hops: int = 2) -> list[RetrievedContext]:
    """``blend_proximity`` over ``RetrievedContext`` (engine/retrieved.py), in place: ``semantic_score``,
    ``proximity_score`` and ``combined_score`` go to each result's ``extra`` (its dict's keys), ``score`` becomes
    the combined score, and the results come re-ranked by it."""
    w = check_weight(proximity_weight)
    texts = {str(r.id): str(r.content or "") for r in results}
    prox = proximity_scores(graph, query, list(texts), hops, texts=texts) if w > 0 else {}
    for r in results:
        sem = float(r.extra.get("semantic_score", r.score))
        p = prox.get(str(r.id), 0.0)
        r.score = blend(sem, p, w)
        r.extra.update(semantic_score=sem, proximity_score=p, combined_score=r.score)
    return sorted(results, key=lambda r: -r.score)


def store_proximity(store: Store, anchors: dict[str, float], targets: Iterable[str], hops: int = 2,
                    visible: Callable[[list[str]], set[str]] | None = None,
                    follows: Callable[[str], bool] | None = None) -> dict[str, float]:
    """``proximity_scores`` over store ids, walking the store's active edges (either direction) breadth-first
    from each anchor: a target ``h`` hops from an anchor of relevance ``r`` scores ``r / (1 + h)`` (best over
    anchors), 0 beyond ``hops``. For callers bound to a store rather than to a ``ContextGraph``. ``visible``
    (given the ids a step reaches, returns those the caller may read) keeps the walk out of records the
    caller may not see, so a score never reflects a path through them; ``follows`` (given an edge's namespace,
    whether the caller may take it) keeps it off edges of namespaces the caller may not read."""
    wanted = set(targets)
    scores = {t: 0.0 for t in wanted}
    for anchor, relevance in sorted(anchors.items(), key=lambda a: -a[1]):
        if relevance <= 0:
            continue
        seen = {anchor}
        frontier = [anchor]
        for h in range(0, max(hops, 0) + 1):
            for node in frontier:
                if node in wanted:
                    scores[node] = max(scores[node], relevance / (1.0 + h))
            if h == hops or not frontier:
                break
            nxt: list[str] = []
            for side in ("src", "dst"):
                for src, dst, _type, _weight, namespace, *_ in store.edges_touching(frontier, side=side):
                    if follows is not None and not follows(namespace):
                        continue
                    other = dst if side == "src" else src
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            if visible is not None and nxt:
                allowed = visible(nxt)
                nxt = [n for n in nxt if n in allowed]
            frontier = nxt
    return scores
