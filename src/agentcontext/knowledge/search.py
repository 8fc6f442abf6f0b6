"""``search_knowledge``: metadata first (selector, title, tags, summary), then body text and meaning.

Candidates come from the selector index, the FTS5 index and the pack's vector matrix; each is then
scored per signal. Every signal is absolute (the share of the query's words a field holds, the
cosine, the body's BM25 scaled by how much of the query the best body holds), so their weighted sum,
``points``, means the same in every query and every pack, and ``score = SCORE_CALIBRATION(points)`` is
a relevance in [0, 1]: the logistic curve fitted on a labelled set of paraphrased questions about the
docs pack (``benchmarks/knowledge_search.py`` fits it and prints hit@1). A hit's ``signals`` are each
signal's share of its score (they sum to it). A search without query text (filters only) scores 0,
or 1 for a doc ``related_to`` names.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .. import access
from ..embed import embed_missing
from ..engine.fusion import Calibration
from ..engine.live import LiveIndex, NodeVectors
from ..engine.persist import persisted
from ..engine.retrieval_config import above, check_min_score
from ..errors import ValidationError
from ..model import Node
from ..store.base import Capability
from ..text import STOPWORDS
from ..workspace import Workspace
from .graphview import pack_view
from .manifest import check_edge_type, check_pack_name, check_selector
from .packs import doc_id, get_pack

WEIGHTS = {"selector_exact": 10.0, "selector_prefix": 4.0, "selector": 3.0, "title": 3.0, "tags": 2.0,
           "summary": 2.0, "body": 1.0, "meaning": 1.5}
MEANING_FLOOR = 0.25  # cosine below this is noise for MiniLM
# Fitted by benchmarks/knowledge_search.py on benchmarks/data/docs_pack_queries.json (see the module docstring).
SCORE_CALIBRATION = Calibration(scale=2.495, offset=-4.086)  # 0.5 at 1.64 points
MEANING_POOL = 50  # nearest docs by meaning that become candidates
PACK_FILE_KIND = "pack-vectors"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class SearchHit:
    selector: str
    title: str
    kind: str
    summary: str
    tags: list[str]
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    points: float = 0.0  # the weighted sum of the signals, before calibration

    def to_dict(self) -> dict[str, Any]:
        return {"selector": self.selector, "title": self.title, "kind": self.kind, "summary": self.summary,
                "tags": self.tags, "score": round(self.score, 4),
                "signals": {k: round(v, 4) for k, v in self.signals.items()}}


@functools.lru_cache(maxsize=65536)
def _terms(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS)


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _overlap(query: frozenset[str], text: str) -> float:
    if not query:
        return 0.0
    return len(query & _terms(text)) / len(query)


def pack_vectors(ws: Workspace, pack: str) -> LiveIndex:
    """The live index of the pack's doc vectors: held by the workspace, mapped by a new process from its index
    file beside the store (``engine/persist.py``), caught up from the change log."""
    name = f"pack:{pack}:vectors"
    feed = NodeVectors(ws.model_name, namespace=pack)
    return ws.live(name, persisted(ws.index_files, PACK_FILE_KIND, name, ws.model_name, feed))


def search_knowledge(ws: Workspace, pack: str, query: str = "", tags: Sequence[str] | None = None,
                     kind: str | None = None, selector_prefix: str | None = None, related_to: str | None = None,
                     edge_type: str | None = None, limit: int = 10, principal: str | None = None,
                     use_meaning: bool = True, min_score: float = 0.0) -> list[SearchHit]:
    """Docs of ``pack`` best first, each scored in [0, 1] (absolute, see the module docstring; ``min_score``
    drops weaker hits). ``tags`` is all-of; ``related_to`` keeps docs joined to that selector by an edge in
    either direction (of ``edge_type`` if given)."""
    check_min_score(min_score)
    check_pack_name(pack)
    if not isinstance(query, str):
        raise ValidationError("query must be text")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ValidationError(f"limit must be an integer from 1 to 1000, got {limit!r}")
    if edge_type is not None:
        edge_type = check_edge_type(edge_type, "edge_type")
    if edge_type is not None and related_to is None:
        raise ValidationError("edge_type filters related_to; pass related_to=<selector> too")
    access.require_visible(ws, principal, pack, "search", pack)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    store = ws.store
    allowed: set[str] | None = None
    if tags or kind or selector_prefix:
        allowed = {n.id for n in store.find_nodes(namespace=pack, kind=kind, key_prefix=selector_prefix,
                                                   tags=list(tags or []), with_content=False, order="none")}
    related_signal: dict[str, float] = {}
    if related_to is not None:
        check_selector(related_to, "related_to")
        if readable is not None and not readable(related_to):
            raise access.deny(ws, principal, "search", f"{pack}/{related_to}", "read", pack, related_to)
        view = pack_view(ws, pack)
        anchor = doc_id(pack, related_to)
        linked = {dst for t, dst in view.outbound.get(anchor, []) if edge_type in (None, t)}
        linked |= {src for t, src in view.inbound.get(anchor, []) if edge_type in (None, t)}
        linked &= view.ids
        related_signal = {i: 1.0 for i in linked}
        allowed = linked if allowed is None else allowed & linked
    q = query.strip()
    candidates: dict[str, dict[str, float]] = {}
    if q:
        _selector_candidates(ws, pack, q, candidates)
        # ranked by the statistics of what the principal reads: the pack, or its readable docs alone
        within = None if readable is None else [i for i in pack_view(ws, pack).ids if readable(i.split("/", 1)[1])]
        for nid, score in store.text_search(q, namespace=pack, limit=100, within=within):
            candidates.setdefault(nid, {})["_bm25"] = score
        if use_meaning:
            _meaning_candidates(ws, pack, q, candidates, allowed)
    else:
        ids = allowed if allowed is not None else set(pack_view(ws, pack).ids)
        candidates = {i: {} for i in ids}
    if allowed is not None:
        candidates = {i: s for i, s in candidates.items() if i in allowed}
    if readable is not None:  # never reveal docs the principal may not read
        candidates = {i: s for i, s in candidates.items() if readable(i.split("/", 1)[1])}
    nodes = store.get_nodes(list(candidates))
    qterms = _terms(q)
    body_scale = _body_scale(candidates, nodes, qterms)
    hits = []
    for nid, raw in candidates.items():
        node = nodes.get(nid)
        if node is None:
            continue
        signals = _score(node, q, qterms, raw, body_scale)
        if q and not signals:
            continue
        if nid in related_signal:
            signals["related"] = related_signal[nid]
        points = sum(signals.values())
        score = float(SCORE_CALIBRATION(points)) if q else min(1.0, points)
        share = score / points if points > 0 else 0.0
        hits.append(SearchHit(node.key, node.title, node.kind, node.summary, node.tags, score,
                              {k: v * share for k, v in signals.items()}, points))
    hits = above(hits, min_score)  # the one min_score filter (engine/retrieval_config.py)
    hits.sort(key=lambda h: (-h.points, h.selector))
    return hits[:limit]


def _body_scale(candidates: dict[str, dict[str, float]], nodes: dict[str, Node], qterms: frozenset[str]) -> float:
    """What turns a body BM25 score into an absolute one: the share of the query's words the best body holds,
    over that body's BM25 (a body then scores its BM25 relative to the best, times the best's coverage)."""
    scored = [(s["_bm25"], i) for i, s in candidates.items() if "_bm25" in s and i in nodes]
    if not scored:
        return 0.0
    top, best = max(scored)
    return _overlap(qterms, nodes[best].content[:20000]) / top if top > 0 else 0.0


def _selector_candidates(ws: Workspace, pack: str, q: str, out: dict[str, dict[str, float]]) -> None:
    token = q.strip().lower()
    if not re.fullmatch(r"[a-z0-9_.]+", token):
        return
    for node in ws.store.find_nodes(namespace=pack, key_prefix=token, with_content=False, order="key", limit=200):
        out.setdefault(node.id, {})


def _meaning_candidates(ws: Workspace, pack: str, q: str, out: dict[str, dict[str, float]],
                        allowed: set[str] | None) -> None:
    if ws.cached(f"packmissing:{pack}", lambda: bool(ws.store.missing_vectors(ws.model_name, pack))):
        embed_missing(ws.store, ws.embedder, pack)  # deferred embeddings: computed on the first search needing them
    qvec = ws.embed_query(q)  # queries are not stored: nothing of them lingers in the store
    if Capability.VECTOR_SEARCH in ws.store.capabilities:  # the server ranks the pack's vectors
        nearest = ws.store.nearest(qvec, ws.model_name, MEANING_POOL, namespace=pack)
    else:
        index = pack_vectors(ws, pack)
        nearest = index.search(qvec, MEANING_POOL) if index.live_count else []
    for nid, cos in nearest:
        if allowed is not None and nid not in allowed:
            continue
        if cos >= MEANING_FLOOR:
            out.setdefault(nid, {})["_cos"] = cos


def _score(node: Node, q: str, qterms: frozenset[str], raw: dict[str, float], body_scale: float) -> dict[str, float]:
    signals: dict[str, float] = {}
    if not q:
        return signals
    low = q.lower()
    key = node.key.lower()
    if low == key:
        signals["selector_exact"] = WEIGHTS["selector_exact"]
    elif key.startswith(low) and ("." in low or low.isidentifier()):
        signals["selector_prefix"] = WEIGHTS["selector_prefix"]
    else:
        sel = _overlap(qterms, key.replace(".", " ").replace("_", " "))
        if sel:
            signals["selector"] = WEIGHTS["selector"] * sel
    for name, text in (("title", node.title), ("summary", node.summary), ("tags", " ".join(node.tags))):
        value = _overlap(qterms, text.replace(":", " "))
        if value:
            signals[name] = WEIGHTS[name] * value
    if "_bm25" in raw and _overlap(qterms, node.content[:20000]):
        signals["body"] = WEIGHTS["body"] * min(1.0, raw["_bm25"] * body_scale)
    if "_cos" in raw:
        signals["meaning"] = WEIGHTS["meaning"] * raw["_cos"]
    return signals
