"""Entities found in text: ``mentions`` edges from a memory, a doc or a message to the known entities it names.

The known entities of a graph are its ``entity`` nodes (EntityLinker's, decisions' and memories'
entities) and every other node a user put in a ``graph:`` namespace (``add_node("Acme", "company")``),
records aside (memories, messages, conversations, decisions, policies and their exceptions and
approvals, checkpoints, cross-graph links). Each is known by its name, title, id and stored aliases.

The matcher (engine/mentions.py) is a live structure of the workspace (``Workspace.live``): built once,
it follows the change log and re-indexes only the entities that changed, so storing memories one at
a time never rebuilds 10,000 entities. ``link_texts`` writes the edges (``mentions``, with ``via:
text``, the rule, the surface and the score in their properties); an edge a record already has
(say from its metadata's ``entities``) is left as it is, so a second run changes nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from .. import access
from ..engine.mentions import Mention, MentionMatcher
from ..engine.names import strip_suffixes, tokens
from ..model import Edge, Node
from ..store.base import Store
from .protocol import GraphLike

MENTIONS = "mentions"
ENTITY = "entity"
RECORD_KINDS = frozenset({"memory", "message", "conversation", "decision", "policy", "policy_exception",
                          "approval", "checkpoint", "graph_link", "context_block"})
REBUILD_AFTER = 50_000  # more changes than this since the last refresh: rebuild the matcher


def linkable(node: Node) -> bool:
    """Whether a node is a known entity that text may mention."""
    return node.kind == ENTITY or (node.namespace.startswith("graph:") and node.kind not in RECORD_KINDS)


def names_of(node: Node) -> tuple[list[str], list[str]]:
    """(names, aliases) a node is known by: its name and title (a node added without a name is titled by its
    id: "acme_corp" is known as "acme corp" too; an id is no name when the node has one); its aliases."""
    props = node.props or {}
    names = [str(props.get("name") or ""), node.title or ""]
    if node.title and node.title == node.key and "_" in node.key:
        names.append(node.key.replace("_", " "))
    aliases = [a for a in props.get("aliases") or [] if isinstance(a, str)]
    return list(dict.fromkeys(n for n in names if n)), aliases


def _in_scope(scope: Any, namespace: str) -> bool:
    return scope is None or (namespace == scope if isinstance(scope, str) else namespace in scope)


def _candidates(graph: GraphLike) -> list[Node]:
    store, scope = graph.store, graph.scope
    graph_spaces = [ns for ns in store.namespaces() if ns.startswith("graph:") and _in_scope(scope, ns)]
    found = {n.id: n for n in store.find_nodes(namespace=scope, kind=ENTITY, with_content=False, order="none")}
    if graph_spaces:
        found.update({n.id: n for n in store.find_nodes(namespace=graph_spaces, with_content=False, order="none")})
    return [n for n in found.values() if linkable(n)]


def _build(graph: GraphLike) -> MentionMatcher:
    counter = graph.store.change_counter()
    matcher = MentionMatcher()
    for node in _candidates(graph):
        matcher.add(node.id, *names_of(node))
    matcher.counter = counter
    return matcher


def _refresh(current: MentionMatcher | None, graph: GraphLike) -> MentionMatcher:
    store = graph.store
    counter = store.change_counter()
    if current is not None and current.counter == counter:
        return current
    if current is None or current.counter < 0 or current.counter > counter:
        return _build(graph)
    changes = store.changes_since(current.counter, limit=REBUILD_AFTER + 1)
    if len(changes) > REBUILD_AFTER:
        return _build(graph)
    touched: set[str] = set()
    scope = graph.scope
    for ch in changes:
        if ch.op == "node.put":
            kind = ch.detail.get("kind")
            if ch.target in current.entity_keys or (_in_scope(scope, ch.namespace) and (
                    kind == ENTITY or (ch.namespace.startswith("graph:") and kind not in RECORD_KINDS))):
                touched.add(ch.target)
        elif ch.op in ("node.retract", "node.purge") and ch.target in current.entity_keys:
            touched.add(ch.target)
    if touched:
        nodes = store.get_nodes(sorted(touched))
        for sid in touched:
            node = nodes.get(sid)
            if node is not None and linkable(node) and _in_scope(scope, node.namespace):
                current.add(sid, *names_of(node))
            else:
                current.remove(sid)
    current.counter = changes[-1].seq if changes else counter
    return current


def matcher(graph: GraphLike) -> MentionMatcher:
    """The graph's mention matcher, brought up to date with the store."""
    return graph.workspace.live(f"mentions[{graph.scope!r}]", lambda current: _refresh(current, graph))


def find(graph: GraphLike, text: str) -> list[Mention]:
    """The known entities ``text`` names (store ids), in order of appearance."""
    return matcher(graph).scan(text)


def resolve_name(graph: GraphLike, name: str) -> str | None:
    """The one known entity that all of ``name`` denotes by the linker's rules ("acme" and "ACME Corp" for
    "Acme Corp."; legal suffixes on either side aside), or None."""
    written = tokens(name)
    core = strip_suffixes([w.lower() for w in written])
    for words in ([*written], written[:len(core)]):  # as written, then without its legal suffixes
        if not words:
            continue
        found = matcher(graph).scan(" ".join(words))
        if len(found) == 1 and not found[0].ambiguous and found[0].start == 0 and \
                len(tokens(found[0].surface)) == len(words):
            return found[0].entities[0]
    return None


