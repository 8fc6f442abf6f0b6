"""Conversation chains: each turn of a conversation links to the turn before it (``props.prev``), and its
context vector embeds the pair. The chain has one head, the turn nothing follows yet.

The head is kept as a record written in the same transaction as the turns, and read again inside the write
transaction, so concurrent writers (threads or processes) append one after another instead of both linking
to the same turn. Updates of older turns do not move it (their ``recorded_at`` does move, which is why the
latest-recorded turn is not the head). When the record is missing or names a turn that is gone (older
stores, a forgotten head), the head is found by scanning the conversation: the latest turn no other
turn links to.
"""
from __future__ import annotations

from typing import Any, Callable

from ..embed.cache import embed_texts
from ..model import Node, content_hash
from ..store import Capability
from .records import CONV, KIND, conversation_of, pair_text

HEAD = "memory.chain_head"
FEW_HEADS = 16  # at most this many conversations: their head records read by key; more: the namespace's listed


def head_key(namespace: str, conversation_id: str) -> str:
    """The key of a conversation's head record."""
    return f"{namespace}\x1f{conversation_id}"


def head(db: Any, namespace: str, conversation_id: str) -> Node | None:
    """The conversation's last turn (read inside the write transaction to be sure no one appends meanwhile)."""
    return heads(db, namespace, [conversation_id])[conversation_id]


def heads(db: Any, namespace: str, conversation_ids: list[str]) -> dict[str, Node | None]:
    """Each conversation's last turn (``head``), read set-based: the head records (each by key when few or the store
    is embedded, else, on a server, the namespace's all at once: a batch of many conversations costs one round trip,
    not one each) and their turns in one ``get_nodes``; only a conversation with no valid record is scanned
    (``_scan``)."""
    wanted = list(dict.fromkeys(conversation_ids))
    if len(wanted) <= FEW_HEADS or Capability.SERVER_QUERIES not in db.capabilities:  # embedded: a read is cheap
        records = {c: r for c in wanted if (r := db.get_record(HEAD, head_key(namespace, c)))}
    else:
        prefix = head_key(namespace, "")
        listed = dict(db.list_records(HEAD, prefix=prefix))
        records = {c: r for c in wanted if (r := listed.get(prefix + c))}
    nodes = db.get_nodes([r["id"] for r in records.values() if r.get("id")])
    out: dict[str, Node | None] = {}
    for conv in wanted:
        node = nodes.get((records.get(conv) or {}).get("id", ""))
        if node is not None and node.kind == KIND and node.namespace == namespace and conversation_of(node) == conv:
            out[conv] = node
        else:
            out[conv] = _scan(db, namespace, conv)
    return out


def _scan(db: Any, namespace: str, conversation_id: str) -> Node | None:
    """The head found by scanning the conversation (no record, or one naming a turn that is gone)."""
    turns = db.find_nodes(namespace=namespace, kind=KIND, tags=[CONV + conversation_id], with_content=False,
                          order="key")
    if not turns:
        return None
    followed = {(t.props or {}).get("prev") for t in turns}
    free = [t for t in turns if t.id not in followed]
    return db.get_node((free or turns)[-1].id)


def relink(db: Any, embedder: Callable[[], Any], namespace: str, first: dict[str, Node],
           assumed: dict[str, str | None], places: bool = False) -> None:
    """Inside the write transaction: re-read each conversation's head; where another writer appended since
    ``assumed`` was read, link the batch's first turn of that conversation to the new head instead (and
    embed the new pair, a few texts at most: ``embedder()`` gives the model, loaded only then)."""
    pairs = []
    now = heads(db, namespace, list(first))
    for conv, node in first.items():
        current = now[conv]
        current_id = current.id if current is not None else None
        if current_id == assumed.get(conv):
            continue
        node.props.pop("pair_hash", None)
        node.props.pop("prev", None)
        if current is not None:
            node.props["prev"] = current_id
            pair = pair_text(current, node.embed_text or "", places)
            node.props["pair_hash"] = content_hash(pair)
            pairs.append(pair)
    if pairs:
        embed_texts(db, embedder(), pairs)


def set_heads(db: Any, namespace: str, heads: dict[str, str], actor: str = "") -> None:
    db.put_records(HEAD, {head_key(namespace, conv): {"id": memory_id} for conv, memory_id in heads.items()},
                   actor=actor)
