"""``AgentContextRetriever``: a LangChain ``BaseRetriever`` over agentcontext's memories and knowledge packs.

``AgentContextRetriever(workspace=ws, principal="alice", k=4)`` returns the ``k`` best memories and docs as
``Document``s, best first (integrations/search.py: one ranking by absolute score); ``invoke(query, k=2)`` overrides
``k`` for one call. Each Document's ``id`` is the memory's id or ``<pack>#<selector>``, its metadata the source,
score, signals and (for a doc) pack, selector, title, kind and tags, (for a memory) conversation, user and time.
"""
from __future__ import annotations

from typing import Any, Optional

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from ...errors import ValidationError
from ...workspace import Workspace
from ..search import retrieve


class AgentContextRetriever(BaseRetriever):
    """Memories of ``memory:<memory_namespace>`` (None: none) and docs of ``packs`` (None: every pack the principal
    may read; []: none), acting as ``principal`` (None: the workspace owner)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workspace: Workspace
    principal: Optional[str] = None
    k: int = 4
    memory_namespace: Optional[str] = "default"
    packs: Optional[list[str]] = None
    min_score: float = 0.0
    conversation_id: Optional[str] = None
    user_id: Optional[str] = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, **unexpected: Any) -> list[Document]:
        if unexpected:
            raise ValidationError(f"unknown retriever arguments: {', '.join(sorted(unexpected))}; use k",
                                  arguments=sorted(unexpected))
        hits = retrieve(self.workspace, query, self.k if k is None else k, principal=self.principal,
                        memory_namespace=self.memory_namespace, packs=self.packs, min_score=self.min_score,
                        conversation_id=self.conversation_id, user_id=self.user_id)
        return [Document(page_content=h.content, id=h.id,
                         metadata={"id": h.id, "source": h.source, "score": h.score, **h.metadata}) for h in hits]
