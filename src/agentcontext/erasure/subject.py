"""What an erasure finds before it changes anything: the entity's node and names, the decisions recorded about
it (with their exceptions and approvals), and the records that mention it without being part of it.

A mention is found by the entity links (``mentions`` edges into the entity, memory metadata naming it in a
memory store other than the one being erased) and by text: the text index's phrase search for each of the
entity's names (its id, name, title and aliases), confirmed word for word in the record's text, and a scan of
every version of every record (``Store.nodes_holding``) for what the text index does not hold: metadata values,
superseded versions and retracted records.

Everything here reads retracted records and edges too: a record withdrawn before the erasure (a memory an
``infer=True`` store deleted, a node ``retract_node`` withdrew, the entity's own node) still holds its text in
the store's history, so it is found, and erased, like a live one.
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


def names_of(entity_id: str, node: Any, versions: Iterable[Any] = ()) -> list[str]:
    """The surface forms the entity goes by: its id, and the key, title, name and aliases of its node (and of every
    earlier version of it)."""
    found = [entity_id]
    for n in (node, *versions):
        if n is None:
            continue
        props = n.props or {}
        aliases = props.get("aliases") or []
        aliases = [aliases] if isinstance(aliases, str) else aliases
        found += [n.key, n.title, str(props.get("name") or ""), *(a for a in aliases if isinstance(a, str))]
    out: dict[tuple[str, ...], str] = {}
    for name in found:
        key = tuple(words(name or ""))
        if key and sum(len(w) for w in key) >= 3:  # "AI" would match half the store
            out.setdefault(key, name)
    return list(out.values())


def props_text(value: Any) -> list[str]:
    """Every string held in a props value (nested dicts and lists walked), for a word-for-word look."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def held_words(node: Any) -> list[list[str]]:
    """The words of a record's text (key, title, summary, content) and of each string in its props."""
    text = [words(" ".join((node.key or "", node.title or "", node.summary or "", node.content or "")))]
    return text + [words(v) for v in props_text(node.props or {})]


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
                                                   "retracted": node.retracted_at is not None, "via": []})
        if via not in entry["via"]:
            entry["via"].append(via)


def decisions_about(store: Any, targets: Iterable[str]) -> tuple[list[str], list[str]]:
    """Decisions linked to any of ``targets`` by ``involves`` (retracted ones too), and their exceptions and
    approvals."""
    found = [e.src for e in store.edges(dst=list(targets), type=INVOLVES, include_retracted=True)]
    kinds = store.get_nodes(found, include_retracted=True)
    decisions = list(dict.fromkeys(i for i in found if i in kinds and kinds[i].kind == DECISION))
    return decisions, attached_to(store, decisions)


def attached_to(store: Any, decisions: list[str]) -> list[str]:
    if not decisions:
        return []
    return list(dict.fromkeys(e.dst for e in store.edges(src=decisions, type=[HAS_EXCEPTION, APPROVED_BY],
                                                         include_retracted=True)))


def find(store: Any, entity_id: str, node_id: str | None, memory_namespace: str | None) -> Subject:
    """Read what ``store`` holds about ``entity_id`` (``node_id``: its node's store id, if any)."""
    node = store.get_node(node_id, include_retracted=True) if node_id else None
    subject = Subject(entity_id, node, names_of(entity_id, node, store.node_versions(node_id) if node_id else ()))
    targets = [t for t in dict.fromkeys([entity_id, node_id]) if t]
    linked = about(store, entity_id, include_retracted=True)  # memories whose metadata names it, in every store
    subject.memories = [n.id for n in linked if n.namespace == memory_namespace]
    subject.decisions, subject.attached = decisions_about(store, targets)
    for n in linked:
        subject.mention(n, "metadata")
    sources = [e.src for e in store.edges(dst=targets, type=MENTIONS, include_retracted=True)]
    for n in store.get_nodes(sources, include_retracted=True).values():
        subject.mention(n, "link")
    text_mentions(store, subject)
    return subject


def text_mentions(store: Any, subject: Subject) -> None:
    """Records whose text or metadata, in any version, live or retracted, holds one of the entity's names, word
    for word: the live text through the text index, everything else through one scan of every version."""
    wanted = [words(name) for name in subject.names]
    for name, needle in zip(subject.names, wanted):
        ids = [i for i in store.phrase_search(name) if i != subject.node_id]
        for n in store.get_nodes(ids).values():
            if _contains(held_words(n)[0], needle):
                subject.mention(n, "text")
    known = {subject.node_id, *subject.memories, *subject.decisions, *subject.attached}  # erased whatever they hold
    candidates = [i for i in store.nodes_holding([" ".join(w) for w in wanted]) if i not in known]
    current = store.get_nodes(candidates, include_retracted=True)
    for i in candidates:
        node = current.get(i)
        if node is None or node.kind == CHECKPOINT:  # checkpoints are rewritten by their own leg
            continue
        for version in [node, *store.node_versions(i)]:
            text, *props = held_words(version)
            if any(_contains(text, needle) for needle in wanted):
                subject.mention(node, "text")
            if any(_contains(value, needle) for value in props for needle in wanted):
                subject.mention(node, "props")


def action_for(entry: dict[str, Any]) -> str:
    """What ``erase_mentions=True`` does to a mention: which leg takes it. A retracted ``lib:`` doc or graph node
    is purged whole (there is no live version to rewrite)."""
    ns, kind = entry["namespace"], entry["kind"]
    if kind == DECISION:
        return "decision"
    if kind == MEMORY and ns.startswith("memory:"):
        return "memory"
    if ns.startswith("pkg:"):
        return "read_only"
    if ns.startswith("lib:") and not entry.get("retracted"):
        return "doc"
    return "graph"
