"""The sources a cited context is built from, each with a stable id, and how each kind of node reads as text.

Stable ids: a memory's id (``mem_...``), a knowledge doc's ``pack#selector``, a decision's id, and for any
other graph node its store id (``graph:<name>/<node id>``). Every source carries a relevance ``score`` in
[0, 1]; where it comes from is per origin:

- ``memory_search``: the memory retriever's score (dense + BM25 + context, absolute in [0, 1]);
- ``knowledge_search``: ``search_knowledge``'s score divided by ``DOC_FULL_SCORE`` (a doc whose title and
  summary hold every query term and whose meaning matches scores 1), capped at 1;
- ``decision_search``: the decision index's similarity (meaning + keywords), capped at 1;
- ``graph_match``: a graph node the query names: cosine of the query and the node's text;
- ``graph_expansion``: ``seed score * edge weight * HOP_DECAY ** hops`` (see expand.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..model import Node, utcnow

DOC_FULL_SCORE = 6.5  # knowledge/search.py WEIGHTS: title 3 + summary 2 + meaning 1.5
MAX_PROPS = 12
MAX_RELATIONS = 12
MEMORY, DOC, DECISION = "memory", "doc", "decision"
MENTIONS = "mentions"  # the entity-link edge type memory/links.py writes (memory ranks above this service)
PACK_PREFIXES = ("lib:", "pkg:")


@dataclass
class Source:
    id: str
    kind: str
    content: str
    score: float
    title: str = ""
    origin: str = ""
    node_id: str | None = None  # the store id, when the source is a node (expansion walks from it)
    hops: int = 0
    seed: str | None = None  # for an expanded source: the id of the source it was reached from
    steps: list[dict[str, str]] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    truncated: bool = False

    def to_dict(self, label: int | None = None, with_content: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "title": self.title,
                               "score": round(self.score, 4), "origin": self.origin, "hops": self.hops,
                               "tokens": self.tokens, "truncated": self.truncated,
                               "signals": {k: round(v, 4) for k, v in self.signals.items()},
                               "metadata": self.metadata}
        if label is not None:
            out = {"label": label, **out}
        if with_content:
            out["content"] = self.content
        return out


def clamp(value: Any) -> float:
    try:
        return max(0.0, min(1.0, float(value)))
    except (TypeError, ValueError):
        return 0.0


def is_pack(namespace: str) -> bool:
    return namespace.startswith(PACK_PREFIXES)


def source_id(node: Node) -> str:
    """The stable id a node is cited by."""
    return f"{node.namespace}#{node.key}" if is_pack(node.namespace) else node.id


def kind_of(node: Node) -> str:
    return DOC if is_pack(node.namespace) else node.kind


def display_name(node: Node) -> str:
    """A short human name for a node: a memory by its first words, anything else by its title or key."""
    if node.kind == MEMORY and not is_pack(node.namespace):
        words = node.content.split()
        return " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
    return node.title or node.key or node.id


def node_text(node: Node, relations: Iterable[str] = ()) -> str:
    """What a model reads for one node: a memory with its date and speaker, a decision with its outcome and
    reasoning, a doc's body, any other node with its properties and typed relations."""
    props = node.props or {}
    if node.kind == MEMORY and not is_pack(node.namespace):
        who = f"{node.title}: " if node.title else ""
        when = f"({node.summary}) " if node.summary else ""
        return f"{when}{who}{node.content}"
    if node.kind == DECISION and not is_pack(node.namespace):
        return decision_text(props.get("category", ""), node.title, props.get("outcome", node.summary),
                             node.content, props.get("confidence"), props.get("decision_maker", ""),
                             props.get("timestamp", ""))
    if is_pack(node.namespace):
        head = node.title or node.key
        return f"{head}\n{node.content or node.summary}".strip()
    lines = [f"{node.title or node.key} ({node.kind})"]
    if node.content or node.summary:
        lines.append(node.content or node.summary)
    scalars = [(k, v) for k, v in sorted(props.items()) if isinstance(v, (str, int, float, bool)) and str(v)]
    if scalars:
        lines.append("; ".join(f"{k}: {v}" for k, v in scalars[:MAX_PROPS]))
    lines.extend(relations)
    return "\n".join(lines)


def decision_text(category: str, scenario: str, outcome: str, reasoning: str, confidence: Any,
                  maker: str, timestamp: Any) -> str:
    parts = [f"Decision ({category}): {scenario}", f"Outcome: {outcome}"]
    if reasoning:
        parts.append(f"Reasoning: {reasoning}")
    tail = []
    if isinstance(confidence, (int, float)):
        tail.append(f"confidence {float(confidence):.2f}")
    if maker:
        tail.append(f"by {maker}")
    if timestamp:
        tail.append(f"at {timestamp}")
    if tail:
        parts.append(", ".join(tail))
    return ". ".join(parts)


def relation_lines(store: Any, node: Node, readable: Callable[[Node], bool]) -> list[str]:
    """``-[type]-> Target`` / ``<-[type]- Source`` lines for a node's typed edges now valid (the facts of a graph
    node), naming only other nodes of this store that ``readable`` admits. Entity links from memories
    (``mentions``) are not facts about the node and are left to expansion."""
    now = utcnow()
    edges = [e for e in [*store.edges(src=node.id, valid_at=now), *store.edges(dst=node.id, valid_at=now)]
             if e.type != MENTIONS]
    others = store.get_nodes(list({e.dst if e.src == node.id else e.src for e in edges})) if edges else {}
    names = {nid: display_name(other) for nid, other in others.items() if readable(other)}
    lines = []
    for e in edges:
        other = e.dst if e.src == node.id else e.src
        if other in names:
            lines.append(f"-[{e.type}]-> {names[other]}" if e.src == node.id else f"<-[{e.type}]- {names[other]}")
    return lines[:MAX_RELATIONS]


def node_source(store: Any, node: Node, score: float, origin: str, readable: Callable[[Node], bool] | None = None,
                **extra: Any) -> Source:
    """A Source for a store node; a graph node gets its typed relations in its text (when ``readable`` is given:
    it decides which neighbours may be named)."""
    plain = node.kind in (MEMORY, DECISION) or is_pack(node.namespace)
    relations = [] if plain or readable is None else relation_lines(store, node, readable)
    meta: dict[str, Any] = {"namespace": node.namespace}
    if is_pack(node.namespace):
        meta.update(pack=node.namespace, selector=node.key, doc_kind=node.kind, summary=node.summary)
    elif node.kind == MEMORY:
        props = node.props or {}
        meta.update({k: props.get(k) for k in ("conversation_id", "user_id", "created_at") if props.get(k)})
    elif node.kind == DECISION:
        meta.update(category=(node.props or {}).get("category"), outcome=(node.props or {}).get("outcome"))
    return Source(id=source_id(node), kind=kind_of(node), content=node_text(node, relations), score=clamp(score),
                  title=display_name(node), origin=origin, node_id=node.id, metadata=meta, **extra)