def link_texts(graph: GraphLike, items: Sequence[tuple[str, str, str]], actor: str = "",
               skip: dict[str, set[str]] | None = None, store: Store | None = None) -> dict[str, Any]:
    """``mentions`` edges for each (source store id, its text, the namespace that holds the edge).

    ``skip`` names, per source, entities it is already linked to (their edges stay as they are); the
    edges a source already has are skipped too. The edges go to ``store`` (the sources' store, which is
    the graph's unless a memory keeps its own). Returns counts and the links made."""
    m = matcher(graph)
    store = store if store is not None else graph.store
    sources = [sid for sid, _, _ in items]
    have: dict[str, set[str]] = {sid: set(s) for sid, s in (skip or {}).items()}
    for start in range(0, len(sources), 500):
        for e in store.edges(src=sources[start: start + 500], type=MENTIONS):
            have.setdefault(e.src, set()).add(e.dst)
    edges: list[Edge] = []
    links: list[dict[str, Any]] = []
    scanned = [(sid, namespace, m.scan(text or "")) for sid, text, namespace in items]
    hidden: set[str] = set()
    if graph.restricted:  # link only to entities the acting principal may read (an edge would reveal one)
        named = sorted({e for _, _, found in scanned for mention in found for e in mention.entities})
        nodes = graph.store.get_nodes(named)
        hidden = {e for e in named if e not in nodes or not graph.sees(nodes[e])}
    for sid, namespace, found in scanned:
        mine = have.get(sid, set())
        position = len(mine)
        for mention in found:
            for entity in mention.entities:
                if entity == sid or entity in mine or entity in hidden:
                    continue
                mine = mine | {entity}
                props = {"via": "text", "rule": mention.rule, "surface": mention.surface, "score": mention.score,
                         "count": mention.count}
                if mention.ambiguous:
                    props["ambiguous"] = True
                edges.append(Edge(src=sid, type=MENTIONS, dst=entity, namespace=namespace, weight=mention.score,
                                  props=props, position=position))
                links.append({"source": sid, "entity": entity, "rule": mention.rule, "surface": mention.surface})
                position += 1
    if edges:
        store.put_edges(edges, actor=actor)
    return {"scanned": len(items), "linked": len(edges), "entities": len(m), "links": links}


def text_of(node: Node) -> str:
    """What a record says: title, summary and content."""
    return "\n".join(x for x in (node.title, node.summary, node.content) if x)


def link_nodes(graph: GraphLike, namespaces: Iterable[str], kinds: Sequence[str] | None = None,
               batch: int = 2000, actor: str = "",
               progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Link every record of ``namespaces`` (of ``kinds``, default all but the entities themselves) to the
    entities its text names. Memories hold their own edges; other records' edges live in the graph's namespace
    (a ``pkg:`` doc is read-only, so the graph keeps its links). ``progress(done, total)`` is told after each
    batch (records read so far, records in all the namespaces)."""
    store = graph.store
    totals = {"scanned": 0, "linked": 0}
    listed = [(ns, store.node_ids(ns)) for ns in namespaces]
    total, done = sum(len(ids) for _, ids in listed), 0
    if progress is not None:
        progress(0, total)
    for ns, ids in listed:
        holder = ns if ns.startswith("memory:") else graph.namespace
        for start in range(0, len(ids), batch):
            nodes = store.get_nodes(ids[start: start + batch])
            items = [(n.id, text_of(n), holder) for n in nodes.values()
                     if (kinds is None or n.kind in kinds) and not linkable(n)]
            found = link_texts(graph, items, actor)
            totals["scanned"] += found["scanned"]
            totals["linked"] += found["linked"]
            done += len(ids[start: start + batch])
            if progress is not None:
                progress(done, total)
    return totals


def link_mentions(graph: GraphLike, namespaces: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """``ContextGraph.link_mentions`` once its write check passed: the namespaces it may scan (read on each, write
    on a memory store; by default those it may not write are left out and listed in ``skipped``), then
    ``link_nodes`` over them."""
    skipped: list[str] = []
    if namespaces is None:
        scope = graph.scope
        namespaces = [ns for ns in graph.store.namespaces()
                      if scope is None or (ns == scope if isinstance(scope, str) else ns in scope)]
        if graph.principal is not None:
            skipped = [ns for ns in namespaces if ns.startswith("memory:")
                       and not access.can(graph.workspace, graph.principal, ns, "write")]
            namespaces = [ns for ns in namespaces if ns not in skipped]
    else:
        for ns in namespaces:
            access.require(graph.workspace, graph.principal, ns, "read", "graph.link_mentions", ns)
            if ns.startswith("memory:"):
                access.require(graph.workspace, graph.principal, ns, "write", "graph.link_mentions", ns)
    found = link_nodes(graph, namespaces, kinds, actor=graph.actor, progress=progress)
    return {**found, "skipped": skipped} if skipped else found
