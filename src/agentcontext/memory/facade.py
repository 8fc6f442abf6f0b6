"""AgentContext memory methods (store, retrieve, forget, conversation, save/load...): thin wrappers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..errors import NotFoundError, ValidationError
from ..retrieval import ContextRetriever
from ..vector_store import VectorStore
from .links import entity_ids, link_memories
from .service import AgentMemory

MEMORY_FILE = "memory.json"
GRAPH_FILE = "graph.json"


class MemoryMethods:
    knowledge_graph: Any
    retention_days: int | None
    max_memories: int
    max_expansion_hops: int
    hybrid_alpha: float
    graph_expansion: bool
    proximity_weight: float

    def _init_memory(self, vector_store: Any) -> None:
        if vector_store is None:
            # Memories join the knowledge graph's store when there is one (one graph); otherwise the
            # default VectorStore: the workspace found like git, or .agentcontext/ created in the cwd.
            ws = getattr(self.knowledge_graph, "workspace", None)
            if ws is not None:
                backend = "inmemory" if str(ws.store.url).endswith(":memory:") else "sqlite"
                vector_store = VectorStore(backend=backend, workspace=ws)
            else:
                vector_store = VectorStore()
        if not isinstance(vector_store, VectorStore):
            raise ValidationError("vector_store must be an agentcontext VectorStore (backend='sqlite', 'inmemory' "
                                  "or 'faiss')", got=type(vector_store).__name__)
        self.vector_store = vector_store
        self.memory = AgentMemory(vector_store, max_memory_size=self.max_memories,
                                  retention_policy=self.retention_days)
        self.retriever = ContextRetriever(memory_store=self.memory, knowledge_graph=self.knowledge_graph,
                                          vector_store=None, use_graph_expansion=self.graph_expansion,
                                          max_expansion_hops=self.max_expansion_hops,
                                          hybrid_alpha=self.hybrid_alpha)

    # --- memory ----------------------------------------------------------------------------
    def store(self, content: str | Sequence[Any], metadata: dict[str, Any] | None = None,
              conversation_id: str | None = None, user_id: str | None = None, **kwargs: Any) -> str | dict[str, Any]:
        result = self.memory.store(content, metadata=metadata, conversation_id=conversation_id, user_id=user_id,
                                   **kwargs)
        if isinstance(result, str):
            self._link([(result, metadata)])
        else:
            self._link([(m["id"], m["metadata"]) for m in map(self.memory.get_memory, result["ids"]) if m])
        return result

    def batch_store(self, items: Sequence[Any], **kwargs: Any) -> list[str]:
        ids = self.memory.batch_store(items, **kwargs)
        self._link([(i, x.get("metadata") if isinstance(x, dict) else None) for i, x in zip(ids, items)])
        return ids

    def _link(self, items: list[tuple[str, Any]]) -> None:
        """``graph_expansion``: link memories to the entities their metadata names (see memory/links.py)."""
        if self.graph_expansion and self.knowledge_graph is not None and any(entity_ids(m) for _, m in items):
            link_memories(self.memory, self.knowledge_graph, items)

    def retrieve(self, query: str, max_results: int = 5, min_score: float = 0.0, use_graph: bool | None = None,
                 conversation_id: str | None = None, user_id: str | None = None,
                 filters: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        """Hybrid retrieval; GraphRAG expansion when a knowledge_graph is set (or ``use_graph=True``)."""
        if "truth_filter" in kwargs:
            raise ValidationError("truth_filter is not accepted by AgentContext.retrieve; use "
                                  "ContextRetriever.retrieve(..., truth_filter=...) for support-checked context")
        if "top_k" in kwargs:
            raise ValidationError("retrieve() takes max_results=, not top_k=")
        expand = (self.knowledge_graph is not None) if use_graph is None else bool(use_graph)
        weight = kwargs.pop("proximity_weight", None)  # a per-call override, never a metadata filter
        blend = getattr(self, "blend_proximity", None) if self.knowledge_graph is not None else None
        w = self.proximity_weight if weight is None else float(weight)
        pool = max_results * 3 if blend is not None and w > 0 else max_results  # room to re-rank
        results = self.retriever.retrieve(query, max_results=pool, use_graph_expansion=expand,
                                          min_relevance_score=min_score, conversation_id=conversation_id,
                                          user_id=user_id, filters=filters, **kwargs)
        out = [r.to_dict() for r in results]
        if blend is not None and out:
            out = blend(out, query, proximity_weight=w)
        return out[:max_results]

    def forget(self, memory_id: str | None = None, conversation_id: str | None = None,
               days_old: int | float | None = None, user_id: str | None = None) -> int:
        return self.memory.forget(memory_id, conversation_id, days_old, user_id)

    def update(self, memory_id: str, content: str | None = None, metadata: dict[str, Any] | None = None) -> bool:
        return self.memory.update(memory_id, content, metadata)

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        return self.memory.get_memory(memory_id)

    def conversation(self, conversation_id: str, max_items: int = 50) -> list[dict[str, Any]]:
        return self.memory.get_conversation_history(conversation_id, max_items)

    def stats(self) -> dict[str, Any]:
        graph = self.knowledge_graph.stats() if self.knowledge_graph is not None else None
        return {"memory": self.memory.stats(), "vector_store": self.vector_store.status(), "graph": graph,
                "total_memories": self.memory.count()}

    def health(self) -> dict[str, Any]:
        mem = self.memory.health()
        backends = {"memory": mem["status"], "vector_store": mem["store"] == "ok" and "ok" or "degraded",
                    "knowledge_graph": "ok" if self.knowledge_graph is not None else "not_configured"}
        ok = all(v in ("ok", "not_configured") for v in backends.values())
        return {"status": "healthy" if ok else "degraded", "backends": backends, "memory": mem}

    # --- persistence -----------------------------------------------------------------------
    def export(self, conversation_id: str | None = None, format: str = "json", **kwargs: Any) -> Any:
        return self.memory.export(conversation_id=conversation_id, format=format, **kwargs)

    def import_data(self, data: Any, format: str = "json") -> int:
        return self.memory.import_data(data, format=format)

    def save(self, path: str | Path) -> None:
        """Write memory (ids, metadata, timestamps) and the knowledge graph to the folder ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.memory.export(format="json", destination=folder / MEMORY_FILE)
        if self.knowledge_graph is not None and hasattr(self.knowledge_graph, "save_to_file"):
            self.knowledge_graph.save_to_file(str(folder / GRAPH_FILE))

    def load(self, path: str | Path) -> None:
        """Restore what ``save`` wrote: memories keep their ids; the graph is replaced from the file."""
        folder = Path(path)
        mem_file = folder / MEMORY_FILE
        if not mem_file.is_file():
            raise NotFoundError(f"no saved context at {folder} (missing {MEMORY_FILE}); call save() first",
                                path=str(folder))
        self.memory.import_data(json.loads(mem_file.read_text(encoding="utf-8")), format="dict")
        graph_file = folder / GRAPH_FILE
        if graph_file.is_file():
            if self.knowledge_graph is None:
                from ..graph.context_graph import ContextGraph

                self.knowledge_graph = ContextGraph()
                self.retriever.knowledge_graph = self.knowledge_graph
            self.knowledge_graph.load_from_file(str(graph_file))
