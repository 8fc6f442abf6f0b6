"""Deleting memories so nothing derived from their text remains: the nodes (every version, their edges and own
vectors, by ``store.purge_nodes``) and the context (pair) vectors that embedded their text together with a
neighbour's: each memory's own pair and that of every turn that follows it, forked chains included (two turns
may name the same previous turn when writers raced before chains were read inside the write transaction).
"""
from __future__ import annotations

from typing import Any, Sequence

from .records import CONV, KIND, STATE_KIND


def pair_hashes(store: Any, ids: Sequence[str]) -> set[str]:
    """The pair-vector hashes computed from the text of these memories: their own and their followers'."""
    nodes = store.get_nodes(list(ids), include_retracted=True)  # a retracted memory's pair vector holds its text too
    gone = set(ids)
    pairs = {(n.props or {}).get("pair_hash") for n in nodes.values()}
    by_conv: dict[tuple[str, str], None] = {}
    for n in nodes.values():
        conv = (n.props or {}).get("conversation_id")
        if conv is not None:
            by_conv[(n.namespace, str(conv))] = None
    for namespace, conv in by_conv:
        for turn in store.find_nodes(namespace=namespace, kind=KIND, tags=[CONV + conv], with_content=False,
                                     order="none"):
            props = turn.props or {}
            if props.get("prev") in gone:
                pairs.add(props.get("pair_hash"))
    pairs.discard(None)
    return pairs  # type: ignore[return-value]


def purge_memories(store: Any, ids: Sequence[str], reason: str, actor: str = "",
                   erasure: str | None = None) -> dict[str, int]:
    """Purge memories and every vector derived from their text, in one transaction; returns the store's totals
    with ``vectors`` counting the pair vectors too."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0}
    with store.transaction():
        pairs = pair_hashes(store, ids)
        totals = store.purge_nodes(ids, reason=reason, actor=actor, erasure=erasure)
        if pairs:
            totals["vectors"] += store.delete_vectors(sorted(pairs))
    return totals


def about(store: Any, entity_id: str, namespace: str | None = None, include_retracted: bool = False) -> list[Any]:
    """Memories and thread state (of ``namespace``, or of every memory store) whose metadata names ``entity_id`` in
    ``entities`` or ``entity_id``, in the order they were stored (the store scans the properties; only the hits are
    read); ``include_retracted``: the retracted ones too (what an erasure must reach)."""
    kinds = [KIND, STATE_KIND]
    ids = dict.fromkeys([*store.find_by_props(["metadata", "entities"], entity_id, namespace, kinds,
                                              include_retracted=include_retracted),
                         *store.find_by_props(["metadata", "entity_id"], entity_id, namespace, kinds,
                                              include_retracted=include_retracted)])
    found = store.get_nodes(list(ids), include_retracted=include_retracted)
    return [found[i] for i in ids if i in found]
