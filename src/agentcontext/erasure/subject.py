"""What an erasure finds before it changes anything: the entity's node and names, the decisions recorded about
it (with their exceptions and approvals), and the records that mention it without being part of it.

A mention is found by the entity links (``mentions`` edges into the entity, memory metadata naming it in a
memory store other than the one being erased) and by text: the text index's phrase search for each of the
entity's names (its id, name, title and aliases), confirmed word for word in the record's text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..decisions.common import APPROVED_BY, DECISION, HAS_EXCEPTION, INVOLVES
from ..memory.links import MENTIONS
from ..memory.purge import about
from ..memory.records import KIND as MEMORY

_WORDS = re.compile(r"\w+")
CHECKPOINT = "checkpoint"


def words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def names_of(entity_id: str, node: Any) -> list[str]:
    """The surface forms the entity goes by: its id, and the node's key, title, name and aliases."""
    found = [entity_id]
    if node is not None:
        props = node.props or {}
        aliases = props.get("aliases") or []
        found += [node.key, node.title, str(props.get("name") or ""), *(a for a in aliases if isinstance(a, str))]
    out: dict[tuple[str, ...], str] = {}
    for name in found:
        key = tuple(words(name or ""))
        if key and sum(len(w) for w in key) >= 3:  # "AI" would match half the store
            out.setdefault(key, name)
    return list(out.values())


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    first = needle[0]
    return any(haystack[i] == first and haystack[i: i + n] == needle for i in range(len(haystack) - n + 1))


@dataclass
class Subject:
    """Everything one store holds about one entity (ids are store ids)."""

    entity_id: str
    node: Any = None  # the entity's node, when the graph has one
    names: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)  # the bound memory store's memories about it
    decisions: list[str] = field(default_factory=list)
    attached: list[str] = field(default_factory=list)  # exceptions and approvals of those decisions
    mentions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def node_id(self) -> str | None:
        return self.node.id if self.node is not None else None

    def mention(self, node: Any, via: str) -> None:
        if node.id == self.node_id or node.id in self.memories or node.id in self.decisions \
                or node.id in self.attached or node.kind == CHECKPOINT:
            return
        entry = self.mentions.setdefault(node.id, {"id": node.id, "kind": node.kind, "namespace": node.namespace,
                                                   "via": []})
        if via not in entry["via"]:
            entry["via"].append(via)


def decisions_about(store: Any, targets: Iterable[str]) -> tuple[list[str], list[str]]:
    """Decisions linked to any of ``targets`` by ``involves``, and their exceptions and approvals."""
    found = [e.src for e in store.edges(dst=list(targets), type=INVOLVES)]
    kinds = store.get_nodes(found)
    decisions = list(dict.fromkeys(i for i in found if i in kinds and kinds[i].kind == DECISION))
    return decisions, attached_to(store, decisions)


def attached_to(store: Any, decisions: list[str]) -> list[str]:
    if not decisions:
        return []
    return list(dict.fromkeys(e.dst for e in store.edges(src=decisions, type=[HAS_EXCEPTION, APPROVED_BY])))


def find(store: Any, entity_id: str, node_id: str | None, memory_namespace: str | None) -> Subject:
    """Read what ``store`` holds about ``entity_id`` (``node_id``: its node's store id, if any)."""
    node = store.get_node(node_id) if node_id else None
    subject = Subject(entity_id, node, names_of(entity_id, node))
    targets = [t for t in dict.fromkeys([entity_id, node_id]) if t]
    linked = about(store, entity_id)  # memories whose metadata names it, in every memory store
    subject.memories = [n.id for n in linked if n.namespace == memory_namespace]
    subject.decisions, subject.attached = decisions_about(store, targets)
    for n in linked:
        subject.mention(n, "metadata")
    sources = [e.src for e in store.edges(dst=targets, type=MENTIONS)]
    for n in store.get_nodes(sources).values():
        subject.mention(n, "link")
    text_mentions(store, subject)
    return subject


def text_mentions(store: Any, subject: Subject) -> None:
    """Records whose text holds one of the entity's names, word for word."""
    for name in subject.names:
        wanted = words(name)
        ids = [i for i in store.phrase_search(name) if i != subject.node_id]
        for n in store.get_nodes(ids).values():
            text = words(" ".join((n.key or "", n.title or "", n.summary or "", n.content or "")))
            if _contains(text, wanted):
                subject.mention(n, "text")


def action_for(entry: dict[str, Any]) -> str:
    """What ``erase_mentions=True`` does to a mention: which leg takes it."""
    ns, kind = entry["namespace"], entry["kind"]
    if kind == DECISION:
        return "decision"
    if kind == MEMORY and ns.startswith("memory:"):
        return "memory"
    if ns.startswith("pkg:"):
        return "read_only"
    if ns.startswith("lib:"):
        return "doc"
    return "graph"
