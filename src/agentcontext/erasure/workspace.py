"""``erase_workspace_entity``: erase an entity from a workspace as a principal, checked and audited."""
from __future__ import annotations

from typing import Any

from .. import access
from ..errors import ValidationError
from ..graph.context_graph import workspace_graph
from ..memory.service import workspace_memory
from ..model import reserved_namespace
from ..vector_store import VectorStore
from .coordinator import ErasureCoordinator
from .receipt import ErasureReceipt


def erase_workspace_entity(ws: Any, entity_id: str, reason: str | None = None, principal: str | None = None,
                           namespace: str = "default", erase_mentions: bool = False,
                           physical: str = "strict") -> ErasureReceipt:
    """Erase an entity from a workspace's memory store ``memory:<namespace>`` and its graph ``graph:default``
    as ``principal``, who needs write on both (denials are audited), admin on the namespace of a node outside
    the graph's own that the id names (a pack's doc, another store's node), and write on every other namespace
    the erasure changes (decisions elsewhere; with ``erase_mentions``, the memory stores, ``lib:`` packs and
    graphs holding mentions), all checked before anything changes. The receipt is audited under the principal.
    What the CLI, MCP and the web console call."""
    if not isinstance(entity_id, str) or not entity_id.strip():
        raise ValidationError("entity_id must be a non-empty string", entity_id=entity_id)
    memory = workspace_memory(ws, namespace, principal)
    memory.check("write", "erase_entity")
    graph = workspace_graph(ws, principal)
    graph.check("write", "erase_entity", entity_id)
    reserved = reserved_namespace(entity_id)  # an id that names its namespace: checked before any lookup
    if reserved is not None:
        access.require_own(ws, principal, graph.namespace, reserved, entity_id, "erase_entity")
    found = graph.resolve(entity_id)
    node = ws.store.get_node(found) if found is not None else None
    if node is not None and node.namespace != graph.namespace:  # a doc, a memory, another graph's node
        access.require(ws, principal, node.namespace, "admin", "erase_entity", found)
    opened = {memory.namespace, graph.namespace}

    def authorize(ns: str, target: str) -> None:
        if ns not in opened:
            access.require(ws, principal, ns, "write", "erase_entity", target)

    coordinator = ErasureCoordinator(graph=graph, memory=memory, vector_store=VectorStore(workspace=ws),
                                     principal=access.effective_principal(ws, principal), physical=physical,
                                     authorize=authorize)
    return coordinator.erase_entity(entity_id, reason=reason, erase_mentions=erase_mentions)
