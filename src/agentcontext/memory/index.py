"""The derived memory index: a live vector index (``engine/live.py``) of one namespace's memories.

Built from the store, then kept current from its change log: new memories are appended (one
``changes_since`` read); an update, retraction or purge in the namespace rebuilds it. Each memory
of a conversation may carry a *pair vector*: the embedding of the previous turn followed by this
one (``props.pair_hash``). A turn's dense vector is the mean of its own vector, its pair vector and
the next turn's pair vector, so a reply is found through the question that prompted it and back.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np

from ..embed.base import Embedder
from ..embed.cache import embed_missing
from ..engine.fusion import words
from ..engine.live import Column, LiveIndex, follow
from ..model import Change, Node
from ..store.base import Store
from ..workspace import Workspace
from .records import KIND

APPEND_LIMIT = 5000  # more pending changes than this: rebuild instead of replaying
PAIR, DENSE = "pair", "dense"  # context vector planes, added once the first pair vector arrives
COLUMNS = {"has_pair": Column(bool, False), "prev": Column(np.int64, -1), "next": Column(np.int64, -1),
           "title": Column(np.int32, 0, coded=True), "conversation": Column(np.int32, -1, coded=True),
           "user": Column(np.int32, -1, coded=True)}


class MemoryIndex:
    """The rows of a ``LiveIndex`` (own vectors, context planes, conversation links, filter columns), plus
    each memory's props and the document frequency of words (for pruning common query words)."""

    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self.rows = LiveIndex(dimension, COLUMNS, capacity)
        self.props: list[dict[str, Any]] = []
        self.df: Counter[str] = Counter()  # lower-cased word -> memories containing it

    @property
    def counter(self) -> int:
        return self.rows.counter

    @counter.setter
    def counter(self, value: int) -> None:
        self.rows.counter = value

    @property
    def ids(self) -> list[str]:
        return self.rows.ids

    @property
    def row(self) -> dict[str, int]:
        return self.rows.row

    def __len__(self) -> int:
        return self.rows.n

    # views over the used rows
    @property
    def own(self) -> np.ndarray:
        return self.rows.vectors

    @property
    def dense_plane(self) -> str:
        """The plane searched: own vectors averaged with conversation context (the own vectors when there is none)."""
        return DENSE if self.rows.has(DENSE) else "vectors"

    @property
    def prev(self) -> np.ndarray:
        return self.rows.column("prev")

    @property
    def next(self) -> np.ndarray:
        return self.rows.column("next")

    @property
    def title_codes(self) -> np.ndarray:
        return self.rows.column("title")

    @property
    def title_names(self) -> list[str]:
        return self.rows.labels.get("title", [])

    def rows_of(self, conversation_id: str | None, user_id: str | None) -> np.ndarray | None:
        """Rows of a conversation and/or user (ascending), or None when neither filters."""
        if conversation_id is None and user_id is None:
            return None
        mask = self.rows.mask(conversation=None if conversation_id is None else str(conversation_id),
                              user=None if user_id is None else str(user_id))
        return np.flatnonzero(mask)

    def _refresh_dense(self, rows: Sequence[int]) -> None:
        if not self.rows.has(DENSE):
            return
        own, pair, dense = self.rows.vectors, self.rows.column(PAIR), self.rows.column(DENSE)
        has_pair, nxt = self.rows.column("has_pair"), self.next
        for i in rows:
            acc = own[i].copy()
            count = 1
            if has_pair[i]:
                acc += pair[i]
                count += 1
            j = nxt[i]
            if j >= 0 and has_pair[j]:
                acc += pair[j]
                count += 1
            dense[i] = acc / count

    def add(self, nodes: Sequence[Node], vectors: dict[str, np.ndarray], pairs: dict[str, np.ndarray]) -> None:
        """Append memories (their own vectors keyed by embed hash, pair vectors by pair hash)."""
        if not nodes:
            return
        rows, d = self.rows, self.rows.dimension
        start = rows.n
        zero = np.zeros(d, dtype=np.float32)
        own = np.stack([vectors.get(node.embed_hash or "", zero) for node in nodes])
        props = [node.props or {} for node in nodes]
        paired = [bool(h) and h in pairs for h in (p.get("pair_hash") for p in props)]
        if any(paired) and not rows.has(PAIR):
            rows.add_column(PAIR, Column(np.float32, None, d))
            rows.add_column(DENSE, Column(np.float32, None, d), initial=rows.vectors)
        position = {node.id: start + k for k, node in enumerate(nodes)}
        prev = np.array([rows.row.get(p.get("prev") or "", position.get(p.get("prev") or "", -1)) for p in props],
                        dtype=np.int64)
        values: dict[str, Any] = {
            "title": [node.title or "" for node in nodes], "prev": prev, "has_pair": paired,
            "conversation": [p.get("conversation_id") for p in props], "user": [p.get("user_id") for p in props]}
        if rows.has(PAIR):
            values[PAIR] = np.stack([pairs[p["pair_hash"]] if ok else zero for p, ok in zip(props, paired)])
            values[DENSE] = own
        # the next links inside the batch are known before the rows become visible
        nxt = np.full(len(nodes), -1, dtype=np.int64)
        touched = {start + k for k, ok in enumerate(paired) if ok}
        earlier: list[int] = []
        for k, j in enumerate(prev.tolist()):
            if j >= start:
                if nxt[j - start] < 0:
                    nxt[j - start] = start + k
                    touched.add(j)
            elif j >= 0:
                earlier.append(k)
        values["next"] = nxt
        self.props.extend(props)
        rows.put([node.id for node in nodes], own, values)
        for node in nodes:
            self.df.update(set(words((node.title or "") + " " + (node.content or ""))))
        existing_next = rows.column("next")
        for k in earlier:  # a row whose next turn arrived later (or out of order) links up too
            j = int(prev[k])
            if existing_next[j] < 0:
                existing_next[j] = start + k
                touched.add(j)
        self._refresh_dense(sorted(touched))


