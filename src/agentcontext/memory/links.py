"""Graph expansion from stored memories: ``mentions`` edges from a memory to the entities it names.

With a knowledge graph, a memory whose metadata lists ``entities`` (ids) is linked to those entity
nodes (created in the graph if missing). The edges live in the memory's store, next to the memory,
so forgetting or erasing the memory removes them; retrieval's graph expansion follows them into the
knowledge graph and back to other memories that mention the same entity.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..model import Edge

MENTIONS = "mentions"


def entity_ids(metadata: dict[str, Any] | None) -> list[str]:
    ents = (metadata or {}).get("entities") or []
    if isinstance(ents, str):
        ents = [ents]
    return [str(e) for e in ents if isinstance(e, (str, int)) and str(e)]


def link_memories(memory: Any, graph: Any, items: Sequence[tuple[str, dict[str, Any] | None]]) -> int:
    """Add ``memory -mentions-> entity`` edges for each (memory id, metadata); returns how many were new."""
    edges: list[Edge] = []
    for memory_id, metadata in items:
        for position, entity in enumerate(entity_ids(metadata)):
            target = graph.resolve(entity)
            if target is None:
                graph.add_node(entity, "entity")
                target = graph.resolve(entity) or graph.store_id(entity)
            edges.append(Edge(src=memory_id, type=MENTIONS, dst=target, namespace=memory.namespace,
                              position=position))
    return memory.db.put_edges(edges, actor=memory.actor) if edges else 0
