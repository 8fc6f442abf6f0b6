"""``DecisionRecorder``: record decisions (with embeddings, entity links and causal links) and find precedents.

Module functions ``record_decision(graph, ...)``, ``record_decisions(graph, items)``,
``find_precedents(graph, ...)`` and ``find_precedents_by_scenario(graph, ...)`` are what
``ContextGraph`` and ``AgentContext`` delegate to.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Iterable, Sequence


import numpy as np

from ..embed.cache import embed_texts
from ..errors import ConflictError, CycleError, NotFoundError, ValidationError
from ..model import Edge, Node, content_hash, to_utc_iso
from ..seams import principal_of
from .common import (APPLIES_POLICY, CAUSAL_TYPES, Bound, DECISION, ENTITY, INVOLVES, PRECEDENT,
                     STRUCTURAL_TYPES, captured_context,
                     Target, decision_from_node, decision_node, new_id, policy_node_id,
                     resolve_entities)
from . import precedents
from .models import Decision, Precedent

BATCH = 256
PRECEDENT_TYPES = ("similar_scenario", "same_policy", "exception_precedent")
DECISION_FIELDS = ("decision_id", "category", "scenario", "reasoning", "outcome", "confidence", "timestamp",
                   "decision_maker", "valid_from", "valid_until", "metadata")


class DecisionRecorder(Bound):
    """Records decisions as graph nodes and searches them; bound to a ContextGraph, Workspace or Store."""

    def __init__(self, graph_store: Target | None = None, namespace: str | None = None, actor: str = "",
                 graph: Target | None = None, principal: str | None = None) -> None:
        self._bind(graph_store if graph_store is not None else graph, namespace, "DecisionRecorder",
                   principal_of(principal, actor))

    @property
    def actor(self) -> str:
        """The older name of ``principal``, as audit rows spell who acted ("" for the owner)."""
        return self.principal or ""

    # --- recording -------------------------------------------------------------------------
    def record_decision(
        self,
        category: str,
        scenario: str,
        reasoning: str,
        outcome: str,
        confidence: float,
        entities: Sequence[str] | None = None,
        decision_maker: str = "",
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        metadata: dict[str, Any] | None = None,
        decision_id: str | None = None,
        timestamp: str | datetime | None = None,
        caused_by: Sequence[str] | None = None,
        informed_by: Sequence[str] | None = None,
        policies: Sequence[str] | None = None,
        reasoning_embedding: Sequence[float] | None = None,
        **unknown: Any,
    ) -> str:
        """Record one decision; ``caused_by`` / ``informed_by`` name earlier decisions that led to it;
        ``reasoning_embedding`` is a precomputed vector of the scenario and reasoning (else it is embedded).
        Extra facts go in ``metadata``."""
        if unknown:
            raise ValidationError(f"record_decision got unknown arguments {sorted(unknown)}; put extra facts in "
                                  "metadata={...}", arguments=sorted(unknown))
        item = dict(category=category, scenario=scenario, reasoning=reasoning, outcome=outcome,
                    confidence=confidence, entities=entities, decision_maker=decision_maker,
                    valid_from=valid_from, valid_until=valid_until, metadata=dict(metadata or {}),
                    decision_id=decision_id, timestamp=timestamp, caused_by=caused_by, informed_by=informed_by,
                    policies=policies, reasoning_embedding=reasoning_embedding)
        return self.record_decisions([item])[0]

    def record_decisions(self, items: Iterable[dict[str, Any] | Decision], batch_size: int = BATCH) -> list[str]:
        """Record many decisions, embedding them in batches, one transaction per batch."""
        self.check("write", "decision.record")
        ids: list[str] = []
        batch: list[dict[str, Any] | Decision] = []
        for item in items:
            batch.append(item)
            if len(batch) >= batch_size:
                ids.extend(self._record_batch(batch))
                batch = []
        if batch:
            ids.extend(self._record_batch(batch))
        return ids

    def _record_batch(self, items: list[dict[str, Any] | Decision]) -> list[str]:
        chosen = [i.decision_id if isinstance(i, Decision) else i.get("decision_id") for i in items
                  if isinstance(i, Decision) or (isinstance(i, dict) and i.get("decision_id") is not None)]
        if chosen:  # the same refusal whether or not a record this principal cannot see holds the id
            self.require_chosen("decision.record", chosen[0], "a decision_id",
                                "leave decision_id out: the recorder assigns a unique id and returns it")
        nodes: list[Node] = []
        links: list[tuple[str, list[str], list[str], dict[str, list[str]]]] = []
        supplied_vectors: dict[str, Any] = {}
        for item in items:
            if isinstance(item, Decision):
                d, entities, policies, causes = item, [], [], {}
            else:
                unknown = set(item) - set(DECISION_FIELDS) - {"entities", "policies", "caused_by", "informed_by",
                                                              "reasoning_embedding"}
                if unknown:
                    raise ValidationError(f"unknown decision fields {sorted(unknown)}; put extra data in metadata",
                                          fields=sorted(unknown))
                fields = {k: item[k] for k in DECISION_FIELDS if item.get(k) is not None}
                fields.setdefault("decision_id", new_id("dec"))
                fields.setdefault("reasoning", "")
                if "timestamp" in fields:
                    fields["timestamp"] = to_utc_iso(fields["timestamp"])
                missing = [k for k in ("category", "scenario", "outcome", "confidence") if k not in fields]
                if missing:
                    raise ValidationError(f"a decision needs {missing}", missing=missing)
                d = Decision(**fields, reasoning_embedding=item.get("reasoning_embedding"))
                entities = [str(e) for e in (item.get("entities") or [])]
                policies = [str(p) for p in (item.get("policies") or [])]
                causes = {"caused": list(item.get("caused_by") or []), "informed": list(item.get("informed_by") or [])}
            if "captured" not in (d.metadata or {}):
                d.metadata = {**(d.metadata or {}), "captured": captured_context(self.principal, self.namespace)}
            nodes.append(decision_node(d, self.namespace))
            links.append((d.decision_id, entities, policies, causes))
            if d.reasoning_embedding is not None:
                supplied_vectors[d.decision_id] = d.reasoning_embedding
        ids = [n.id for n in nodes]
        if len(set(ids)) != len(ids):
            raise ValidationError("the same decision_id appears twice in one batch", ids=ids)
        # Vectors first (cached in the store by text hash), so the index never has to embed them.
        emb = self.ws.embedder
        supplied = {}
        for n, (did, *_rest) in zip(nodes, links):
            vec = supplied_vectors.get(did)
            if vec is not None:
                arr = np.asarray(vec, dtype=np.float32)
                if arr.shape != (emb.dimension,):
                    raise ValidationError(f"reasoning_embedding of {did} has shape {arr.shape}; the embedder "
                                          f"{emb.name} makes ({emb.dimension},)", decision_id=did)
                supplied[content_hash(n.embed_text or "")] = arr / max(float(np.linalg.norm(arr)), 1e-12)
        if supplied:
            self.store.put_vectors(supplied, emb.name)
        embed_texts(self.store, emb, [n.embed_text or "" for n in nodes if content_hash(n.embed_text or "")
                                      not in supplied])
        policy_ids = {p: policy_node_id(p) for _, _, pols, _ in links for p in pols}
        cause_ids = {c for _, _, _, causes in links for group in causes.values() for c in group}
        with self.store.transaction():
            names = list(dict.fromkeys(name for _, ents, _, _ in links for name in ents))
            entity_ids, _ = resolve_entities(self.graph, self.store, names, self.sees())
            everything = self.store.get_nodes([*entity_ids.values(), *policy_ids.values(), *cause_ids, *ids])
            existing = self.seen(everything)  # what the principal does not see counts as missing...
            taken = sorted(i for i in ids if i in everything)  # ...except an id, which is taken either way
            if taken:
                raise ConflictError(f"decisions {taken} are already recorded; a decision is a record of what "
                                    "happened: record a new one and link it (caused_by=/informed_by=)", ids=taken)
            order = {did: k for k, did in enumerate(ids)}
            missing_policies = [p for p, nid in policy_ids.items() if nid not in existing]
            if missing_policies:
                raise NotFoundError(f"unknown policies {missing_policies}; add them with PolicyEngine.add_policy",
                                    missing=missing_policies)
            missing_causes = sorted(c for c in cause_ids if c not in order and (
                c not in existing or existing[c].kind != DECISION))
            if missing_causes:
                raise NotFoundError(f"caused_by/informed_by name decisions that do not exist: {missing_causes}",
                                    missing=missing_causes)
            new_entities = [Node(id=nid, kind=ENTITY, namespace=self.namespace, key=name, title=name)
                            for name, nid in entity_ids.items() if nid not in existing]
            self.store.put_nodes([*new_entities, *nodes], actor=self.actor)
            edges: list[Edge] = []
            for did, ents, pols, causes in links:
                for pos, name in enumerate(ents):
                    edges.append(Edge(did, INVOLVES, entity_ids[name], namespace=self.namespace, position=pos))
                for pos, pid in enumerate(pols):
                    edges.append(Edge(did, APPLIES_POLICY, policy_ids[pid], namespace=self.namespace, position=pos,
                                      props={"policy_version": existing[policy_ids[pid]].props.get("version")}))
                for rel, group in causes.items():
                    for cause in group:
                        if order.get(cause, -1) >= order[did]:  # causes come first, so links never close a cycle
                            raise CycleError(f"decision {did} cannot be {rel} by {cause}, which is recorded with or "
                                             "after it; list causes before their effects", cycle=[did, cause])
                        edges.append(Edge(cause, rel, did, namespace=self.namespace))
            if edges:
                self.store.put_edges(edges, actor=self.actor)
            if len(nodes) == 1:
                self.audit("decision.record", f"{self.namespace}/{ids[0]}", {"category": nodes[0].props["category"]})
            else:
                self.audit("decision.record", self.namespace, {"decisions": len(ids)})
        return ids

    def link_decisions(self, cause_id: str, effect_id: str, relationship: str = "caused", weight: float = 1.0,
                       properties: dict[str, Any] | None = None) -> str:
        """Say that ``cause_id`` caused (or informed) ``effect_id``; refuses links that would close a cycle."""
        self.check("write", "decision.link", f"{cause_id} {effect_id}")
        if relationship not in CAUSAL_TYPES:
            raise ValidationError(f"relationship must be one of {list(CAUSAL_TYPES)}, got {relationship!r}",
                                  relationship=relationship)
        found = self.seen(self.store.get_nodes([cause_id, effect_id]))
        for did in (cause_id, effect_id):
            if did not in found or found[did].kind != DECISION:
                raise NotFoundError(f"no decision {did!r}; record it first", decision_id=did)
        from .causal import CausalChainAnalyzer

        # Cycles are looked for in every recorded link (as the owner), but only what the principal sees is named.
        path = CausalChainAnalyzer(self.graph, namespace=self.namespace, principal=self.ws.owner).path(effect_id,
                                                                                                    cause_id)
        if cause_id == effect_id or path:
            cycle = [cause_id, *(path or [cause_id])]
            shown = [x for x in cycle if x in self.seen(self.store.get_nodes(cycle))]
            raise CycleError(f"linking {cause_id} -> {effect_id} would make a causal cycle: {' -> '.join(shown)}"
                             + (" (through decisions you may not read)" if len(shown) < len(cycle) else ""),
                             cycle=shown)
        edge = Edge(cause_id, relationship, effect_id, namespace=self.namespace, weight=weight,
                    props=dict(properties or {}))
        with self.store.transaction():
            self.store.put_edges([edge], actor=self.actor)
            self.audit("decision.link", f"{self.namespace}/{cause_id} {relationship} {effect_id}")
        return edge.id

    def link_precedent(self, decision_id: str, precedent_id: str, relationship_type: str = "similar_scenario",
                       similarity_score: float | None = None, metadata: dict[str, Any] | None = None) -> Precedent:
        """Record that ``decision_id`` followed the earlier decision ``precedent_id``."""
        self.check("write", "decision.link", f"{decision_id} {precedent_id}")
        if relationship_type not in PRECEDENT_TYPES:
            raise ValidationError(f"relationship_type must be one of {list(PRECEDENT_TYPES)}, got "
                                  f"{relationship_type!r}", relationship_type=relationship_type)
        found = self.seen(self.store.get_nodes([decision_id, precedent_id]))
        for did in (decision_id, precedent_id):
            if did not in found or found[did].kind != DECISION:
                raise NotFoundError(f"no decision {did!r}; record it first", decision_id=did)
        score = float(similarity_score) if similarity_score is not None else 0.0
        props = {"relationship_type": relationship_type, "similarity_score": score, "metadata": dict(metadata or {})}
        edge = Edge(decision_id, PRECEDENT, precedent_id, namespace=self.namespace, weight=score, props=props)
        with self.store.transaction():
            self.store.put_edges([edge], actor=self.actor)
            self.audit("decision.link", f"{self.namespace}/{decision_id} {PRECEDENT} {precedent_id}")
        return Precedent(precedent_id=edge.id, source_decision_id=precedent_id, similarity_score=score,
                         relationship_type=relationship_type, metadata={"decision_id": decision_id,
                                                                        **(metadata or {})})

    # --- reading ---------------------------------------------------------------------------
    def get_decision(self, decision_id: str, as_of: str | datetime | None = None,
                     with_embedding: bool = False) -> Decision:
        self.check("read", "decision.read", decision_id)
        node = self.visible_node(decision_id, as_of=to_utc_iso(as_of))
        if node is None or node.kind != DECISION:
            raise NotFoundError(f"no decision {decision_id!r}", decision_id=decision_id)
        d = decision_from_node(node)
        if with_embedding and node.embed_hash:
            vec = self.store.get_vectors([node.embed_hash], self.ws.model_name).get(node.embed_hash)
            d.reasoning_embedding = vec.tolist() if vec is not None else None
        if with_embedding and self._handle is not None and self._handle.node_embeddings:
            # structural, Node2Vec, over the part of the graph the principal reads (a vector of the whole graph
            # would depend on records it may not read)
            structural = self.graph_view().embeddings.by_store_id([node.id]).get(node.id)
            d.node2vec_embedding = structural.tolist() if structural is not None else None
        return d

    def _embeddings(self) -> Any:
        """The graph's Node2Vec embeddings over the part of it the principal reads, or a ValidationError when its
        node_embeddings flag is off."""
        if self._handle is None or self._handle.embeddings is None or not self._handle.node_embeddings:
            raise ValidationError("Node2Vec precedents need a graph with node_embeddings=True "
                                  "(ContextGraph(node_embeddings=True))", option="node_embeddings")
        return self.graph_view().embeddings

    def get_decisions(self, ids: Sequence[str]) -> dict[str, Decision]:
        self.check("read", "decision.read")
        return {i: decision_from_node(n) for i, n in self.seen(self.store.get_nodes(ids)).items()
                if n.kind == DECISION}

    def list_decisions(self, category: str | None = None, limit: int | None = None,
                       valid_at: str | datetime | None = None) -> list[Decision]:
        self.check("read", "decision.read")
        tags = [f"category:{category}"] if category else None
        nodes = self.store.find_nodes(namespace=self.namespace, kind=DECISION, tags=tags, order="recorded",
                                      valid_at=to_utc_iso(valid_at), limit=limit)
        return [decision_from_node(n) for n in nodes]

    def links_of(self, ids: Sequence[str]) -> dict[str, set[str]]:
        """Entity and policy node ids each decision is linked to (its structural signature), of those the
        principal sees, over links of namespaces it reads (``structural_links``)."""
        out: dict[str, set[str]] = {i: set() for i in ids}
        if ids:
            edges = self.structural_links(src=list(ids))
            seen = self.seen(self.store.get_nodes({e.dst for e in edges})) if self.sees() else None
            for e in edges:
                if seen is None or e.dst in seen:
                    out[e.src].add(e.dst)
        return out

    def structural_links(self, limit: int | None = None, **where: Any) -> list[Edge]:
        """The first ``limit`` ``involves`` / ``applies_policy`` edges (``store.edges(**where)``) of namespaces the
        principal reads: a link another namespace holds between a decision and an entity is that namespace's record
        (Sight.follows), so it neither counts nor takes the place of one the principal reads."""
        follows = self.follows()
        if follows is None or limit is None:
            edges = self.store.edges(type=list(STRUCTURAL_TYPES), limit=limit, **where)
            return edges if follows is None else [e for e in edges if follows(e.namespace)]
        out: list[Edge] = []
        offset = 0
        while len(out) < limit:
            page = self.store.edges(type=list(STRUCTURAL_TYPES), offset=offset, limit=limit, **where)
            out.extend(e for e in page if follows(e.namespace))
            if len(page) < limit:
                break
            offset += len(page)
        return out[:limit]

    # --- precedents (precedents.py: signals fused by engine/fusion) ---------------------------
    def query_links(self, scenario: str, entities: Sequence[str] | None,
                    policies: Sequence[str] | None) -> set[str]:
        """The store ids of the entities and policies a precedent query is about (precedents.query_links)."""
        return precedents.query_links(self, scenario, entities, policies)

    def visible_ids(self) -> Callable[[list[str]], set[str]] | None:
        """For walks: which of some store ids the principal may read (None: all of them)."""
        return precedents.visible_ids(self)

    def anchors(self, scenario: str, links: set[str]) -> dict[str, float]:
        """Where graph proximity is measured from (precedents.anchors)."""
        return precedents.anchors(self, scenario, links)

    def find_precedents(
        self,
        scenario: str,
        category: str | None = None,
        limit: int = 5,
        use_hybrid_search: bool = True,
        max_hops: int = 2,
        as_of: str | datetime | None = None,
        entities: Sequence[str] | None = None,
        policies: Sequence[str] | None = None,
        proximity_weight: float | None = None,
        min_similarity: float = 0.0,
        exclude: Sequence[str] | None = None,
        structural: str = "links",
        node2vec: bool | None = None,
    ) -> list[Decision]:
        """Past decisions most like ``scenario``, best first, with their scores in ``metadata`` (all in [0, 1],
        absolute: comparable across queries, so ``min_similarity`` filters).

        - ``semantic_score``: the cosine of the scenario and each decision's scenario + reasoning embedding,
          through the relevance curve memory scores use (``engine/fusion.RELEVANCE``: 0.5 at cosine ~0.36,
          unrelated text < 0.05).
        - ``structural_score`` (``use_hybrid_search``): Jaccard overlap of the decision's linked entities and
          policies with the query's (``entities=`` / ``policies=``, else the graph entities and policies the
          scenario names); when the query has any, ``hybrid_score = RELEVANCE(0.7 * cosine + 0.3 * structural)``
          (else the semantic score). ``max_hops >= 2``
          also pulls in decisions linked to those entities that were not near in meaning.
        - ``proximity_score`` (seed 003's ``proximity_weight``, default the context's, else 0): graph proximity
          (``engine/proximity``) of the decision to the query's anchors, ``relevance / (1 + hops)`` within
          ``max_hops`` edges; the anchors are the query's entities and policies, else those its text matches.
          ``combined_score = (1 - proximity_weight) * hybrid_score + proximity_weight * proximity_score``
          (= ``0.7 * semantic + 0.3 * proximity`` at weight 0.3 when nothing structural applies), and
          ``similarity`` is the combined score.

        ``as_of`` keeps only decisions whose validity window contains that time.
        ``structural`` says what the structural score is: ``links`` (the Jaccard overlap), ``node2vec`` (the
        cosine of the decision's Node2Vec vector with the mean vector of the query's entities and policies;
        needs ``node_embeddings`` on the graph) or ``blend`` (their mean).

        Each decision carries its ``reasoning_embedding``; its ``node2vec_embedding`` too when the Node2Vec vectors
        are computed anyway (``structural`` node2vec or blend) or ``node2vec=True`` asks for them (Node2Vec over a
        graph of thousands of nodes takes minutes, and is redone after every change: not done unasked).
        """
        return precedents.find_precedents(self, scenario, category, limit, use_hybrid_search, max_hops, as_of,
                                          entities, policies, proximity_weight, min_similarity, exclude, structural,
                                          node2vec)

    def with_embeddings(self, decisions: list[Decision], node2vec: bool = False) -> list[Decision]:
        """Fill each decision's ``reasoning_embedding`` (its scenario + reasoning vector) and, with ``node2vec`` on
        a graph with ``node_embeddings``, its ``node2vec_embedding`` (structural, over what the principal reads), as
        seed 003's Decision documents."""
        nodes = self.store.get_nodes([d.decision_id for d in decisions])
        hashes = {i: n.embed_hash for i, n in nodes.items() if n.embed_hash}
        vectors = self.store.get_vectors(sorted(set(hashes.values())), self.ws.model_name) if hashes else {}
        structural = {}
        if node2vec and decisions and self._handle is not None and self._handle.node_embeddings:
            structural = self.graph_view().embeddings.by_store_id([d.decision_id for d in decisions])
        for d in decisions:
            vec = vectors.get(hashes.get(d.decision_id, ""))
            d.reasoning_embedding = vec.tolist() if vec is not None else None
            if d.decision_id in structural:
                d.node2vec_embedding = structural[d.decision_id].tolist()
        return decisions
    def keyword_precedents(self, scenario: str, category: str | None = None, limit: int = 5,
                           as_of: str | datetime | None = None) -> list[Decision]:
        """Precedents by words alone (BM25 over scenario, outcome and reasoning), no embeddings."""
        return precedents.keyword_precedents(self, scenario, category, limit, as_of)

    def query_decisions(self, query: str, max_hops: int = 2, use_hybrid_search: bool = True,
                        limit: int = 10, category: str | None = None) -> list[Decision]:
        """Broad decision search: meaning and keywords, then causal neighbours up to ``max_hops``.

        ``similarity`` is absolute in [0, 1]: ``RELEVANCE(cosine + 0.3 * keywords)`` (engine/fusion.py), where
        ``keywords`` is the decision's BM25 relative to the best hit times the share of the query's words that
        hit holds; a causal neighbour ``h`` hops away gets ``0.5 ** h`` of the score that reached it."""
        return precedents.query_decisions(self, query, max_hops, use_hybrid_search, limit, category)


