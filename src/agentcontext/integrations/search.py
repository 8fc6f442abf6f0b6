"""One retrieval over memories and knowledge packs for the frameworks' retrievers (LangChain's and LlamaIndex's
``BaseRetriever``): the best memories of ``memory:<namespace>`` and the best docs of the packs, merged by score.

Both scores are absolute relevance in [0, 1] (memory/service.py, knowledge/search.py), so one ranking holds them.
A doc hit carries its body (read for the hits kept only). Access is the services': the memory store's read is
checked (a principal who may not read it gets ``AccessDeniedError``, audited, as from the CLI); with ``packs=None``
the packs are those the principal may see, a pack named in ``packs`` that it may not read is refused the same way.
Pass ``memory_namespace=None`` to search packs only, ``packs=[]`` for memories only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..engine.retrieval_config import above
from ..errors import ValidationError
from ..knowledge import tools
from ..memory.service import workspace_memory
from ..workspace import Workspace


@dataclass
class Hit:
    """One result: ``id`` is a memory's id or ``<pack>#<selector>`` for a doc (as ``get_context`` cites them)."""

    id: str
    content: str
    score: float
    source: str  # "memory" or "doc"
    metadata: dict[str, Any] = field(default_factory=dict)


def _memory_hits(ws: Workspace, principal: str | None, namespace: str, query: str, k: int,
                 filters: dict[str, Any]) -> list[Hit]:
    rows = workspace_memory(ws, namespace, principal).retrieve(query, max_results=k, **filters)
    keep = ("conversation_id", "user_id", "created_at")
    return [Hit(r["id"], r["content"], float(r["score"]), "memory",
                {"namespace": f"memory:{namespace}" if not namespace.startswith("memory:") else namespace,
                 **{key: r.get(key) for key in keep}, "signals": r.get("signals", {})}) for r in rows]


def _doc_hits(ws: Workspace, principal: str | None, packs: Sequence[str], query: str, k: int) -> list[Hit]:
    out = []
    for pack in packs:
        for h in tools.search_knowledge(ws, pack, query, limit=k, principal=principal):
            out.append(Hit(f"{pack}#{h['selector']}", "", float(h["score"]), "doc",
                           {"pack": pack, "selector": h["selector"], "title": h["title"], "kind": h["kind"],
                            "summary": h["summary"], "tags": h["tags"], "signals": h["signals"]}))
    return out


def retrieve(ws: Workspace, query: str, k: int = 4, *, principal: str | None = None,
             memory_namespace: str | None = "default", packs: Sequence[str] | None = None, min_score: float = 0.0,
             conversation_id: str | None = None, user_id: str | None = None) -> list[Hit]:
    """The ``k`` best memories and docs for ``query``, best first (ties: memories first, then by id)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("a retrieval needs a non-empty query text")
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValidationError(f"k must be a non-negative integer, got {k!r}", k=k)
    if k == 0:
        return []
    hits: list[Hit] = []
    if memory_namespace is not None:
        filters = {key: v for key, v in (("conversation_id", conversation_id), ("user_id", user_id)) if v is not None}
        hits += _memory_hits(ws, principal, memory_namespace, query, k, filters)
    chosen = [p["pack"] for p in tools.list_knowledge_packs(ws, principal)] if packs is None else list(packs)
    hits += _doc_hits(ws, principal, chosen, query, k)
    hits = above(hits, min_score)  # the one min_score filter (engine/retrieval_config.py)
    hits.sort(key=lambda h: (-h.score, h.source != "memory", h.id))
    hits = hits[:k]
    for h in hits:
        if h.source == "doc":
            h.content = tools.read_knowledge_doc(ws, h.metadata["pack"], h.metadata["selector"],
                                                 principal=principal)["content"]
    return hits
