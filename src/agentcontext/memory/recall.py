"""The ranking behind ``AgentMemory.retrieve``: the candidates (the server's on a store that searches, else the
in-process index's; with ``ranker="facets"`` the question's facets' candidates merged in, memory/facet_search.py),
the learned ranker (engine/ltr.py) over the fusion's first ``ltr.POOL`` when it is chosen, the
reranker over a wider pool when it is on, ``min_score`` (engine/retrieval_config.py ``above``, its one filter), and
the hits as ``RetrievedContext`` with their signals (engine/retrieved.py: the one result type; the memory dict is
made at the door). Access checks and the LRU use count stay with the caller."""
from __future__ import annotations

from typing import Any, Callable

from ..engine import ltr
from ..engine import rerank as reranking
from ..engine.fusion import FusionWeights
from ..engine.retrieval_config import above
from ..engine.retrieved import RetrievedContext
from ..errors import ValidationError
from ..store.base import Capability
from ..workspace import Workspace
from . import server_search
from .index import MemoryIndex
from .facet_search import search_with_facets
from .learned import learned
from .rerank import reranked
from .search import candidate_rows, search

Keep = Callable[[dict[str, Any]], bool]


def recall(ws: Workspace, namespace: str, index: Callable[[], MemoryIndex], query: str, max_results: int,
           min_score: float, conversation_id: str | None, user_id: str | None, wanted: dict[str, Any],
           keep: Keep | None, weights: FusionWeights, rerank: bool,
           config: dict[str, Any] | None = None, ranker: str = "linear") -> list[RetrievedContext]:
    """The best memories of ``namespace`` for ``query`` under the filters (``wanted`` the metadata equalities,
    ``keep`` their check), best first, each with ``score``, ``signals``, ``source`` and ``config`` (the echo of
    the configuration that ran, shared by the results of the call)."""
    pool = max(max_results, reranking.POOL) if rerank else max_results
    if ranker == "learned":
        pool = max(pool, ltr.POOL)
    built = None
    if Capability.VECTOR_SEARCH in ws.store.capabilities:  # candidates from the server, nothing mirrored here
        if weights.bridge:
            raise ValidationError("the bridge stage (FusionWeights.bridge, memory/bridge.py) runs over the in-process "
                                  "memory index; this store searches itself: set bridge to 0 or use a SQLite store",
                                  field="bridge")

        def run(text: str, k: int, w: FusionWeights) -> list:
            return server_search.search(ws, namespace, text, k, conversation_id, user_id, keep, wanted, w)
    else:
        built = index()
        rows = candidate_rows(built, conversation_id, user_id, keep)

        def run(text: str, k: int, w: FusionWeights) -> list:
            return search(ws, built, namespace, text, k, rows, w)

    def titles(found: list) -> list[str]:  # the speakers of the question's candidates (their memories' titles)
        nodes = ws.store.get_nodes([h.id for h in found])
        return [n.title or "" for n in nodes.values()]

    hits = search_with_facets(run, query, pool, weights, titles) if ranker == "facets" else run(query, pool, weights)
    nodes = ws.store.get_nodes([h.id for h in hits])
    if ranker == "learned":
        hits = learned(ws.store, query, hits, nodes, built)
    if rerank:
        hits = reranked(ws, query, hits[:max(max_results, reranking.POOL)], nodes)
    hits = hits[:max_results]
    out = []
    for h in above(hits, min_score):
        node = nodes.get(h.id)
        if node is None:  # removed since the index was built
            continue
        props = node.props or {}
        extra = {"memory_id": node.id, "conversation_id": props.get("conversation_id"),
                 "user_id": props.get("user_id"), "timestamp": props.get("created_at"),
                 "created_at": props.get("created_at"), "updated_at": props.get("updated_at"),
                 "version": node.version}
        out.append(RetrievedContext(content=node.content, score=h.score, source="memory",
                                    metadata=dict(props.get("metadata") or {}), id=node.id, signals=h.signals,
                                    extra=extra, config=config or {}))
    return out

