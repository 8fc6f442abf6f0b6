"""The derived memory index: vectors as one matrix, plus conversation neighbours and filters.

Rebuilt from the store whenever its change counter moves (``Workspace.cached``). Each memory of a
conversation may carry a *pair vector*: the embedding of the previous turn followed by this one
(``props.pair_hash``). A turn's dense vector is the mean of its own vector, its pair vector and the
next turn's pair vector, so a reply is found through the question that prompted it and vice versa.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..embed.cache import embed_missing
from ..workspace import Workspace
from .records import KIND


@dataclass
class MemoryIndex:
    ids: list[str]
    row: dict[str, int]
    own: np.ndarray  # (N, d) each memory's own vector
    dense: np.ndarray  # (N, d) own + neighbouring pair vectors, averaged
    titles: list[str]
    prev: np.ndarray  # row of the previous turn in the conversation, -1 if none
    next: np.ndarray
    props: list[dict[str, Any]]
    keys: list[str]
    convs: dict[str, np.ndarray] = field(default_factory=dict)
    users: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)


def _group(values: list[str | None]) -> dict[str, np.ndarray]:
    groups: dict[str, list[int]] = {}
    for i, value in enumerate(values):
        if value is not None:
            groups.setdefault(str(value), []).append(i)
    return {k: np.asarray(v, dtype=np.int64) for k, v in groups.items()}


def build_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    store = ws.store
    model = ws.embedder.name
    if store.missing_vectors(model, namespace):
        embed_missing(store, ws.embedder, namespace)
    nodes = store.find_nodes(namespace=namespace, kind=KIND, order="key", with_content=False)
    n = len(nodes)
    ids = [node.id for node in nodes]
    row = {nid: i for i, nid in enumerate(ids)}
    vec_ids, matrix = store.load_vectors(model, namespace, KIND)
    own = np.zeros((n, dimension), dtype=np.float32)
    if vec_ids:
        rows = np.fromiter((row.get(v, -1) for v in vec_ids), dtype=np.int64, count=len(vec_ids))
        keep = rows >= 0
        own[rows[keep]] = matrix[keep]
    props = [node.props or {} for node in nodes]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    pair_rows: list[int] = []
    pair_hashes: list[str] = []
    for i, p in enumerate(props):
        before = p.get("prev")
        if before is not None:
            j = row.get(before, -1)
            if j >= 0:
                prev[i] = j
                if nxt[j] < 0:
                    nxt[j] = i
        if p.get("pair_hash"):
            pair_rows.append(i)
            pair_hashes.append(p["pair_hash"])
    dense = own
    if pair_rows:
        found = store.get_vectors(list(dict.fromkeys(pair_hashes)), model)
        pairs = np.zeros((n, dimension), dtype=np.float32)
        has_pair = np.zeros(n, dtype=bool)
        for i, h in zip(pair_rows, pair_hashes):
            vec = found.get(h)
            if vec is not None:
                pairs[i] = vec
                has_pair[i] = True
        dense = own.copy()
        count = np.ones(n, dtype=np.float32)
        dense[has_pair] += pairs[has_pair]
        count[has_pair] += 1
        nxt_ok = (nxt >= 0)
        nxt_ok[nxt_ok] = has_pair[nxt[nxt_ok]]
        dense[nxt_ok] += pairs[nxt[nxt_ok]]
        count[nxt_ok] += 1
        dense /= count[:, None]
    return MemoryIndex(
        ids=ids, row=row, own=own, dense=dense, titles=[node.title for node in nodes], prev=prev, next=nxt,
        props=props, keys=[node.key for node in nodes],
        convs=_group([p.get("conversation_id") for p in props]), users=_group([p.get("user_id") for p in props]),
    )


def memory_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    return ws.cached(f"memory-index:{namespace}", lambda: build_index(ws, namespace, dimension))
