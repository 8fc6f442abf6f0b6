"""Where the seeds of a cited context come from: memories, knowledge docs, decisions and graph nodes the query
names. Each collector returns ``Source`` objects (sources.py says how each one's score is defined)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import access
from ..seams import RetrieverLike
from ..store.base import Store
from ..workspace import Workspace
from .sources import DECISION, DOC_FULL_SCORE, MEMORY, Source, clamp, decision_text, is_pack, node_source


def memory_sources(retriever: RetrieverLike, query: str, limit: int, *, conversation_id: str | None = None,
                   user_id: str | None = None) -> list[Source]:
    """The retriever's own hits (no graph expansion here: expand.py walks from every kind of seed; min_score 0:
    the cited context applies it once, to every kind of seed)."""
    hits = retriever.retrieve(query, max_results=limit, use_graph_expansion=False, min_relevance_score=0.0,
                              conversation_id=conversation_id, user_id=user_id)
    memory = retriever.memory_store
    store = memory.db if memory is not None else None
    nodes = store.get_nodes([h.id for h in hits if h.id and h.source == "memory"]) if store is not None else {}
    out = []
    for hit in hits:
        node = nodes.get(hit.id) if hit.id else None
        if node is not None:
            out.append(node_source(store, node, hit.score, "memory_search", signals=dict(hit.signals)))
        elif hit.id:  # a row of a caller's own vector store: cited by its id, read as its text
            out.append(Source(id=str(hit.id), kind=hit.source, content=hit.content, score=clamp(hit.score),
                              origin="memory_search" if hit.source == "memory" else "vector_search",
                              signals=dict(hit.signals), metadata=dict(hit.metadata)))
    return out


def doc_sources(ws: Workspace, query: str, limit: int, principal: str | None = None) -> list[Source]:
    """The best docs across the packs the principal may read, best first."""
    from ..knowledge.catalog import search_packs
    from ..knowledge.packs import doc_id

    hits = search_packs(ws, query, limit=limit, principal=principal)
    nodes = ws.store.get_nodes([doc_id(h["pack"], h["selector"]) for h in hits])
    out = []
    for hit in hits:
        node = nodes.get(doc_id(hit["pack"], hit["selector"]))
        if node is not None:
            out.append(node_source(ws.store, node, hit["score"] / DOC_FULL_SCORE, "knowledge_search",
                                   signals=dict(hit["signals"])))
    return out


def decision_sources(decisions: Any, query: str, limit: int) -> list[Source]:
    """Decisions by meaning and keywords (their causal neighbours come through expansion, with a path)."""
    out = []
    for d in decisions.query_decisions(query, max_hops=0, limit=limit):
        meta = d.metadata or {}
        text = decision_text(d.category, d.scenario, d.outcome, d.reasoning, d.confidence, d.decision_maker,
                             d.timestamp.isoformat() if hasattr(d.timestamp, "isoformat") else d.timestamp)
        out.append(Source(id=d.decision_id, kind=DECISION, content=text, score=clamp(meta.get("similarity", 0.0)),
                          title=d.scenario, origin="decision_search", node_id=d.decision_id,
                          signals={"similarity": float(meta.get("similarity", 0.0))},
                          metadata={"category": d.category, "outcome": d.outcome}))
    return out


def graph_sources(graph: Any, query: str, limit: int, readable: Any) -> list[Source]:
    """Graph nodes the query names (by name or title, whole words), scored by the cosine of the query and the
    node's text. Memories, decisions and docs are left to their own searches."""
    from ..engine.proximity import mentioned_nodes

    store = graph.store
    sids = [sid for sid in (graph.resolve(n) for n in mentioned_nodes(graph, query)) if sid]
    nodes = store.get_nodes(list(dict.fromkeys(sids)))
    picked = [n for n in nodes.values() if n.kind not in (MEMORY, DECISION) and not is_pack(n.namespace)
              and readable(n)][: limit * 3]
    if not picked:
        return []
    out = [node_source(store, n, 0.0, "graph_match", readable) for n in picked]
    embedder = graph.workspace.embedder
    vectors = embedder.embed([query] + [s.content for s in out])
    sims = np.asarray(vectors[1:]) @ np.asarray(vectors[0])
    for source, sim in zip(out, sims):
        source.score = clamp(sim)
        source.signals = {"cosine": round(float(sim), 4)}
    out.sort(key=lambda s: (-s.score, s.id))
    return out[:limit]


class Readable:
    """Whether the acting principal may read a node (its namespace, and for a doc its selector); answers are
    cached for the call. ``conversation_id`` / ``user_id`` also bound which memories may come in."""

    def __init__(self, ws_of: dict[int, Workspace], principal: str | None, conversation_id: str | None = None,
                 user_id: str | None = None) -> None:
        self.ws_of = ws_of
        self.principal = principal
        self.tags = [t for t in (f"conversation:{conversation_id}" if conversation_id else None,
                                 f"user:{user_id}" if user_id else None) if t]
        self._ns: dict[tuple[int, str], Any] = {}

    def follows(self, store: Any, edge: Any) -> bool:
        """Whether a walk may take ``edge`` of ``store`` (its ends are checked apart, by ``check``): the principal
        may read the edge's namespace, or it is a pack's own edge (access.Sight.follows)."""
        ws = self.ws_of.get(id(store))
        if ws is None:
            return False  # a store we were not given: nothing from it
        return is_pack(edge.namespace) or self._rule(ws, store, edge.namespace) is True

    def for_store(self, store: Any) -> "StoreReadable":
        return StoreReadable(self, store)

    def check(self, store: Any, node: Any) -> bool:
        if node.kind == MEMORY and not is_pack(node.namespace) and not all(t in node.tags for t in self.tags):
            return False
        ws = self.ws_of.get(id(store))
        if ws is None:
            return False  # a store we were not given: nothing from it
        rule = self._rule(ws, store, node.namespace)
        if rule is None or rule is True:
            return True
        if rule is False:
            return False
        return bool(rule(node.key))

    def _rule(self, ws: Workspace, store: Any, namespace: str) -> Any:
        """What the principal reads of ``namespace`` (cached for the call): for a pack None (the whole pack) or a
        predicate over selectors, else True or False."""
        key = (id(store), namespace)
        if key not in self._ns:
            self._ns[key] = (access.doc_filter(ws, self.principal, namespace) if is_pack(namespace)
                             else access.can(ws, self.principal, namespace, "read"))
        return self._ns[key]


class StoreReadable:
    def __init__(self, readable: Readable, store: Store) -> None:
        self.readable = readable
        self.store = store

    def __call__(self, node: Any) -> bool:
        return self.readable.check(self.store, node)
