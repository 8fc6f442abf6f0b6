"""``ContextRetriever``: hybrid retrieval over memory, a vector store and the graph (seed 003).

Candidates come from the memory store (dense + conversation context + BM25, see
``memory/search.py``) and/or any vector store exposing ``search(query=, limit=)``. An optional
truth filter removes unsupported candidates *before* ranking. Graph expansion then walks up to
``max_expansion_hops`` edges (either direction) from the surviving candidates in the backing
stores; a node reached at hop ``h`` from a seed of score ``s`` over edges of weight ``w`` gets a
graph score ``s * w * 0.5 ** (h - 1)``. The final score is ``(1 - hybrid_alpha) * retrieval +
hybrid_alpha * graph``, where a candidate's graph score is the larger of its own retrieval score
and what the graph gives it (so with ``hybrid_alpha`` = 0 the graph changes nothing and with 1 the
graph alone ranks what it reaches). Every result names the signals that produced it, with scores.

Acting as a principal (given, else the memory store's), it returns only records the principal sees and
expands only through them (access.py); the memory store checks its own reads.

What it reads is one ``RetrievalConfig`` (engine/retrieval_config.py: sources, hybrid_alpha, proximity_weight,
expansion, min_score, truth filter): the facade's, else one built from the constructor's arguments; a call's
keywords override it for that call. Results are ``RetrievedContext`` from candidate to output (engine/retrieved.py;
``retrieve_blended`` makes dicts at the end), each with ``config``, the echo of the configuration that ran, beside
its ``signals``; ``min_score`` is applied once, to the final scores (``RetrievalConfig.keep``).
"""
from __future__ import annotations

import copy
from typing import Any, Iterable

from . import access, retrieval_modes
from .engine import proximity
from .engine.fusion import RELEVANCE, blend
from .engine.retrieval_config import RetrievalConfig
from .engine.retrieved import RetrievedContext, as_dicts
from .errors import ValidationError, refuse_unknown
from .graph import ContextGraph
from .graph.node_search import search_nodes
from .graph.protocol import GraphLike
from .model import MEMORY_KIND
from .seams import Configured, MemoryLike, RecallsResults, Scope, SearchableVectors, conforms
from .store import Store
from .vector_store import VectorStore

MODES = ("local", "global", "drift", "hybrid")
HOP_DECAY = 0.5


__all__ = ["ContextRetriever", "RetrievedContext", "RetrievalConfig", "as_dicts"]


def _stores_of(memory: MemoryLike | None, graph: GraphLike | None, vectors: Any) -> list[Store]:
    """The stores of record the sources live in, once each (a caller's own vector backend has none)."""
    stores: list[Store] = []
    for store in (memory.db if memory is not None else None, graph.store if graph is not None else None,
                  vectors.workspace.store if isinstance(vectors, VectorStore) else None):
        if store is not None and all(store is not s for s in stores):
            stores.append(store)
    return stores


# The keywords each retrieve takes; any other is a ValidationError (metadata filters are spelled filters={...}).
RETRIEVE_KEYWORDS = ("query", "max_results", "use_graph_expansion", "min_relevance_score", "conversation_id",
                     "user_id", "filters", "truth_filter", "mode", "max_hops", "type", "llm_provider")
PASSED_ON = {"conversation_id", "user_id", "filters", "mode", "max_hops", "type"}  # AgentContext.retrieve -> retrieve
BLENDED_KEYWORDS = ("query", "max_results", "min_score", "use_graph", "proximity_weight", *PASSED_ON)
FILTER_HINT = "filter on metadata with filters={key: value}"


