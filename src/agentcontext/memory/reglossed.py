"""Place glosses for memories stored without them (``agentcontext reindex --places``): each memory of every memory
namespace gets the text ``AgentMemory(places=True)`` would have stored for it (memory/places.py: the glosses in its
summary, indexed beside its date, and after its embedded text; the pair with its previous turn embedded again from
both glossed texts) as a new version, its content, metadata and times unchanged. A memory that already holds them is
left alone, so a second run glosses nothing. The texts are embedded before the write, one transaction a namespace.
"""
from __future__ import annotations

from typing import Callable

from ..embed.cache import embed_texts
from ..model import Node, content_hash
from ..workspace import Workspace
from .plan import rewritten
from .records import KIND, pair_text


CHUNK = 1000  # memories read, embedded and written at a time (a transaction each)


def gloss_places(ws: Workspace, actor: str = "",
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Gloss every memory of ``ws`` stored without place glosses; how many were glossed."""
    store = ws.store
    spaces = [ns for ns in store.namespaces() if ns.startswith("memory:")]
    total = sum(store.count_nodes(namespace=ns, kind=KIND) for ns in spaces)
    seen = glossed = 0
    for namespace in spaces:
        offset = 0
        while page := store.find_nodes(namespace=namespace, kind=KIND, order="key", limit=CHUNK, offset=offset):
            offset += len(page)  # (a gloss keeps each memory's key and liveness: the pages stay where they were)
            by_id = {n.id: n for n in page}
            changed, texts = [], []
            for node in page:
                new, pair = _glossed(store, namespace, node, by_id)
                if (new.summary, content_hash(new.embed_text or ""), new.props.get("pair_hash")) != (
                        node.summary, node.embed_hash, (node.props or {}).get("pair_hash")):  # (the store hashes it)
                    changed.append(new)
                    texts += [new.embed_text or "", *([pair] if pair else [])]
            if changed:
                embed_texts(store, ws.embedder, texts)
                with store.transaction():
                    store.put_nodes(changed, actor=actor)
                glossed += len(changed)
            seen += len(page)
            if progress:
                progress(seen, total)
    return glossed


def _glossed(store, namespace: str, node: Node, by_id: dict[str, Node]) -> tuple[Node, str | None]:
    """``node`` as ``AgentMemory(places=True)`` stores it, and the pair text its ``pair_hash`` names (None: none)."""
    props = node.props or {}
    new, _ = rewritten(store, namespace, node, node.content, dict(props.get("metadata") or {}),
                       props.get("updated_at") or props.get("created_at") or "", places=True)
    prev = props.get("prev")
    before = (by_id.get(prev) or store.get_node(prev)) if prev and props.get("pair_hash") else None
    if before is None:
        return new, None
    pair = pair_text(before, new.embed_text or "", places=True)
    new.props["pair_hash"] = content_hash(pair)
    return new, pair
