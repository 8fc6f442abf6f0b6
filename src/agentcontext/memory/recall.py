"""The ranking behind ``AgentMemory.retrieve``: the candidates (the server's on a store that searches, else the
in-process index's), the reranker over a wider pool when it is on, ``min_score``, and the hits as memory dicts
with their signals. Access checks and the LRU use count stay with the caller."""
from __future__ import annotations

from typing import Any, Callable

from ..engine import rerank as reranking
from ..engine.fusion import FusionWeights
from ..store.base import Capability
from ..workspace import Workspace
from . import server_search
from .index import MemoryIndex
from .records import to_memory
from .rerank import reranked
from .search import candidate_rows, search

Keep = Callable[[dict[str, Any]], bool]


def recall(ws: Workspace, namespace: str, index: Callable[[], MemoryIndex], query: str, max_results: int,
           min_score: float, conversation_id: str | None, user_id: str | None, wanted: dict[str, Any],
           keep: Keep | None, weights: FusionWeights, rerank: bool) -> list[dict[str, Any]]:
    """The best memories of ``namespace`` for ``query`` under the filters (``wanted`` the metadata equalities,
    ``keep`` their check), best first, each with ``score``, ``signals`` and ``source``."""
    pool = max(max_results, reranking.POOL) if rerank else max_results
    if Capability.VECTOR_SEARCH in ws.store.capabilities:  # candidates from the server, nothing mirrored here
        hits = server_search.search(ws, namespace, query, pool, conversation_id, user_id, keep, wanted, weights)
    else:
        built = index()
        hits = search(ws, built, namespace, query, pool, candidate_rows(built, conversation_id, user_id, keep), weights)
    nodes = ws.store.get_nodes([h.id for h in hits])
    if rerank:
        hits = reranked(ws, query, hits, nodes)[:max_results]
    out = []
    for h in hits:
        node = nodes.get(h.id)
        if h.score < min_score or node is None:  # below the caller's bound, or removed since the index was built
            continue
        item = to_memory(node, h.score)
        item["signals"] = h.signals
        item["source"] = "memory"
        out.append(item)
    return out