class ContextRetriever:
    def __init__(self, memory_store: MemoryLike | None = None, knowledge_graph: GraphLike | None = None,
                 vector_store: VectorStore | SearchableVectors | None = None,
                 use_graph_expansion: bool = True, max_expansion_hops: int = 2, hybrid_alpha: float = 0.5,
                 proximity_weight: float = 0.0, principal: str | None = None, scope: Scope | None = None,
                 config: RetrievalConfig | None = None) -> None:
        """``config`` (the facade's) says everything retrieval reads; without one it is built from the keywords."""
        if config is None:
            config = RetrievalConfig(graph_expansion=bool(use_graph_expansion), hybrid_alpha=hybrid_alpha,
                                     max_expansion_hops=max_expansion_hops, proximity_weight=proximity_weight)
        self.config = config
        self.memory_store = memory_store
        self.knowledge_graph = knowledge_graph
        self.vector_store = vector_store
        self._principal = scope.principal if scope is not None else principal  # None: the memory store's
        self.result_type = RetrievedContext
        self.llm_provider: Any = None  # writes community summaries (global, drift, hybrid); AgentContext sets it

    # The configuration's fields under the names of seed 003's constructor (read and set).
    @property
    def use_graph_expansion(self) -> bool:
        return self.config.graph_expansion

    @use_graph_expansion.setter
    def use_graph_expansion(self, on: bool) -> None:
        self.config = self.config.override(graph_expansion=bool(on))

    @property
    def max_expansion_hops(self) -> int:
        return self.config.max_expansion_hops

    @max_expansion_hops.setter
    def max_expansion_hops(self, hops: int) -> None:
        self.config = self.config.override(max_expansion_hops=hops)

    @property
    def hybrid_alpha(self) -> float:
        return self.config.hybrid_alpha

    @hybrid_alpha.setter
    def hybrid_alpha(self, alpha: float) -> None:
        self.config = self.config.override(hybrid_alpha=alpha)

    @property
    def proximity_weight(self) -> float:
        return self.config.proximity_weight

    @proximity_weight.setter
    def proximity_weight(self, weight: float) -> None:
        self.config = self.config.override(proximity_weight=weight)

    @property
    def principal(self) -> str | None:
        """Who retrieves: the one given, else the memory store's."""
        if self._principal is not None or self.memory_store is None:
            return self._principal
        return self.memory_store.principal

    def _sight(self, store: Any) -> access.Sight | None:
        """What the principal sees in ``store`` (None: everything there, or a store no principal is known for)."""
        ws = self.memory_store.workspace if self.memory_store is not None else None
        if ws is None or ws.store is not store:
            ws = self.knowledge_graph.workspace if self.knowledge_graph is not None else None
        if ws is None or ws.store is not store:
            return None  # a store no principal is known for
        return access.sight(ws, self.principal)

    def _shown(self, store: Any, ids: Iterable[str]) -> set[str] | None:
        """Of ``ids``, those the principal sees in ``store`` (None: it sees everything there)."""
        sight = self._sight(store)
        return None if sight is None else sight.visible(ids)

    # --- candidates ------------------------------------------------------------------------
    def _memory_candidates(self, query: str, pool: int, **filters: Any) -> list[RetrievedContext]:
        """The memory store's own results (min_score 0: the retriever applies it once, to the final scores)."""
        if self.memory_store is None:
            return []
        if self._counts_use:  # what this retriever returns counts as used, not the whole pool
            filters["count_use"] = False
        if conforms(self.memory_store, RecallsResults):  # ours: the one result type straight from recall
            return self.memory_store.results(query, max_results=pool, min_score=0.0, **filters)
        return [RetrievedContext.from_memory(item)  # a caller's own memory object: its dicts, read once here
                for item in self.memory_store.retrieve(query, max_results=pool, **filters)]

    def _vector_candidates(self, query: str, pool: int, skip_ids: set[str]) -> list[RetrievedContext]:
        vs = self.vector_store
        if vs is None:
            return []
        mem_ws = self.memory_store.workspace if self.memory_store is not None else None
        if mem_ws is not None and isinstance(vs, VectorStore) and vs.workspace is mem_ws:
            rows = vs.search(query=query, limit=pool + len(skip_ids))
            rows = [r for r in rows if r.get("kind") != MEMORY_KIND]  # memories come through the memory source
            shown = self._shown(mem_ws.store, [str(r["id"]) for r in rows if r.get("id") is not None])
            if shown is not None:  # only what the principal sees of the workspace
                rows = [r for r in rows if str(r.get("id")) in shown]
        else:
            rows = vs.search(query=query, limit=pool)
        out = []
        for row in rows:
            if not isinstance(row, dict) or "content" not in row:
                raise ValidationError("vector_store.search must return dicts with at least 'content' and 'score'",
                                      row=repr(row)[:120])
            rid = row.get("id")
            if rid is not None and rid in skip_ids:
                continue
            raw = float(row.get("score", 0.0))
            # our VectorStore returns a bare cosine: scored by the curve memory scores use (engine/fusion.py)
            score = float(RELEVANCE(raw)) if isinstance(vs, VectorStore) else raw
            out.append(RetrievedContext(content=str(row["content"]), score=score, source="vector",
                                        metadata=copy.deepcopy(dict(row.get("metadata") or {})),
                                        id=None if rid is None else str(rid), signals={"dense": raw},
                                        related_entities=copy.deepcopy(list(row.get("related_entities") or [])),
                                        related_relationships=copy.deepcopy(
                                            list(row.get("related_relationships") or []))))
        return out

    def _node_candidates(self, query: str, pool: int, skip_ids: set[str]) -> list[RetrievedContext]:
        """The knowledge graph's own nodes (entities, concepts, documents) by meaning, words and name
        (graph/node_search.py), as the graph's principal sees them."""
        graph = self.knowledge_graph
        if not isinstance(graph, ContextGraph):
            return []
        out = []
        for hit in search_nodes(graph, query, pool):
            node = hit.node
            if node.id in skip_ids:
                continue
            props = node.props or {}
            meta = copy.deepcopy(dict(props.get("metadata") or props))
            out.append(RetrievedContext(content=node.content or node.summary or node.title, score=hit.score,
                                        source="graph", metadata=meta, id=node.id, signals=dict(hit.signals),
                                        extra={"kind": node.kind, "node_id": graph.user_id(node.id)}))
        return out

    # --- graph expansion -------------------------------------------------------------------
    def _expand(self, seeds: list[RetrievedContext], hops: int, alpha: float) -> list[RetrievedContext]:
        stores = _stores_of(self.memory_store, self.knowledge_graph, self.vector_store)
        if not stores or hops <= 0:
            return []
        known = {c.id for c in seeds if c.id}
        # frontier: node id -> (graph score, seed id); one batched edge query per hop and store.
        frontier: dict[str, tuple[float, str]] = {}
        for seed in seeds:
            if seed.id and seed.score > frontier.get(seed.id, (-1.0, ""))[0]:
                frontier[seed.id] = (seed.score, seed.id)
        seen = set(frontier)
        best: dict[str, tuple[float, int, str]] = {}
        lifts: dict[str, tuple[float, int, str]] = {}  # candidates reached from another one: (graph, hop, via)
        for hop in range(1, hops + 1):
            nxt: dict[str, tuple[float, str]] = {}
            ids = list(frontier)
            for store in stores:
                edges = list(store.edges(src=ids)) + list(store.edges(dst=ids))
                sight = self._sight(store)
                if sight is not None:  # only edges of namespaces it reads (access.Sight.follows)
                    edges = [e for e in edges if sight.follows(e.namespace)]
                shown = None if sight is None else sight.visible({x for e in edges for x in (e.src, e.dst)})
                for edge in edges:
                    here, there = (edge.src, edge.dst) if edge.src in frontier else (edge.dst, edge.src)
                    if shown is not None and there not in shown:
                        continue  # never into (or through) a record the principal does not see
                    base, via = frontier[here]
                    g = base * max(0.0, min(1.0, float(edge.weight))) * (HOP_DECAY ** (hop - 1))
                    if there in known and there != via:  # a candidate the graph also reaches: it may lift it
                        if g > lifts.get(there, (0.0, 0, ""))[0]:
                            lifts[there] = (g, hop, via)
                        continue
                    if there in seen:
                        continue
                    if g > nxt.get(there, (0.0, ""))[0]:
                        nxt[there] = (g, via)
            for nid, (g, via) in nxt.items():
                seen.add(nid)
                best[nid] = (g, hop, via)
            frontier = nxt
            if not frontier:
                break
        out = []
        by_id = {c.id: c for c in seeds if c.id}
        for nid, (g, hop, via) in lifts.items():  # a candidate reached through the graph too: the graph may lift it
            c = by_id[nid]
            c.signals.update({"graph": g, "hops": float(hop)})
            c.extra.setdefault("via", via)
            if g > c.score:
                c.score = blend(c.score, g, alpha)
        nodes: dict[str, Any] = {}
        for store in stores:  # one batched read per store, the first store holding a node giving it
            missing = [nid for nid in best if nid not in nodes]
            if not missing:
                break
            nodes.update(store.get_nodes(missing))
        for nid, (g, hop, via) in best.items():
            node = nodes.get(nid)
            if node is None:
                continue
            props = node.props or {}
            meta = copy.deepcopy(dict(props.get("metadata") or props))
            out.append(RetrievedContext(content=node.content or node.summary or node.title, score=0.0,
                                        source="graph", metadata=meta, id=nid,
                                        signals={"graph": g, "hops": float(hop)}, extra={"via": via,
                                                                                        "kind": node.kind}))
        return out

    def _echo(self, config: RetrievalConfig) -> dict[str, Any]:
        """What ran: ``config``'s echo, with the memory's own fusion weights, reranker and ranker when they are not
        the configuration's (a memory given its own, or changed since)."""
        memory = self.memory_store
        if not conforms(memory, Configured) or not config.uses("memory"):
            return config.echo
        ran = memory.config
        if ran.weights is config.weights and ran.rerank == config.rerank and ran.ranker == config.ranker:
            return config.echo
        return dict(config.echo, weights=ran.echo["weights"], rerank=ran.rerank, ranker=ran.ranker)

    @property
    def _counts_use(self) -> bool:
        """Whether the memory store keeps an LRU order (AgentMemory.used; a memory service ranks above this one)."""
        return self.memory_store is not None

    def _count_use(self, results: Iterable[Any]) -> None:
        """The memories among ``results`` (best first) count as used for the memory cap (as AgentMemory.retrieve's)."""
        if self._counts_use:
            ids = [r.id if isinstance(r, RetrievedContext) else r.get("id") for r in results]
            self.memory_store.used([i for i, r in zip(ids, results) if i and _source(r) == "memory"])

    # --- the entry point -------------------------------------------------------------------
    def retrieve(self, query: str, max_results: int = 5, use_graph_expansion: bool | None = None,
                 min_relevance_score: float | None = None, conversation_id: str | None = None,
                 user_id: str | None = None, filters: dict[str, Any] | None = None, truth_filter: Any = None,
                 mode: str = "local", max_hops: int | None = None, **kwargs: Any) -> list[RetrievedContext]:
        """Context for ``query``, best first. ``mode``: ``local`` (the default: memory, vectors and the graph's
        nodes, expanded over the graph), ``global`` (community reports), ``drift`` (the best communities, then
        local follow-ups inside them) or ``hybrid`` (local and global fused); retrieval_modes.py says what each
        returns. ``truth_filter`` is accepted with ``local`` only. ``llm_provider`` writes community summaries
        (global, drift, hybrid; else they are extractive). ``min_relevance_score`` is the configuration's
        ``min_score`` for this call (given, else the configuration's), applied once to the final scores."""
        refuse_unknown("retrieve", set(kwargs) - {"type", "llm_provider"}, RETRIEVE_KEYWORDS, FILTER_HINT)
        if mode not in MODES:
            raise ValidationError(f"unknown retrieval mode {mode!r}; use one of {', '.join(MODES)}", mode=mode)
        if truth_filter is not None and mode != "local":
            raise ValidationError(f"truth_filter is supported only with mode='local', not {mode!r}; those modes are "
                                  "outside the dependency-validation guarantee", mode=mode)
        config = self.config.override(graph_expansion=use_graph_expansion, max_expansion_hops=max_hops,
                                      min_score=min_relevance_score, truth_filter=truth_filter)
        provider = kwargs.pop("llm_provider", None) or self.llm_provider
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("retrieve needs a non-empty query text")
        if max_results <= 0:
            return []
        local = dict(config=config, conversation_id=conversation_id, user_id=user_id, filters=filters, **kwargs)
        if mode == "global":
            out = retrieval_modes.global_results(self, query, provider)
        elif mode == "drift":
            out = retrieval_modes.drift_results(self, query, max_results, provider, **local)
        elif mode == "hybrid":
            out = retrieval_modes.hybrid_results(self, query, max_results, provider, **local)
        else:
            out = self._ranked(query, max_results, **local)
        out = config.keep(out)[:max_results]  # min_score, once, on the final scores
        echo = self._echo(config)
        for r in out:
            r.config = echo
        self._count_use(out)
        return out

    def retrieve_global(self, query: str, max_results: int = 5, llm_provider: Any = None,
                        min_relevance_score: float | None = None) -> list[RetrievedContext]:
        """``retrieve(mode="global")``: the graph's community reports best matching ``query``."""
        return self.retrieve(query, max_results, min_relevance_score=min_relevance_score, mode="global",
                             llm_provider=llm_provider)

    def retrieve_drift(self, query: str, max_results: int = 5, llm_provider: Any = None,
                       min_relevance_score: float | None = None, **kwargs: Any) -> list[RetrievedContext]:
        """``retrieve(mode="drift")``: the best communities, then local follow-ups inside them."""
        return self.retrieve(query, max_results, min_relevance_score=min_relevance_score, mode="drift",
                             llm_provider=llm_provider, **kwargs)

    def _ranked(self, query: str, max_results: int, config: RetrievalConfig, conversation_id: str | None = None,
                user_id: str | None = None, filters: dict[str, Any] | None = None,
                **kwargs: Any) -> list[RetrievedContext]:
        """The local candidates of ``config``'s sources, truth-filtered, expanded over the graph and ranked: the
        best ``max_results`` (``min_score`` is the caller's to apply, once, after any rescaling)."""
        if max_results <= 0:
            return []
        expand, hops, truth_filter = config.graph_expansion, config.max_expansion_hops, config.truth_filter
        # With a truth filter, fetch deeper: stale records must not crowd valid ones out of the pool.
        pool = max(max_results * 3, 20) if truth_filter is None else max(max_results * 10, 100)
        snapshot = truth_filter.begin() if truth_filter is not None else None
        mem_filters: dict[str, Any] = {"conversation_id": conversation_id, "user_id": user_id}
        if filters:
            mem_filters["filters"] = filters
        mem_filters.update(kwargs)
        scoped = conversation_id is not None or user_id is not None or bool(filters)
        candidates = self._memory_candidates(query, pool, **mem_filters) if config.uses("memory") else []
        if not scoped and config.uses("vector"):
            candidates += self._vector_candidates(query, pool, {c.id for c in candidates if c.id})
        if expand and self.knowledge_graph is not None and not scoped and config.uses("graph"):
            # GraphRAG: the graph's nodes in their own right
            candidates += self._node_candidates(query, pool, {c.id for c in candidates if c.id})
        if truth_filter is not None:
            candidates = truth_filter.filter(candidates, snapshot)
        for c in candidates:
            c.signals.setdefault("retrieval", c.score)
        a = config.hybrid_alpha
        if expand and hops > 0 and a > 0 and candidates:
            graph_hits = self._expand(candidates, hops, a)
            if truth_filter is not None:
                graph_hits = truth_filter.filter(graph_hits, snapshot)
            for c in graph_hits:
                c.score = a * c.signals["graph"]
            candidates += graph_hits
        if truth_filter is not None:
            truth_filter.finish(snapshot)
        return sorted(candidates, key=lambda c: (-c.score, c.id or ""))[:max_results]

    def retrieve_blended(self, query: str, max_results: int = 5, min_score: float | None = None,
                         use_graph: bool | None = None, proximity_weight: float | None = None,
                         **kwargs: Any) -> list[dict[str, Any]]:
        """``AgentContext.retrieve``: results as dicts, graph expansion by default when a knowledge graph is set, and
        graph proximity (``engine/proximity.py``) blended in with ``proximity_weight`` (default: the retriever's).
        ``min_score`` (default: the configuration's) applies once, to the blended score.

        ``truth_filter`` is refused here (seed 003): use ``retrieve(..., truth_filter=...)`` for checked context."""
        if "truth_filter" in kwargs:
            raise ValidationError("truth_filter is not accepted by AgentContext.retrieve; use "
                                  "ContextRetriever.retrieve(..., truth_filter=...) for support-checked context")
        if "top_k" in kwargs:
            raise ValidationError("retrieve() takes max_results=, not top_k=")
        refuse_unknown("retrieve", set(kwargs) - PASSED_ON, BLENDED_KEYWORDS, FILTER_HINT)
        if kwargs.get("mode", "local") != "local":
            raise ValidationError("AgentContext.retrieve is local retrieval; for mode='global', 'drift' or 'hybrid' "
                                  "call context.retriever.retrieve(query, mode=...)", mode=kwargs["mode"])
        kwargs.pop("mode", None)
        graph = self.knowledge_graph
        if use_graph and graph is None:
            raise ValidationError("retrieve(use_graph=True) needs a knowledge graph: construct AgentContext("
                                  "knowledge_graph=ContextGraph()) or call load_graph(path) first; use_graph=False "
                                  "(or leave it unset) searches memory alone", use_graph=use_graph)
        expand = (graph is not None) if use_graph is None else bool(use_graph)
        config = self.config.override(graph_expansion=expand, min_score=min_score, proximity_weight=proximity_weight,
                                      max_expansion_hops=kwargs.pop("max_hops", None))
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("retrieve needs a non-empty query text")
        w = config.proximity_weight
        blending = graph is not None and w > 0
        pool = max_results * 3 if blending else max_results  # room to re-rank
        out = self._ranked(query, pool, config, **kwargs)
        if graph is not None and out:  # with a graph, each result says its semantic and proximity scores
            out = proximity.blend_results(graph, out, query, w, hops=self.max_expansion_hops)
        out = config.keep(out)[:max_results]  # min_score, once, on the blended scores
        echo = self._echo(config)
        for r in out:
            r.config = echo
        self._count_use(out)
        return as_dicts(out)

    # --- delegates -------------------------------------------------------------------------
    def search(self, query: str, max_results: int = 5, **kwargs: Any) -> list[RetrievedContext]:
        return self.retrieve(query, max_results=max_results, **kwargs)

    def vector_search(self, query: str, max_results: int = 5, **kwargs: Any) -> list[RetrievedContext]:
        kwargs.setdefault("use_graph_expansion", False)
        return self.retrieve(query, max_results=max_results, **kwargs)

    def graph_search(self, query: str, max_results: int = 5, **kwargs: Any) -> list[RetrievedContext]:
        kwargs.setdefault("use_graph_expansion", True)
        return self.retrieve(query, max_results=max_results, **kwargs)

    def memory_search(self, query: str, max_results: int = 5, **filters: Any) -> list[RetrievedContext]:
        """Memory only, straight from the memory store (no truth filter: use retrieve for grounded results)."""
        if "truth_filter" in filters:
            raise ValidationError("memory_search does not apply truth_filter; use retrieve(..., truth_filter=...)")
        return self._memory_candidates(query, max_results, **filters)[:max_results]

    def query_with_reasoning(self, query: str, llm_provider: Any = None, max_hops: int = 2, max_results: int = 10,
                             **kwargs: Any) -> dict[str, Any]:
        """An answer grounded in a cited context of what this retriever reaches (see agentcontext/reasoning)."""
        from .reasoning.service import ReasoningService

        return ReasoningService.for_retriever(self).query_with_reasoning(query, llm_provider, max_hops=max_hops,
                                                                         max_results=max_results, **kwargs)


def _source(result: Any) -> str:
    return result.source if isinstance(result, RetrievedContext) else str(result.get("source", ""))
