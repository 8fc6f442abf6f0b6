"""``EntityLinker``: stable URIs for entity mentions, resolution of surface forms, typed entity links.

The entities and the rules that resolve a mention to one of them ("Apple", "Apple Inc." and
"AAPL" are one entity) are the graph's ``EntityTable`` (graph/entity_table.py, where the rules are
listed); the linker holds one over the graph it is given (a private in-memory ContextGraph when
none is) and adds the seed's API: URIs, ``link`` of extracted mentions, typed ``link_entities``,
``attach`` and the entity web. Entities are nodes (type ``entity``) in that graph; links are its edges.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .errors import ValidationError
from .graph.context_graph import ContextGraph
from .graph.mentions import find
from .graph.entity_table import (DEFAULT_BASE_URI, EntityTable, Resolution, core_name, initials, normalize,
                                 slug)

LINK_TYPES = ("same_as", "related_to", "part_of")

__all__ = ["EntityLink", "EntityLinker", "LinkedEntity", "Resolution", "core_name", "initials", "normalize"]


@dataclass
class EntityLink:
    source_entity_id: str
    target_entity_id: str
    link_type: str  # "same_as" | "related_to" | "part_of"
    confidence: float
    source: Optional[str] = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class LinkedEntity:
    entity_id: str
    uri: str
    text: str
    type: str
    linked_entities: list[EntityLink]
    context: dict[str, Any]
    confidence: float


class EntityLinker:
    """Maps entity text to stable URIs, resolves surface forms, and links entity ids (seed 003)."""

    def __init__(self, similarity_threshold: float = 0.8, graph: ContextGraph | None = None,
                 base_uri: str = DEFAULT_BASE_URI, use_embeddings: bool = True,
                 aliases: dict[str, str] | None = None, known_aliases: bool = True) -> None:
        if not 0.0 < similarity_threshold <= 1.0:
            raise ValidationError("similarity_threshold must be in (0, 1]", similarity_threshold=similarity_threshold)
        self.graph = graph if graph is not None else ContextGraph()
        self.table = EntityTable(self.graph, similarity_threshold, base_uri, use_embeddings, aliases, known_aliases)

    @property
    def similarity_threshold(self) -> float:
        return self.table.similarity_threshold

    # --- entities and resolution (the graph's entity table) ----------------------------------------
    def create_entity(self, entity_id: str, text: str | None = None, entity_type: str | None = None,
                      context: dict[str, Any] | None = None) -> str:
        return self.table.create_entity(entity_id, text, entity_type, context)

    def add_alias(self, entity_id: str, alias: str) -> None:
        """Record another surface form of an entity, so later mentions resolve by ``exact_name``."""
        self.table.add_alias(entity_id, alias)

    def get_entity(self, entity_id: str) -> dict[str, Any]:
        return dict(self.table.entity(entity_id))

    def resolve(self, text: str, entity_type: str | None = None, context: dict[str, Any] | None = None,
                mention_id: str | None = None) -> Resolution:
        """The known entity a mention denotes (rule and score), or ``entity_id=None`` with rule ``new``."""
        return self.table.resolve(text, entity_type, context, mention_id)

    # --- the seed's API ---------------------------------------------------------------------------
    def assign_uri(self, entity_id: str, text: str | None = None, entity_type: str | None = None,
                   context: dict[str, Any] | None = None) -> str:
        """The entity's URI: an existing entity's when the text resolves to one, else a new entity's."""
        res = self.resolve(text or entity_id, entity_type, context, mention_id=entity_id)
        if res.entity_id is None:
            return self.table.entities[self.create_entity(entity_id, text, entity_type, context)]["uri"]
        ent = self.table.entities[res.entity_id]
        if entity_id != ent["id"] and entity_id not in ent["alias_ids"]:
            ent["alias_ids"].append(entity_id)
            self.table.id_alias[entity_id] = ent["id"]
        if text:
            self.add_alias(ent["id"], text)
        self.table.save(ent)
        return ent["uri"]

    def link(self, text: str, entities: Sequence[dict[str, Any]] | None = None,
             context: dict[str, Any] | None = None) -> list[LinkedEntity]:
        """Resolve each mention (dicts with id, text, type; found in ``text`` by name if omitted)."""
        mentions = list(entities) if entities is not None else self._find_mentions(text)
        out: list[LinkedEntity] = []
        for m in mentions:
            surface = str(m.get("text") or m.get("name") or m.get("id") or "")
            if not surface:
                raise ValidationError("an entity mention needs text (or name)", mention=m)
            etype = m.get("type")
            ctx = {**(context or {}), **(m.get("context") or {})}
            res = self.resolve(surface, etype, m.get("context"), mention_id=m.get("id"))
            links: list[EntityLink] = []
            if res.entity_id is None:
                entity_id = self.create_entity(m.get("id") or slug(surface), surface, etype, m.get("context"))
            else:
                entity_id = res.entity_id
                self.add_alias(entity_id, surface)
                if m.get("id") and m["id"] != entity_id:
                    links.append(EntityLink(m["id"], entity_id, "same_as", res.score, res.rule,
                                            {"rule": res.rule, "surface": surface}))
            ent = self.table.entities[entity_id]
            links.extend(self._links_of(entity_id))
            out.append(LinkedEntity(entity_id=entity_id, uri=ent["uri"], text=surface, type=etype or ent["type"] or "",
                                    linked_entities=links, confidence=res.score,
                                    context={**ctx, "mention_id": m.get("id"), "source_text": text,
                                             "resolution": res.to_dict()}))
        return out

    def _find_mentions(self, text: str) -> list[dict[str, Any]]:
        """This linker's entities the text names (graph/mentions.py's matcher: names, aliases, legal suffixes,
        tickers, initials), then capitalised phrases it does not know yet, as new mentions."""
        found: list[dict[str, Any]] = []
        named = find(self.graph, text)
        for m in named:
            for sid in m.entities:
                ent = self.table.entities.get(self.graph.user_id(sid))
                if ent is not None and all(f.get("id") != ent["id"] for f in found):
                    found.append({"id": ent["id"], "text": ent["name"], "type": ent["type"]})
        known = {normalize(f["text"]) for f in found} | {normalize(m.surface) for m in named}
        for match in re.finditer(r"\b[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*", text):
            surface = match.group(0).rstrip(".")
            if normalize(surface) not in known and len(surface) > 1:
                known.add(normalize(surface))
                found.append({"text": surface})
        return found

    def link_entities(self, entity1_id: str, entity2_id: str, link_type: str = "related_to",
                      confidence: float = 1.0, source: str | None = None, **metadata: Any) -> EntityLink:
        """A typed edge between two entity ids (not a list). ``same_as`` also makes each an alias of the other."""
        if not isinstance(entity1_id, str) or not isinstance(entity2_id, str):
            raise ValidationError("link_entities takes two entity ids, not a list; use link(text, entities=[...]) "
                                  "for extracted mentions", got=type(entity1_id).__name__)
        if not 0.0 <= confidence <= 1.0:
            raise ValidationError("confidence must be between 0 and 1", confidence=confidence)
        for eid in (entity1_id, entity2_id):
            if not self.table.knows(eid):
                self.create_entity(eid)
        a, b = self.table.entity(entity1_id), self.table.entity(entity2_id)
        if link_type == "same_as":
            for x, y in ((a, b), (b, a)):
                for n in self.table.names(y):
                    if normalize(n) != normalize(x["name"]) and n not in x["aliases"]:
                        x["aliases"].append(n)
                self.table.save(x)
        self.graph.add_edge(a["id"], b["id"], link_type, weight=confidence,
                            properties={"source": source, **metadata})
        return EntityLink(a["id"], b["id"], link_type, confidence, source, dict(metadata))

    def _links_of(self, entity_id: str) -> list[EntityLink]:
        out = []
        for e in self.graph.find_edges(source_id=entity_id) + self.graph.find_edges(target_id=entity_id):
            if e["source"] in self.table.entities and e["target"] in self.table.entities:
                out.append(EntityLink(e["source"], e["target"], e["type"], e["weight"],
                                      e["properties"].get("source"), {}))
        return out

    def attach(self, node_id: str, entity_ids: Sequence[str], link_type: str = "mentions") -> int:
        """Edges from a node (a memory, a decision) to the entities it mentions."""
        return self.graph.add_edges([{"source_id": node_id, "target_id": self.table.entity(e)["id"],
                                      "edge_type": link_type} for e in entity_ids])

    def build_entity_web(self) -> dict[str, Any]:
        """Every entity and every link between entities, with statistics."""
        entities = [{"entity_id": e["id"], "uri": e["uri"], "text": e["name"], "type": e["type"],
                     "aliases": list(e["aliases"]), "alias_ids": list(e["alias_ids"])}
                    for e in self.table.entities.values()]
        seen, links = set(), []
        for eid in self.table.entities:
            for link in self._links_of(eid):
                key = (link.source_entity_id, link.target_entity_id, link.link_type)
                if key not in seen:
                    seen.add(key)
                    links.append(link)
        by_type: dict[str, int] = {}
        for link in links:
            by_type[link.link_type] = by_type.get(link.link_type, 0) + 1
        kinds: dict[str, int] = {}
        for e in entities:
            kinds[str(e["type"])] = kinds.get(str(e["type"]), 0) + 1
        return {"entities": entities,
                "links": [{"source_entity_id": x.source_entity_id, "target_entity_id": x.target_entity_id,
                           "link_type": x.link_type, "confidence": x.confidence} for x in links],
                "statistics": {"total_entities": len(entities), "total_links": len(links), "link_types": by_type,
                               "entity_types": kinds}}
