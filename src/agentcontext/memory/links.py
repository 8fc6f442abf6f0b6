"""Graph expansion from stored memories: ``mentions`` edges from a memory to the entities it names.

With a knowledge graph, a memory whose metadata lists ``entities`` (node ids, or names the EntityLinker's
rules resolve to one known entity: a model's "acme" is the graph's "Acme Corp.") is linked to those entity
nodes (created in the graph if missing). The edges live in the memory's store, next to the memory,
so forgetting or erasing the memory removes them; retrieval's graph expansion follows them into the
knowledge graph and back to other memories that mention the same entity.

The memory's text is linked too: every known entity of the graph whose name, alias or ticker appears in
it (graph/mentions.py, the EntityLinker's rules), so "Alice works at Acme" gets an edge to the graph's
Acme node. Those edges carry ``via: text`` and the rule in their properties.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..graph import mentions as text_mentions
from ..model import Edge, Node
from .records import KIND

MENTIONS = "mentions"


def entity_ids(metadata: dict[str, Any] | None) -> list[str]:
    ents = (metadata or {}).get("entities") or []
    if isinstance(ents, str):
        ents = [ents]
    return [str(e) for e in ents if isinstance(e, (str, int)) and str(e)]


def graph_view(memory: Any, graph: Any) -> Any:
    """``graph`` as the memory's principal sees it: links are resolved, made and checked as the writer, so a
    memory never gets an edge to an entity its writer may not read (the edge would tell it the entity exists)."""
    return graph if graph.principal == memory.principal else graph.acting_as(memory.principal)


def link_memories(memory: Any, graph: Any, items: Sequence[tuple[str, dict[str, Any] | None]]) -> int:
    """Add ``memory -mentions-> entity`` edges for each (memory id, metadata); returns how many were new."""
    view = graph_view(memory, graph)
    edges: list[Edge] = []
    for memory_id, metadata in items:
        for position, entity in enumerate(entity_ids(metadata)):
            # a node id, else a known entity the name denotes by the linker's rules ("acme" for "Acme Corp."),
            # so a model's spelling of a name does not make a second node; either only if the writer sees it
            target = view.resolve(entity)
            if target is None:
                named = text_mentions.resolve_name(view, entity)
                target = view.resolve(named) if named is not None else None
            if target is None:  # unknown to the writer (missing, or hidden from it): a new entity of its graph
                view.add_node(entity, "entity")
                target = view.resolve(entity) or view.store_id(entity)
            edges.append(Edge(src=memory_id, type=MENTIONS, dst=target, namespace=memory.namespace,
                              position=position))
    return memory.db.put_edges(edges, actor=memory.actor) if edges else 0


def link_texts(memory: Any, graph: Any, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """``mentions`` edges for each (memory id, its text) to the known entities of ``graph`` the text names;
    edges a memory already has (its metadata's entities, an earlier run) stay as they are."""
    return text_mentions.link_texts(graph_view(memory, graph), [(mid, text, memory.namespace) for mid, text in items],
                                    actor=memory.actor, store=memory.db)


def link_stored(memory: Any, graph: Any, batch: int = 2000) -> dict[str, Any]:
    """Link every memory already stored in ``memory``'s namespace by its text (the bulk path)."""
    ids = memory.db.node_ids(memory.namespace)
    totals = {"scanned": 0, "linked": 0}
    for start in range(0, len(ids), batch):
        nodes: dict[str, Node] = memory.db.get_nodes(ids[start: start + batch])
        done = link_texts(memory, graph, [(n.id, text_mentions.text_of(n)) for n in nodes.values() if n.kind == KIND])
        totals["scanned"] += done["scanned"]
        totals["linked"] += done["linked"]
    return totals


def relink_text(memory: Any, graph: Any, memory_id: str, text: str) -> dict[str, Any]:
    """After a memory's text changed: drop the links its old text made and link the new text."""
    old = [e.id for e in memory.db.edges(src=[memory_id], type=MENTIONS) if (e.props or {}).get("via") == "text"]
    if old:
        memory.db.retract_edges(old, actor=memory.actor)
    return link_texts(memory, graph, [(memory_id, text)])
