"""What an ``AgentContext`` holds, reported and persisted: its memory and its knowledge graph.

``stats`` and ``health`` report both; ``save`` writes both into one folder (``memory.json`` with
ids, metadata and timestamps; ``graph.json`` with the graph's whole history) and ``load`` restores
them: memories keep their ids, the graph is replaced from its file.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .errors import NotFoundError
from .memory import AgentMemory

MEMORY_FILE = "memory.json"
GRAPH_FILE = "graph.json"


def stats(memory: AgentMemory, graph: Any = None) -> dict[str, Any]:
    """Memory counts, the vector store's status and the graph's stats (None without a graph)."""
    status = memory.vector_store.status() if memory.vector_store is not None else None
    return {"memory": memory.stats(), "vector_store": status,
            "graph": graph.stats() if graph is not None else None, "total_memories": memory.count()}


def health(memory: AgentMemory, graph: Any = None) -> dict[str, Any]:
    """``healthy`` when every configured backend is ok; each backend's status flag."""
    mem = memory.health()
    backends = {"memory": mem["status"], "vector_store": "ok" if mem["store"] == "ok" else "degraded",
                "knowledge_graph": "ok" if graph is not None else "not_configured"}
    ok = all(v in ("ok", "not_configured") for v in backends.values())
    return {"status": "healthy" if ok else "degraded", "backends": backends, "memory": mem}


def save(path: str | Path, memory: AgentMemory, graph: Any = None) -> None:
    """Write the memories and (when there is one) the knowledge graph into the folder ``path``."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    memory.export(format="json", destination=folder / MEMORY_FILE)
    if graph is not None:
        graph.save_to_file(str(folder / GRAPH_FILE))


def load(path: str | Path, memory: AgentMemory, graph: Any, new_graph: Callable[[], Any]) -> Any:
    """Restore what ``save`` wrote; returns the graph now holding the saved graph (``new_graph()`` when there was
    none and the folder has one), or ``graph`` unchanged when the folder holds no graph."""
    folder = Path(path)
    mem_file = folder / MEMORY_FILE
    if not mem_file.is_file():
        raise NotFoundError(f"no saved context at {folder} (missing {MEMORY_FILE}); call save() first",
                            path=str(folder))
    memory.import_data(json.loads(mem_file.read_text(encoding="utf-8")), format="dict")
    graph_file = folder / GRAPH_FILE
    if graph_file.is_file():
        graph = graph if graph is not None else new_graph()
        graph.load_from_file(str(graph_file))
    return graph


def load_graph(graph: Any, path: str, format: str | None = None) -> dict[str, Any]:
    """Replace ``graph``'s state from a saved graph (JSON file or Markdown directory); returns its stats."""
    graph.load_from_file(path, format=format)
    return graph.stats()
