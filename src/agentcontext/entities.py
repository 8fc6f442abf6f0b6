"""``EntityLinker``: stable URIs for entity mentions, resolution of surface forms, typed entity links.

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
Entities are nodes (type ``entity``) in a ContextGraph; links are its edges.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence
from urllib.parse import quote

import numpy as np

from .errors import ValidationError
from .graph.context_graph import ContextGraph

LINK_TYPES = ("same_as", "related_to", "part_of")
LEGAL_SUFFIXES = {
    "inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc", "llp", "lp", "plc",
    "gmbh", "ag", "sa", "nv", "bv", "ab", "oy", "asa", "spa", "srl", "pty", "pte", "kk", "se", "sarl", "sas",
}
# Well-known tickers and short names; extend per linker with aliases= or add_alias().
KNOWN_ALIASES = {
    "aapl": "apple", "msft": "microsoft", "googl": "alphabet", "goog": "alphabet", "amzn": "amazon",
    "meta": "meta platforms", "fb": "facebook", "tsla": "tesla", "nvda": "nvidia",
    "ibm": "international business machines",
    "orcl": "oracle", "csco": "cisco systems", "intc": "intel", "amd": "advanced micro devices", "nflx": "netflix",
    "crm": "salesforce", "adbe": "adobe", "jpm": "jpmorgan chase", "gs": "goldman sachs", "ko": "coca cola",
    "pep": "pepsico", "wmt": "walmart", "dis": "walt disney", "ba": "boeing", "ge": "general electric",
}
_STOP = {"of", "and", "the", "for", "&"}


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


def normalize(text: str) -> str:
    """Casefolded, accents and punctuation removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s&]", " ", text.casefold().replace("'", ""))
    return " ".join(text.split())


def core_name(text: str) -> str:
    """The normalised name without trailing legal suffixes ("Apple Inc." -> "apple")."""
    words = normalize(text).split()
    while len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words.pop()
    return " ".join(words)


def initials(text: str) -> str:
    return "".join(w[0] for w in core_name(text).split() if w not in _STOP)


def _slug(text: str) -> str:
    return quote("_".join(str(text).strip().lower().split()), safe="._-~")


