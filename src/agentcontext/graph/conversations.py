"""``ContextGraph.build_from_conversations``: conversations, their turns and the entities they mention."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..errors import NotFoundError, ValidationError
from ..model import content_hash
from .entity_table import EntityTable
from .mentions import link_texts
from .protocol import GraphLike


def _load(conv: Any, index: int) -> dict[str, Any]:
    if isinstance(conv, dict):
        return conv
    if isinstance(conv, (str, Path)):
        path = Path(conv)
        if not path.is_file():
            raise NotFoundError(f"conversation file {path} does not exist", path=str(path))
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValidationError(f"{path} must hold one conversation object", path=str(path))
        return data
    raise ValidationError(f"conversation {index} is {type(conv).__name__}; pass a dict or a JSON file path",
                          index=index)


def build_from_conversations(graph: GraphLike, conversations: Sequence[Any],
                             link_entities: bool = True) -> dict[str, Any]:
    """Add a ``conversation`` node per conversation, a ``message`` node per turn (``has_message``, ``next``),
    entity nodes with ``mentions`` edges, and the conversation's ``relationships`` between entities. Returns
    counts and the ids it built. With ``link_entities`` a mention is resolved by the graph's EntityTable (the
    rules and entities an EntityLinker over this graph uses), so "Apple Inc." and "AAPL" stay one entity, and
    each message is linked to every known entity its text names (graph/mentions.py: the listed ones, the
    graph's earlier entities and nodes; ``message_mentions`` counts those links). Without it, a message is
    linked to a listed entity whose text it contains."""
    linker = EntityTable(graph) if link_entities else None
    before = graph.stats()
    built: dict[str, Any] = {"conversations": [], "messages": 0, "entities": {}, "entities_merged": 0,
                             "relationships": 0, "message_mentions": 0}
    for i, raw in enumerate(conversations):
        conv = _load(raw, i)
        turns = conv.get("messages") or conv.get("turns") or []
        text = conv.get("content") or "\n".join(str(t.get("content", "")) if isinstance(t, dict) else str(t)
                                                for t in turns)
        conv_id = str(conv.get("id") or conv.get("conversation_id") or "conv_" + content_hash(text)[:12])
        graph.add_node(conv_id, "conversation", content=text, properties=dict(conv.get("metadata") or {}))
        built["conversations"].append(conv_id)
        nodes, edges = [], []
        for k, turn in enumerate(turns):
            turn = turn if isinstance(turn, dict) else {"content": str(turn)}
            mid = f"{conv_id}#m{k}"
            nodes.append({"node_id": mid, "node_type": "message", "content": str(turn.get("content", "")),
                          "properties": {"role": turn.get("role", ""), "conversation_id": conv_id, "index": k}})
            edges.append({"source_id": conv_id, "target_id": mid, "edge_type": "has_message"})
            if k:
                edges.append({"source_id": f"{conv_id}#m{k - 1}", "target_id": mid, "edge_type": "next"})
        graph.add_nodes(nodes)
        built["messages"] += len(nodes)
        local: dict[str, str] = {}
        for ent in conv.get("entities") or []:
            ent = ent if isinstance(ent, dict) else {"text": str(ent)}
            surface = str(ent.get("text") or ent.get("name") or ent.get("id") or "")
            if not surface:
                continue
            mention = str(ent.get("id") or surface)
            if linker is not None:
                resolved = linker.resolve(surface, ent.get("type"), ent.get("context"))
                if resolved.entity_id is not None:
                    built["entities_merged"] += 1
                    entity_id = resolved.entity_id
                    linker.add_alias(entity_id, surface)
                else:
                    entity_id = linker.create_entity(mention, surface, ent.get("type"), ent.get("context"))
            else:
                entity_id = mention
                graph.add_node(entity_id, "entity", content=surface,
                               properties={"name": surface, "entity_type": ent.get("type")})
            local[mention] = local[surface] = entity_id
            built["entities"][mention] = entity_id
            edges.append({"source_id": conv_id, "target_id": entity_id, "edge_type": "mentions"})
            if linker is None:  # no resolution: a message mentions a listed entity whose text it contains
                for node in nodes:
                    if surface.lower() in node["content"].lower():
                        edges.append({"source_id": node["node_id"], "target_id": entity_id,
                                      "edge_type": "mentions"})
        for rel in conv.get("relationships") or []:
            src = rel.get("source_id") or rel.get("source")
            dst = rel.get("target_id") or rel.get("target")
            if not src or not dst:
                raise ValidationError(f"conversation {conv_id!r}: a relationship needs source and target", rel=rel)
            edges.append({"source_id": local.get(src, src), "target_id": local.get(dst, dst),
                          "edge_type": rel.get("type", "related_to"),
                          "weight": rel.get("confidence", rel.get("weight", 1.0))})
            built["relationships"] += 1
        graph.add_edges(edges)
        if linker is not None:  # each message's text, against every known entity (this conversation's too)
            found = link_texts(graph, [(graph.store_id(n["node_id"]), n["content"], graph.namespace) for n in nodes],
                               actor=graph.actor)
            built["message_mentions"] += found["linked"]
    after = graph.stats()
    built["nodes_added"] = after["node_count"] - before["node_count"]
    built["edges_added"] = after["edge_count"] - before["edge_count"]
    built["node_count"], built["edge_count"] = after["node_count"], after["edge_count"]
    return built
