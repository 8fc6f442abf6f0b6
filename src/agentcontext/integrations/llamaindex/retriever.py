"""``AgentContextRetriever``: a LlamaIndex ``BaseRetriever`` over agentcontext's memories and knowledge packs.

``AgentContextRetriever(ws, principal="alice", similarity_top_k=4).retrieve("question")`` returns ``NodeWithScore``s,
best first, one ranking by absolute score in [0, 1] (integrations/search.py). Each node's id is the memory's id or
``<pack>#<selector>``; its metadata the source and (for a doc) pack, selector, title, kind, (for a memory)
conversation, user and time. Access is the services' (a principal who may not read the memory store or a named pack
gets ``AccessDeniedError``, audited).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ...workspace import Workspace
from ..search import retrieve

SHOWN = ("source", "pack", "selector", "title", "conversation_id", "created_at")  # what an LLM sees of the metadata


class AgentContextRetriever(BaseRetriever):
    """Memories of ``memory:<memory_namespace>`` (None: none) and docs of ``packs`` (None: every pack the principal
    may read; []: none), acting as ``principal`` (None: the workspace owner)."""

    def __init__(self, workspace: Workspace, *, principal: str | None = None, similarity_top_k: int = 4,
                 memory_namespace: str | None = "default", packs: Optional[Sequence[str]] = None,
                 min_score: float = 0.0, conversation_id: str | None = None, user_id: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace
        self.principal = principal
        self.similarity_top_k = similarity_top_k
        self.memory_namespace = memory_namespace
        self.packs = None if packs is None else list(packs)
        self.min_score = min_score
        self.conversation_id = conversation_id
        self.user_id = user_id

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = retrieve(self.workspace, query_bundle.query_str, self.similarity_top_k, principal=self.principal,
                        memory_namespace=self.memory_namespace, packs=self.packs, min_score=self.min_score,
                        conversation_id=self.conversation_id, user_id=self.user_id)
        out = []
        for h in hits:
            metadata = {"source": h.source, **h.metadata}
            hidden = [k for k in metadata if k not in SHOWN]
            node = TextNode(id_=h.id, text=h.content, metadata=metadata, excluded_llm_metadata_keys=hidden,
                            excluded_embed_metadata_keys=list(metadata))
            out.append(NodeWithScore(node=node, score=h.score))
        return out
