"""A batch of memories to store, planned before anything is written (``AgentMemory._write``): the nodes of the items,
linked to their conversations' heads, the context pairs to embed, the vectors supplied; then the texts with no
vector embedded (a few into the plan, written in the same commit; many cached in the store batch by batch)."""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from ..embed.base import Embedder
from ..embed.cache import embed_texts, new_vectors
from ..errors import ValidationError
from ..model import Node, content_hash
from ..store.base import Store
from . import chain
from .items import item_name, refuse_not_finite
from .records import build_node, iso_with_offset, memory_text, now_iso, pair_text

SMALL_BATCH = 64  # at most this many texts to embed: their vectors land in the memories' own transaction
EMBED_STEP = 2048  # texts embedded and cached per step of a large batch
QUIET_GC_ROWS = 1000  # a batch of at least this many memories is planned and written with the cycle collector paused
_paused = {"depth": 0, "was_enabled": False}
_paused_lock = threading.Lock()


@contextmanager
def collector_paused(rows: int) -> Iterator[None]:
    """Plan and write a large batch without the cycle collector: its nodes, rows and tuples (tens of objects a
    memory, none in a cycle) set off about 140 collections a batch of 10,000, one of them a full pass over every
    object of the process (7% of the batch's time here; more in a process holding more objects). Nested and
    concurrent batches share one pause; the collector runs again, if it ran before, when the last one ends."""
    if rows < QUIET_GC_ROWS:
        yield
        return
    with _paused_lock:
        if not _paused["depth"]:
            _paused["was_enabled"] = gc.isenabled()
            gc.disable()
        _paused["depth"] += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused["depth"] -= 1
            if not _paused["depth"] and _paused["was_enabled"]:
                gc.enable()


def checked_vector(value: Any, seq: int, name: str, dimension: Callable[[], int]) -> np.ndarray:
    """A supplied vector as float32 of the store's dimension (asked only when one is supplied)."""
    vec = np.asarray(value, dtype=np.float32)
    if vec.shape != (dimension(),):
        raise ValidationError(f"memory {seq}: {name} has shape {vec.shape}, expected ({dimension()},)",
                              index=seq, expected=dimension())
    return vec


def plan_items(items: list[dict[str, Any]], namespace: str, context_turns: bool, store: Store,
           dimension: Callable[[], int], places: bool = False) -> tuple:
    """The nodes of ``items`` (linked to their conversations' heads as read now), each conversation's last and
    first node, the pair texts to embed, the vectors supplied (by hash) and the heads assumed."""
    stamp = now_iso()
    last: dict[str, Node | None] = {}
    nodes: list[Node] = []
    pair_texts: list[str] = []
    supplied: dict[str, np.ndarray] = {}
    prev_text: dict[str, str] = {}
    first: dict[str, Node] = {}  # each conversation's first turn in this batch, and the head it assumed
    assumed: dict[str, str | None] = {}
    if context_turns:  # every conversation's head in one read (chain.heads), not one read each
        convs = [str(c) for item in items if (c := item.get("conversation_id")) is not None]
        last.update(chain.heads(store, namespace, list(dict.fromkeys(convs))) if convs else {})
    for seq, item in enumerate(items):
        content = item.get("content", item.get("text"))
        conv = item.get("conversation_id")
        if conv is not None:
            conv = str(conv)
        prev_id = None
        if conv is not None and context_turns:
            if conv not in prev_text:
                before = last.get(conv)
                if before is not None:
                    prev_text[conv] = memory_text(before.title, before.content, places)
                    last[conv] = before
            before = last.get(conv)
            prev_id = before.id if before is not None else None
            assumed.setdefault(conv, prev_id)
        created = item.get("created_at")
        updated = item.get("updated_at")
        try:
            node = build_node(namespace, content, item.get("metadata"), conv,
                              None if item.get("user_id") is None else str(item["user_id"]),
                              memory_id=item.get("id"),
                              created_at=iso_with_offset(created, "created_at") if created else stamp,
                              updated_at=iso_with_offset(updated, "updated_at") if updated else None,
                              seq=seq, prev=prev_id, places=places)
        except ValidationError as exc:  # one bad item refuses the batch, naming it (nothing written yet)
            raise ValidationError(f"{item_name(seq, item)}: {exc.message}; nothing of this batch was stored",
                                  **{**exc.data, "index": seq}) from exc
        if conv is not None and context_turns:
            own = node.embed_text or ""
            if conv in prev_text:
                pair = prev_text[conv] + "\n" + own
                node.props["pair_hash"] = content_hash(pair)
                context = item.get("context_vector")
                if context is not None:
                    supplied[node.props["pair_hash"]] = checked_vector(context, seq, "context_vector", dimension)
                else:
                    pair_texts.append(pair)
            prev_text[conv] = own
            last[conv] = node
            first.setdefault(conv, node)
        node.embed_hash = content_hash(node.embed_text)  # hashed once here (the store checks it again)
        vector = item.get("vector", item.get("embedding"))
        if vector is not None:
            supplied[node.embed_hash] = checked_vector(vector, seq, "vector", dimension)
        nodes.append(node)
    refuse_not_finite(items, supplied)
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        twice = next(i for i in ids if i in seen or seen.add(i))
        raise ValidationError(f"batch_store got the memory id {twice[:80]!r} twice; ids must be unique",
                              id=twice[:300])
    return nodes, last, first, pair_texts, supplied, assumed


def embed_missing(store: Store, embedder: Embedder, nodes: list[Node], pair_texts: list[str],
                  supplied: dict[str, np.ndarray], progress: Callable[[int, int], None] | None) -> None:
    """Vectors for the texts not supplied: a few are added to ``supplied`` (written with the memories, in
    one transaction); many are embedded and cached in the store batch by batch, with progress."""
    texts = [n.embed_text for n in nodes if n.embed_text and n.embed_hash not in supplied]
    texts += pair_texts
    if not texts:
        return
    if len(texts) <= SMALL_BATCH:
        supplied.update(new_vectors(store, embedder, texts))
        return
    for start in range(0, len(texts), EMBED_STEP):
        embed_texts(store, embedder, texts[start: start + EMBED_STEP])
        if progress:
            progress(min(start + EMBED_STEP, len(texts)), len(texts))


def rewritten(store: Store, namespace: str, node: Node, content: str, metadata: dict[str, Any],
              updated_at: str, places: bool = False) -> tuple[Node, list[str]]:
    """A new version of ``node`` with exactly this content and metadata (same id, key and place in its
    conversation), and the texts to embed for it: its own, and the pair with its previous turn unless kept."""
    props = node.props or {}
    new = build_node(namespace, content, metadata, props.get("conversation_id"), props.get("user_id"),
                     memory_id=node.id, created_at=props.get("created_at"), updated_at=updated_at,
                     prev=props.get("prev"), places=places)
    new.key = node.key
    texts = [new.embed_text or ""]
    if props.get("pair_hash") and content == node.content and new.title == node.title:
        new.props["pair_hash"] = props["pair_hash"]
    elif props.get("prev"):
        before = store.get_node(props["prev"])
        if before is not None:
            pair = pair_text(before, new.embed_text or "", places)
            new.props["pair_hash"] = content_hash(pair)
            texts.append(pair)
    return new, texts