def _recorder(graph: Any) -> DecisionRecorder:
    return DecisionRecorder(graph)


def record_decision(graph: Any, category: str, scenario: str, reasoning: str, outcome: str, confidence: float,
                    entities: Sequence[str] | None = None, decision_maker: str = "", **kwargs: Any) -> str:
    return _recorder(graph).record_decision(category, scenario, reasoning, outcome, confidence, entities,
                                            decision_maker, **kwargs)


def record_decisions(graph: Any, items: Iterable[dict[str, Any] | Decision], batch_size: int = BATCH) -> list[str]:
    return _recorder(graph).record_decisions(items, batch_size)


def find_precedents(graph: Any, scenario: str, category: str | None = None, limit: int = 5,
                    **kwargs: Any) -> list[Decision]:
    return _recorder(graph).find_precedents(scenario, category=category, limit=limit, **kwargs)


def find_precedents_by_scenario(graph: Any, scenario: str, category: str | None = None, limit: int = 5,
                                use_semantic_search: bool = True, as_of: str | datetime | None = None,
                                **kwargs: Any) -> list[dict[str, Any]]:
    """ContextGraph's form: dicts (the decision's fields plus ``similarity``), best first."""
    rec = _recorder(graph)
    if use_semantic_search:
        found = rec.find_precedents(scenario, category=category, limit=limit, as_of=as_of, **kwargs)
    else:
        found = rec.keyword_precedents(scenario, category=category, limit=limit, as_of=as_of)
    out = []
    for d in found:
        row = d.to_dict()
        row["similarity"] = d.metadata.get("similarity")
        row["id"] = d.decision_id
        out.append(row)
    return out


__all__ = ["DecisionRecorder", "record_decision", "record_decisions", "find_precedents",
           "find_precedents_by_scenario", "policy_node_id"]