class MemoryFeed:
    """How a memory index follows the store: appends replay, anything else rebuilds."""

    limit = APPEND_LIMIT

    def __init__(self, store: Store, model: str, embedder: Callable[[], Embedder], namespace: str,
                 dimension: int) -> None:
        self.store, self.model, self.embedder = store, model, embedder
        self.namespace, self.dimension = namespace, dimension

    def _nodes(self) -> list[Node]:
        return self.store.find_nodes(namespace=self.namespace, kind=KIND, order="none", with_content=True)

    def build(self, store: Store) -> MemoryIndex:
        counter = store.change_counter()
        nodes = self._nodes()
        vec_ids, matrix = store.load_vectors(self.model, self.namespace, KIND)
        if len(vec_ids) < sum(1 for n in nodes if n.embed_hash):  # text without a vector (e.g. another model)
            embed_missing(store, self.embedder(), self.namespace)
            counter = store.change_counter()
            nodes = self._nodes()
            vec_ids, matrix = store.load_vectors(self.model, self.namespace, KIND)
        by_id = {nid: i for i, nid in enumerate(vec_ids)}
        vectors = {n.embed_hash: matrix[by_id[n.id]] for n in nodes if n.id in by_id and n.embed_hash}
        pair_hashes = [n.props["pair_hash"] for n in nodes if (n.props or {}).get("pair_hash")]
        pairs = store.get_vectors(list(dict.fromkeys(pair_hashes)), self.model) if pair_hashes else {}
        index = MemoryIndex(self.dimension, capacity=max(1024, len(nodes) + len(nodes) // 4))
        index.add(nodes, vectors, pairs)
        index.counter = counter
        return index

    def apply(self, index: MemoryIndex, store: Store, changes: Sequence[Change]) -> bool:
        new_ids: list[str] = []
        for change in changes:
            if change.namespace != self.namespace:
                continue
            if change.op != "node.put" or change.detail.get("version") != 1 or change.target in index.row:
                return False
            new_ids.append(change.target)
        if not new_ids:
            return True
        found = store.get_nodes(new_ids)
        if len(found) != len(new_ids):
            return False
        nodes = [found[i] for i in new_ids]
        vectors = store.get_vectors([n.embed_hash for n in nodes if n.embed_hash], self.model)
        if any(n.embed_hash and n.embed_hash not in vectors for n in nodes):
            return False
        pair_hashes = [n.props["pair_hash"] for n in nodes if (n.props or {}).get("pair_hash")]
        pairs = store.get_vectors(pair_hashes, self.model) if pair_hashes else {}
        index.add(nodes, vectors, pairs)
        return True


def memory_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    """The current index for ``namespace``: held by the workspace, caught up from the change log."""
    feed = MemoryFeed(ws.store, ws.model_name, lambda: ws.embedder, namespace, dimension)
    return ws.live(f"memory:{namespace}", lambda current: follow(current, ws.store, feed))
