"""The derived memory index: vectors as one matrix, plus conversation neighbours and filters.

Built from the store, then kept current from its change log: new memories are appended (one
``changes_since`` read); an update, retraction or purge in the namespace rebuilds it. Each memory
of a conversation may carry a *pair vector*: the embedding of the previous turn followed by this
one (``props.pair_hash``). A turn's dense vector is the mean of its own vector, its pair vector and
the next turn's pair vector, so a reply is found through the question that prompted it and back.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..embed.cache import embed_missing
from ..engine.fusion import words
from ..model import Node
from ..workspace import Workspace
from .records import KIND

APPEND_LIMIT = 5000  # more pending changes than this: rebuild instead of replaying


class MemoryIndex:
    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self.dimension = dimension
        self.n = 0
        self.counter = 0
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self.props: list[dict[str, Any]] = []
        self.keys: list[str] = []
        self.title_names: list[str] = []
        self._title_code: dict[str, int] = {}
        self.convs: dict[str, list[int]] = {}
        self.users: dict[str, list[int]] = {}
        self.df: Counter[str] = Counter()  # lower-cased word -> memories containing it (for query pruning)
        self._pair: np.ndarray | None = None
        self._dense: np.ndarray | None = None
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        def grow(old: np.ndarray | None, shape: tuple[int, ...], dtype: Any, fill: Any) -> np.ndarray:
            new = np.empty(shape, dtype=dtype) if fill is None else np.full(shape, fill, dtype=dtype)
            if old is not None:
                new[: self.n] = old[: self.n]
            return new

        d = self.dimension
        self._own = grow(getattr(self, "_own", None), (capacity, d), np.float32, None)
        if getattr(self, "_pair", None) is not None:  # context arrays exist only once a pair vector does
            self._pair = grow(self._pair, (capacity, d), np.float32, None)
            self._dense = grow(self._dense, (capacity, d), np.float32, None)
        self._has_pair = grow(getattr(self, "_has_pair", None), (capacity,), bool, False)
        self._prev = grow(getattr(self, "_prev", None), (capacity,), np.int64, -1)
        self._next = grow(getattr(self, "_next", None), (capacity,), np.int64, -1)
        self._title = grow(getattr(self, "_title", None), (capacity,), np.int32, 0)
        self.capacity = capacity

    def _ensure_context(self) -> None:
        if self._pair is None:
            self._pair = np.empty((self.capacity, self.dimension), dtype=np.float32)
            self._dense = np.empty((self.capacity, self.dimension), dtype=np.float32)
            self._dense[: self.n] = self._own[: self.n]

    # views over the used rows
    @property
    def own(self) -> np.ndarray:
        return self._own[: self.n]

    @property
    def dense(self) -> np.ndarray:
        """Own vectors averaged with conversation context (the own vectors when there is none)."""
        return self._own[: self.n] if self._dense is None else self._dense[: self.n]

    @property
    def prev(self) -> np.ndarray:
        return self._prev[: self.n]

    @property
    def next(self) -> np.ndarray:
        return self._next[: self.n]

    @property
    def title_codes(self) -> np.ndarray:
        return self._title[: self.n]

    def __len__(self) -> int:
        return self.n

    def _code(self, title: str) -> int:
        code = self._title_code.get(title)
        if code is None:
            code = self._title_code[title] = len(self.title_names)
            self.title_names.append(title)
        return code

    def _refresh_dense(self, rows: Sequence[int]) -> None:
        if self._pair is None or self._dense is None:
            return
        for i in rows:
            acc = self._own[i].copy()
            count = 1
            if self._has_pair[i]:
                acc += self._pair[i]
                count += 1
            j = self._next[i]
            if j >= 0 and self._has_pair[j]:
                acc += self._pair[j]
                count += 1
            self._dense[i] = acc / count

    def add(self, nodes: Sequence[Node], vectors: dict[str, np.ndarray], pairs: dict[str, np.ndarray]) -> None:
        """Append memories (their own vectors keyed by embed hash, pair vectors by pair hash)."""
        if self.n + len(nodes) > self.capacity:
            self._alloc(max(self.capacity * 2, self.n + len(nodes)))
        start = self.n
        zero = np.zeros(self.dimension, dtype=np.float32)
        own = [vectors.get(node.embed_hash or "", zero) for node in nodes]
        if own:
            self._own[start: start + len(nodes)] = np.stack(own)
        pair_rows = [(start + k, pairs[h]) for k, node in enumerate(nodes)
                     if (h := (node.props or {}).get("pair_hash")) and h in pairs]
        if pair_rows:
            self._ensure_context()
        if self._dense is not None and own:
            self._dense[start: start + len(nodes)] = self._own[start: start + len(nodes)]
        for i, vec in pair_rows:
            self._pair[i] = vec  # type: ignore[index]
            self._has_pair[i] = True
        for node in nodes:
            i = self.n
            self.n += 1
            props = node.props or {}
            self.ids.append(node.id)
            self.row[node.id] = i
            self.props.append(props)
            self.keys.append(node.key)
            self._title[i] = self._code(node.title or "")
            if props.get("conversation_id") is not None:
                self.convs.setdefault(str(props["conversation_id"]), []).append(i)
            if props.get("user_id") is not None:
                self.users.setdefault(str(props["user_id"]), []).append(i)
            self.df.update(set(words((node.title or "") + " " + (node.content or ""))))
        touched = {i for i, _ in pair_rows}
        for i in range(start, self.n):
            j = self.row.get(self.props[i].get("prev") or "", -1)
            if j >= 0:
                self._prev[i] = j
                if self._next[j] < 0:
                    self._next[j] = i
                    touched.add(j)
        # A row whose next turn arrived before it (out-of-order import) links up too.
        self._refresh_dense(sorted(touched))


def _load_nodes(ws: Workspace, namespace: str) -> list[Node]:
    return ws.store.find_nodes(namespace=namespace, kind=KIND, order="none", with_content=True)


def build_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    store = ws.store
    model = ws.model_name
    counter = store.change_counter()
    nodes = _load_nodes(ws, namespace)
    vec_ids, matrix = store.load_vectors(model, namespace, KIND)
    if len(vec_ids) < sum(1 for n in nodes if n.embed_hash):  # text without a vector (e.g. another model)
        embed_missing(store, ws.embedder, namespace)
        counter = store.change_counter()
        nodes = _load_nodes(ws, namespace)
        vec_ids, matrix = store.load_vectors(model, namespace, KIND)
    by_id = {nid: i for i, nid in enumerate(vec_ids)}
    vectors = {n.embed_hash: matrix[by_id[n.id]] for n in nodes if n.id in by_id and n.embed_hash}
    pair_hashes = [n.props["pair_hash"] for n in nodes if (n.props or {}).get("pair_hash")]
    pairs = store.get_vectors(list(dict.fromkeys(pair_hashes)), model) if pair_hashes else {}
    index = MemoryIndex(dimension, capacity=max(1024, len(nodes) + len(nodes) // 4))
    index.add(nodes, vectors, pairs)
    index.counter = counter
    return index


def _catch_up(ws: Workspace, index: MemoryIndex, namespace: str, counter: int) -> bool:
    """Replay new memories from the change log; False when only a rebuild will do."""
    changes = ws.store.changes_since(index.counter, limit=APPEND_LIMIT)
    if len(changes) >= APPEND_LIMIT:
        return False
    new_ids: list[str] = []
    for change in changes:
        if change.namespace != namespace:
            continue
        if change.op != "node.put" or change.detail.get("version") != 1 or change.target in index.row:
            return False
        new_ids.append(change.target)
    if new_ids:
        found = ws.store.get_nodes(new_ids)
        if len(found) != len(new_ids):
            return False
        nodes = [found[i] for i in new_ids]
        model = ws.model_name
        vectors = ws.store.get_vectors([n.embed_hash for n in nodes if n.embed_hash], model)
        if any(n.embed_hash and n.embed_hash not in vectors for n in nodes):
            return False
        pair_hashes = [n.props["pair_hash"] for n in nodes if (n.props or {}).get("pair_hash")]
        pairs = ws.store.get_vectors(pair_hashes, model) if pair_hashes else {}
        index.add(nodes, vectors, pairs)
    index.counter = changes[-1].seq if changes else counter
    return True


_LOCK = threading.RLock()


def memory_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    """The current index for ``namespace``: cached on the workspace, caught up from the change log."""
    with _LOCK:
        cache: dict[str, MemoryIndex] = ws.__dict__.setdefault("_memory_indexes", {})
        counter = ws.store.change_counter()
        index = cache.get(namespace)
        if index is not None and index.counter == counter:
            return index
        if index is None or not _catch_up(ws, index, namespace, counter):
            index = cache[namespace] = build_index(ws, namespace, dimension)
        return index