class EntityLinker:
    """Maps entity text to stable URIs, resolves surface forms, and links entity ids (seed 003)."""

    def __init__(self, similarity_threshold: float = 0.8, graph: ContextGraph | None = None,
                 base_uri: str = "https://agentcontext.dev/entity/", use_embeddings: bool = True,
                 aliases: dict[str, str] | None = None, known_aliases: bool = True, **options: Any) -> None:
        if not 0.0 < similarity_threshold <= 1.0:
            raise ValidationError("similarity_threshold must be in (0, 1]", similarity_threshold=similarity_threshold)
        self.similarity_threshold = similarity_threshold
        self.graph = graph if graph is not None else ContextGraph()
        self.base_uri = base_uri
        self.use_embeddings = use_embeddings
        self.options = options
        self._alias_names = dict(KNOWN_ALIASES) if known_aliases else {}
        self._alias_names.update({normalize(k): core_name(v) for k, v in (aliases or {}).items()})
        self._entities: dict[str, dict[str, Any]] = {}
        self._id_alias: dict[str, str] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._key_cache: dict[str, tuple[tuple[str, ...], tuple[set[str], set[str], set[str]]]] = {}
        for node in self.graph.find_nodes(node_type="entity"):
            props = node["properties"]
            if "uri" in props:
                self._entities[node["id"]] = {"id": node["id"], "name": props.get("name", node["id"]),
                                              "type": props.get("entity_type"), "uri": props["uri"],
                                              "aliases": list(props.get("aliases", [])),
                                              "alias_ids": list(props.get("alias_ids", [])),
                                              "context": dict(props.get("context", {}))}
                for a in props.get("alias_ids", []):
                    self._id_alias[a] = node["id"]

    # --- entities ----------------------------------------------------------------------------
    def _save(self, ent: dict[str, Any]) -> None:
        self.graph.add_node(ent["id"], "entity", content=ent["name"], properties={
            "name": ent["name"], "entity_type": ent["type"], "uri": ent["uri"], "aliases": ent["aliases"],
            "alias_ids": ent["alias_ids"], "context": ent["context"]})

    def create_entity(self, entity_id: str, text: str | None = None, entity_type: str | None = None,
                      context: dict[str, Any] | None = None) -> str:
        name = str(text or entity_id)
        frag = f"#{entity_type.lower()}" if entity_type else ""
        uri = self.base_uri + _slug(name) + frag
        if any(e["uri"] == uri for e in self._entities.values()):  # a namesake: the id keeps URIs unique
            uri = self.base_uri + _slug(name) + "~" + _slug(str(entity_id)) + frag
        ent = {"id": str(entity_id), "name": name, "type": entity_type, "uri": uri,
               "aliases": [], "alias_ids": [], "context": dict(context or {})}
        self._entities[ent["id"]] = ent
        self._save(ent)
        return ent["id"]

    def add_alias(self, entity_id: str, alias: str) -> None:
        """Record another surface form of an entity, so later mentions resolve by ``exact_name``."""
        ent = self._entity(entity_id)
        if normalize(alias) != normalize(ent["name"]) and alias not in ent["aliases"]:
            ent["aliases"].append(alias)
            self._save(ent)

    def _entity(self, entity_id: str) -> dict[str, Any]:
        canonical = self._id_alias.get(entity_id, entity_id)
        if canonical not in self._entities:
            from .errors import NotFoundError

            raise NotFoundError(f"no entity {entity_id!r}; create it with assign_uri() first", entity_id=entity_id)
        return self._entities[canonical]

    def get_entity(self, entity_id: str) -> dict[str, Any]:
        return dict(self._entity(entity_id))

    # --- resolution ----------------------------------------------------------------------------
    def _names(self, ent: dict[str, Any]) -> list[str]:
        return [ent["name"], *ent["aliases"]]

    def _keys(self, ent: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
        """(normalised names, core names, multi-word initials) of an entity, cached until its names change."""
        names = tuple(self._names(ent))
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
        if mention_id is not None and (mention_id in self._entities or mention_id in self._id_alias):
            ent = self._entity(mention_id)
            if self._compatible(ent, entity_type, context) is None:
                return Resolution(ent["id"], "id", 1.0, 1)
        norm, core = normalize(text), core_name(text)
        alias_target = self._alias_names.get(norm)
        candidates, rejected = [], []
        for ent in self._entities.values():
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
        from .embed.cache import embed_texts

        names = [(ent["id"], n) for ent in candidates for n in self._names(ent)]
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

    # --- the seed's API ---------------------------------------------------------------------------
    def assign_uri(self, entity_id: str, text: str | None = None, entity_type: str | None = None,
                   context: dict[str, Any] | None = None) -> str:
        """The entity's URI: an existing entity's when the text resolves to one, else a new entity's."""
        res = self.resolve(text or entity_id, entity_type, context, mention_id=entity_id)
        if res.entity_id is None:
            return self._entities[self.create_entity(entity_id, text, entity_type, context)]["uri"]
        ent = self._entities[res.entity_id]
        if entity_id != ent["id"] and entity_id not in ent["alias_ids"]:
            ent["alias_ids"].append(entity_id)
            self._id_alias[entity_id] = ent["id"]
        if text:
            self.add_alias(ent["id"], text)
        self._save(ent)
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
                entity_id = self.create_entity(m.get("id") or _slug(surface), surface, etype, m.get("context"))
            else:
                entity_id = res.entity_id
                self.add_alias(entity_id, surface)
                if m.get("id") and m["id"] != entity_id:
                    links.append(EntityLink(m["id"], entity_id, "same_as", res.score, res.rule,
                                            {"rule": res.rule, "surface": surface}))
            ent = self._entities[entity_id]
            links.extend(self._links_of(entity_id))
            out.append(LinkedEntity(entity_id=entity_id, uri=ent["uri"], text=surface, type=etype or ent["type"] or "",
                                    linked_entities=links, confidence=res.score,
                                    context={**ctx, "mention_id": m.get("id"), "source_text": text,
                                             "resolution": res.to_dict()}))
        return out

    def _find_mentions(self, text: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        lowered = normalize(text)
        for ent in self._entities.values():
            for n in self._names(ent):
                if re.search(rf"\b{re.escape(normalize(n))}\b", lowered):
                    found.append({"id": ent["id"], "text": n, "type": ent["type"]})
                    break
        for match in re.finditer(r"\b[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*", text):
            surface = match.group(0).rstrip(".")
            if not any(normalize(surface) == normalize(f["text"]) for f in found) and len(surface) > 1:
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
            if eid not in self._entities and eid not in self._id_alias:
                self.create_entity(eid)
        a, b = self._entity(entity1_id), self._entity(entity2_id)
        if link_type == "same_as":
            for x, y in ((a, b), (b, a)):
                for n in self._names(y):
                    if normalize(n) != normalize(x["name"]) and n not in x["aliases"]:
                        x["aliases"].append(n)
                self._save(x)
        self.graph.add_edge(a["id"], b["id"], link_type, weight=confidence,
                            properties={"source": source, **metadata})
        return EntityLink(a["id"], b["id"], link_type, confidence, source, dict(metadata))

    def _links_of(self, entity_id: str) -> list[EntityLink]:
        out = []
        for e in self.graph.find_edges(source_id=entity_id) + self.graph.find_edges(target_id=entity_id):
            if e["source"] in self._entities and e["target"] in self._entities:
                out.append(EntityLink(e["source"], e["target"], e["type"], e["weight"],
                                      e["properties"].get("source"), {}))
        return out

    def attach(self, node_id: str, entity_ids: Sequence[str], link_type: str = "mentions") -> int:
        """Edges from a node (a memory, a decision) to the entities it mentions."""
        return self.graph.add_edges([{"source_id": node_id, "target_id": self._entity(e)["id"],
                                      "edge_type": link_type} for e in entity_ids])

    def build_entity_web(self) -> dict[str, Any]:
        """Every entity and every link between entities, with statistics."""
        entities = [{"entity_id": e["id"], "uri": e["uri"], "text": e["name"], "type": e["type"],
                     "aliases": list(e["aliases"]), "alias_ids": list(e["alias_ids"])} for e in self._entities.values()]
        seen, links = set(), []
        for eid in self._entities:
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
