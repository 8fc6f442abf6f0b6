"""``EntityTable``: the entities of a graph and the rules that resolve a mention to one of them.

Resolution keeps "Apple", "Apple Inc." and "AAPL" from becoming three entities. A mention is
compared with the known entities of a compatible type, by these rules in order, and the first
that matches decides (each decision says which rule and with what score):

1. ``id``            the mention's id is already an entity id or a recorded alias id    1.00
2. ``exact_name``    the normalised names are equal (case, punctuation, spacing)         1.00
3. ``legal_suffix``  equal once legal suffixes (Inc., Corp., Ltd, GmbH...) are removed   0.95
4. ``alias``         a known alias (ticker table, add_alias, same_as links)              0.90
5. ``acronym``       an all-caps mention equals the initials of the name                 0.85
6. ``embedding``     cosine similarity of MiniLM name vectors >= similarity_threshold    cosine

A candidate of another type, or whose context disagrees on a shared key, is never merged.
Entities are nodes (type ``entity``, with ``uri``, ``aliases``, ``alias_ids`` and ``context`` in
their properties) of the graph the table is given; ``EntityLinker`` (entities.py) and
``build_from_conversations`` both keep their entities here, so each sees the other's. The name rules
(normalising, legal suffixes, tickers, initials) are engine/names.py's, which the matcher that finds
known names in text (engine/mentions.py, graph/mentions.py) uses too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import numpy as np

from ..embed.cache import embed_texts
from ..engine.names import KNOWN_ALIASES, core_name, initials, normalize
from ..errors import NotFoundError
from .protocol import GraphLike

DEFAULT_BASE_URI = "https://agentcontext.dev/entity/"


@dataclass
class Resolution:
    """Why a mention did or did not resolve to a known entity."""

    entity_id: str | None
    rule: str
    score: float
    considered: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"entity_id": self.entity_id, "rule": self.rule, "score": self.score, "considered": self.considered,
                "rejected": self.rejected}


def slug(text: str) -> str:
    return quote("_".join(str(text).strip().lower().split()), safe="._-~")


class EntityTable:
    """The entity nodes of ``graph``, loaded once and kept in step with every write through this table."""

    def __init__(self, graph: GraphLike, similarity_threshold: float = 0.8, base_uri: str = DEFAULT_BASE_URI,
                 use_embeddings: bool = True, aliases: dict[str, str] | None = None,
                 known_aliases: bool = True) -> None:
        self.graph = graph
        self.similarity_threshold = similarity_threshold
        self.base_uri = base_uri
        self.use_embeddings = use_embeddings
        self.alias_names = dict(KNOWN_ALIASES) if known_aliases else {}
        self.alias_names.update({normalize(k): core_name(v) for k, v in (aliases or {}).items()})
        self.entities: dict[str, dict[str, Any]] = {}
        self.id_alias: dict[str, str] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._key_cache: dict[str, tuple[tuple[str, ...], tuple[set[str], set[str], set[str]]]] = {}
        for node in graph.find_nodes(node_type="entity"):
            props = node["properties"]
            if "uri" in props:
                self.entities[node["id"]] = {"id": node["id"], "name": props.get("name", node["id"]),
                                             "type": props.get("entity_type"), "uri": props["uri"],
                                             "aliases": list(props.get("aliases", [])),
                                             "alias_ids": list(props.get("alias_ids", [])),
                                             "context": dict(props.get("context", {}))}
                for a in props.get("alias_ids", []):
                    self.id_alias[a] = node["id"]

    # --- entities ----------------------------------------------------------------------------
    def save(self, ent: dict[str, Any]) -> None:
        self.graph.add_node(ent["id"], "entity", content=ent["name"], properties={
            "name": ent["name"], "entity_type": ent["type"], "uri": ent["uri"], "aliases": ent["aliases"],
            "alias_ids": ent["alias_ids"], "context": ent["context"]})

    def create_entity(self, entity_id: str, text: str | None = None, entity_type: str | None = None,
                      context: dict[str, Any] | None = None) -> str:
        name = str(text or entity_id)
        frag = f"#{entity_type.lower()}" if entity_type else ""
        uri = self.base_uri + slug(name) + frag
        if any(e["uri"] == uri for e in self.entities.values()):  # a namesake: the id keeps URIs unique
            uri = self.base_uri + slug(name) + "~" + slug(str(entity_id)) + frag
        ent = {"id": str(entity_id), "name": name, "type": entity_type, "uri": uri,
               "aliases": [], "alias_ids": [], "context": dict(context or {})}
        self.entities[ent["id"]] = ent
        self.save(ent)
        return ent["id"]

    def add_alias(self, entity_id: str, alias: str) -> None:
        """Record another surface form of an entity, so later mentions resolve by ``exact_name``."""
        ent = self.entity(entity_id)
        if normalize(alias) != normalize(ent["name"]) and alias not in ent["aliases"]:
            ent["aliases"].append(alias)
            self.save(ent)

    def knows(self, entity_id: str) -> bool:
        return entity_id in self.entities or entity_id in self.id_alias

    def entity(self, entity_id: str) -> dict[str, Any]:
        """The entity record of an entity id or alias id (the stored dict itself)."""
        canonical = self.id_alias.get(entity_id, entity_id)
        if canonical not in self.entities:
            raise NotFoundError(f"no entity {entity_id!r}; create it with assign_uri() first", entity_id=entity_id)
        return self.entities[canonical]

    def names(self, ent: dict[str, Any]) -> list[str]:
        return [ent["name"], *ent["aliases"]]

    # --- resolution ----------------------------------------------------------------------------
    def _keys(self, ent: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
        """(normalised names, core names, multi-word initials) of an entity, cached until its names change."""
        names = tuple(self.names(ent))
        hit = self._key_cache.get(ent["id"])
        if hit is None or hit[0] != names:
            keys = ({normalize(n) for n in names}, {core_name(n) for n in names},
                    {initials(n) for n in names if len(core_name(n).split()) > 1})
            hit = self._key_cache[ent["id"]] = (names, keys)
        return hit[1]

    def _compatible(self, ent: dict[str, Any], entity_type: str | None,
                    context: dict[str, Any] | None) -> str | None:
        if entity_type and ent["type"] and entity_type.casefold() != str(ent["type"]).casefold():
            return f"type {entity_type} differs from {ent['type']}"
        for key, value in (context or {}).items():
            if key in ent["context"] and ent["context"][key] != value:
                return f"context {key}={value!r} differs from {ent['context'][key]!r}"
        return None

    def resolve(self, text: str, entity_type: str | None = None, context: dict[str, Any] | None = None,
                mention_id: str | None = None) -> Resolution:
        """The known entity a mention denotes (rule and score), or ``entity_id=None`` with rule ``new``."""
        if mention_id is not None and self.knows(mention_id):
            ent = self.entity(mention_id)
            if self._compatible(ent, entity_type, context) is None:
                return Resolution(ent["id"], "id", 1.0, 1)
        norm, core = normalize(text), core_name(text)
        alias_target = self.alias_names.get(norm)
        candidates, rejected = [], []
        for ent in self.entities.values():
            why = self._compatible(ent, entity_type, context)
            if why:
                if core in self._keys(ent)[1]:
                    rejected.append({"entity_id": ent["id"], "reason": why})
                continue
            candidates.append(ent)
        acronym = norm if text.isupper() and 2 <= len(norm) <= 6 and " " not in norm else None
        for rule, score, slot, key in (("exact_name", 1.0, 0, norm), ("legal_suffix", 0.95, 1, core),
                                       ("alias", 0.9, 1, alias_target), ("acronym", 0.85, 2, acronym)):
            if key is None:
                continue
            for ent in candidates:
                if key in self._keys(ent)[slot]:
                    return Resolution(ent["id"], rule, score, len(candidates), rejected)
        if self.use_embeddings and candidates:
            best, score = self._nearest(text, candidates)
            if best is not None and score >= self.similarity_threshold:
                return Resolution(best, "embedding", score, len(candidates), rejected)
            return Resolution(None, "new", 1.0, len(candidates),
                              rejected + ([{"entity_id": best, "reason": f"embedding {score:.3f} < "
                                            f"{self.similarity_threshold}"}] if best else []))
        return Resolution(None, "new", 1.0, len(candidates), rejected)

    def _nearest(self, text: str, candidates: list[dict[str, Any]]) -> tuple[str | None, float]:
        names = [(ent["id"], n) for ent in candidates for n in self.names(ent)]
        missing = [n for _, n in names if n not in self._vectors] + ([text] if text not in self._vectors else [])
        if missing:
            unique = list(dict.fromkeys(missing))
            vecs = embed_texts(self.graph.store, self.graph.workspace.embedder, unique)
            self._vectors.update(zip(unique, vecs))
        q = self._vectors[text]
        matrix = np.stack([self._vectors[n] for _, n in names])
        sims = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q) + 1e-12)
        k = int(np.argmax(sims))
        return names[k][0], float(sims[k])
