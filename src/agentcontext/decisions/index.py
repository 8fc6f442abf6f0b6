"""An exact vector index over decision nodes, kept in step with the store's change log.

The first use loads every decision vector (``store.load_vectors``); afterwards each query reads
only the changes since the last one and appends, replaces or drops those rows, so recording one
decision does not rebuild 10,000 rows. Category and validity windows are numpy columns, so
filters are masks over one matrix product.
"""
from __future__ import annotations

import math
from datetime import datetime
import threading
import weakref
from typing import Any

import numpy as np

from ..embed.cache import embed_texts
from ..workspace import Workspace
from .common import DECISION, embed_text, epoch

REBUILD_AFTER = 50_000  # more changes than this since the last sync: reload everything


def _stored_epoch(value: str | None, default: float) -> float:
    """Seconds since the epoch of a timestamp as the store writes it (already normalised ISO-8601)."""
    return datetime.fromisoformat(value).timestamp() if value else default


class DecisionIndex:
    def __init__(self, workspace: Workspace, namespace: str) -> None:
        self.ws = workspace
        self.namespace = namespace
        self._lock = threading.RLock()
        self.counter = -1
        self._reset(0)

    def _reset(self, dim: int) -> None:
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.matrix = np.zeros((16, dim), dtype=np.float32)
        self.alive = np.zeros(16, dtype=bool)
        self.cat = np.zeros(16, dtype=np.int32)
        self.vfrom = np.zeros(16, dtype=np.float64)
        self.vuntil = np.zeros(16, dtype=np.float64)
        self.codes: dict[str, int] = {}
        self.dead = 0

    # --- maintenance -----------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = self.matrix.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("matrix", "alive", "cat", "vfrom", "vuntil"):
            old = getattr(self, name)
            arr = np.zeros((new, *old.shape[1:]), dtype=old.dtype)
            arr[: len(self.ids)] = old[: len(self.ids)]
            setattr(self, name, arr)

    def _put(self, rows: list[tuple[str, np.ndarray, str, str | None, str | None]]) -> None:
        if not rows:
            return
        dim = rows[0][1].shape[0]
        if self.matrix.shape[1] != dim:
            if self.ids:
                self._full_rebuild()
                return
            self.matrix = np.zeros((self.matrix.shape[0], dim), dtype=np.float32)
        self._grow(len(self.ids) + len(rows))
        for node_id, vec, category, vfrom, vuntil in rows:
            i = self.pos.get(node_id)
            if i is None:
                i = len(self.ids)
                self.ids.append(node_id)
                self.pos[node_id] = i
            elif not self.alive[i]:
                self.dead -= 1
            self.matrix[i] = vec
            self.alive[i] = True
            self.cat[i] = self.codes.setdefault(category, len(self.codes))
            self.vfrom[i] = epoch(vfrom, -math.inf)
            self.vuntil[i] = epoch(vuntil, math.inf)

    def _drop(self, ids: set[str]) -> None:
        for node_id in ids:
            i = self.pos.get(node_id)
            if i is not None and self.alive[i]:
                self.alive[i] = False
                self.dead += 1

    def _rows_for(self, nodes: list[Any]) -> list[tuple[str, np.ndarray, str, str | None, str | None]]:
        store, emb = self.ws.store, self.ws.embedder
        known = store.get_vectors([n.embed_hash for n in nodes if n.embed_hash], emb.name)
        lacking = [n for n in nodes if n.embed_hash not in known]
        if lacking:  # written by someone who did not embed it: embed now (cached in the store)
            texts = [embed_text(n.props.get("scenario", n.title), n.props.get("reasoning", n.content))
                     for n in lacking]
            for n, vec in zip(lacking, embed_texts(store, emb, texts)):
                known[n.embed_hash or n.id] = vec
                n.embed_hash = n.embed_hash or n.id
        return [(n.id, known[n.embed_hash], str(n.props.get("category", "")), n.valid_from, n.valid_until)
                for n in nodes]

    def _full_rebuild(self) -> None:
        store, emb = self.ws.store, self.ws.embedder
        counter = store.change_counter()
        ids, matrix = store.load_vectors(emb.name, namespace=self.namespace, kind=DECISION)
        nodes = {n.id: n for n in store.find_nodes(namespace=self.namespace, kind=DECISION, order="none",
                                                   with_content=False)}
        self._reset(matrix.shape[1] if ids else 0)
        rows = [i for i, node_id in enumerate(ids) if node_id in nodes]  # skip any written since the first read
        n = len(rows)
        self._grow(n)
        self.matrix[:n] = matrix[rows]
        self.alive[:n] = True
        for k, i in enumerate(rows):
            node = nodes[ids[i]]
            self.ids.append(node.id)
            self.pos[node.id] = k
            self.cat[k] = self.codes.setdefault(str(node.props.get("category", "")), len(self.codes))
            self.vfrom[k] = _stored_epoch(node.valid_from, -math.inf)
            self.vuntil[k] = _stored_epoch(node.valid_until, math.inf)
        lacking = [node for node_id, node in nodes.items() if node_id not in self.pos]
        if lacking:  # no vector for this model yet (e.g. a graph loaded from a file): embed them now
            self._put(self._rows_for(lacking))
        self.counter = counter

    def sync(self) -> None:
        """Bring the index up to the store's change counter."""
        store = self.ws.store
        with self._lock:
            counter = store.change_counter()
            if counter == self.counter:
                return
            if self.counter < 0:
                self._full_rebuild()
                return
            changes = store.changes_since(self.counter, limit=REBUILD_AFTER + 1)
            if len(changes) > REBUILD_AFTER:
                self._full_rebuild()
                return
            touched: set[str] = set()
            removed: set[str] = set()
            for ch in changes:
                if ch.op == "node.put" and (ch.target in self.pos or (
                        ch.detail.get("kind") == DECISION and ch.namespace == self.namespace)):
                    touched.add(ch.target)
                    removed.discard(ch.target)
                elif ch.op in ("node.retract", "node.purge") and ch.target in self.pos:
                    removed.add(ch.target)
                    touched.discard(ch.target)
            if touched:
                found = store.get_nodes(sorted(touched))
                live = [n for n in found.values() if n.kind == DECISION and n.namespace == self.namespace]
                removed |= touched - {n.id for n in live}
                self._put(self._rows_for(live))
            self._drop(removed)
            if changes:
                self.counter = max(c.seq for c in changes)
            if self.dead > 1000 and self.dead > len(self.ids) // 4:
                self._full_rebuild()

    # --- queries ---------------------------------------------------------------------------
    def mask(self, category: str | None = None, at: float | None = None) -> np.ndarray:
        n = len(self.ids)
        m = self.alive[:n].copy()
        if category is not None:
            code = self.codes.get(category)
            if code is None:
                return np.zeros(n, dtype=bool)
            m &= self.cat[:n] == code
        if at is not None:
            m &= (self.vfrom[:n] <= at) & (self.vuntil[:n] > at)
        return m

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        n = len(self.ids)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        # einsum, not BLAS: right after an ONNX run the BLAS threads fight the model's spinning
        # threads and a 10k x 384 matvec takes 2-20 ms instead of 0.4 ms.
        return np.einsum("ij,j->i", self.matrix[:n], qvec.astype(np.float32, copy=False))

    def top(self, qvec: np.ndarray, k: int, category: str | None = None, at: float | None = None
            ) -> tuple[list[tuple[str, float]], np.ndarray, np.ndarray]:
        """The k best (id, cosine) under the filters, plus the full score vector and mask."""
        with self._lock:
            sims = self.scores(qvec)
            m = self.mask(category, at)
            n = int(m.sum())
            if n == 0 or k <= 0:
                return [], sims, m
            masked = np.where(m, sims, -np.inf)
            k = min(k, n)
            idx = np.argpartition(-masked, k - 1)[:k] if k < len(masked) else np.arange(len(masked))
            idx = idx[np.argsort(-masked[idx], kind="stable")]
            return [(self.ids[i], float(masked[i])) for i in idx if m[i]], sims, m


_indexes: "weakref.WeakKeyDictionary[Workspace, dict[str, DecisionIndex]]" = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def index_for(workspace: Workspace, namespace: str) -> DecisionIndex:
    """The process-wide index of one workspace's decisions in one namespace, synced to the store."""
    with _guard:
        per = _indexes.setdefault(workspace, {})
        index = per.get(namespace)
        if index is None:
            index = per[namespace] = DecisionIndex(workspace, namespace)
    index.sync()
    return index
