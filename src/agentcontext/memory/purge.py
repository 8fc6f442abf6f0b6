"""Deleting memories so nothing derived from their text remains: the nodes (every version, their edges and own
vectors, by ``store.purge_nodes``) and the context (pair) vectors that embedded their text together with a
neighbour's: each memory's own pair and that of every turn that follows it, forked chains included (two turns
may name the same previous turn when writers raced before chains were read inside the write transaction).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from .chain import HEAD, head_key
from .records import CONV, KIND, STATE_KIND


def conversations(nodes: Iterable[Any]) -> list[tuple[str, str]]:
    """The (namespace, conversation id) of these memories' conversations, each once."""
    by_conv: dict[tuple[str, str], None] = {}
    for n in nodes:
        conv = (n.props or {}).get("conversation_id")
        if conv is not None:
            by_conv[(n.namespace, str(conv))] = None
    return list(by_conv)


def pair_hashes(store: Any, ids: Sequence[str], nodes: dict[str, Any] | None = None) -> set[str]:
    """The pair-vector hashes computed from the text of these memories (``nodes``: them, read with the retracted
    ones, if the caller has): their own and their followers'."""
    if nodes is None:  # a retracted memory's pair vector holds its text too
        nodes = store.get_nodes(list(ids), include_retracted=True)
    gone = set(ids)
    pairs = {(n.props or {}).get("pair_hash") for n in nodes.values()}
    for namespace, conv in conversations(nodes.values()):
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
    with ``vectors`` counting the pair vectors too, and ``records``: the rows the conversations they ended changed
    (``ended``)."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {"nodes": 0, "versions": 0, "edges": 0, "vectors": 0, "records": 0}
    with store.transaction():
        nodes = store.get_nodes(ids, include_retracted=True)
        pairs = pair_hashes(store, ids, nodes)
        totals = store.purge_nodes(ids, reason=reason, actor=actor, erasure=erasure)
        if pairs:
            totals["vectors"] += store.delete_vectors(sorted(pairs))
        totals["records"] = ended(store, conversations(nodes.values()), actor)
    return totals


def ended(store: Any, convs: Sequence[tuple[str, str]], actor: str = "") -> int:
    """Drop the head record (memory/chain.py) of each of these conversations no live turn is left in, and its key
    from the change log (``Store.erase_records``): the id may name the subject (``joe-card-4242``), and nothing
    else keeps it once its turns are gone. Returns how many rows that changed."""
    done = [(ns, conv) for ns, conv in convs
            if not store.find_nodes(namespace=ns, kind=KIND, tags=[CONV + conv], with_content=False, order="none",
                                    limit=1)]
    if not done:
        return 0
    return store.erase_records(HEAD, [head_key(ns, conv) for ns, conv in done], actor)


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
