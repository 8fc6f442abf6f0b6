"""The exact vector index over decision nodes: a live index (``engine/live.py``) following the change log.

The first use loads every decision vector (``store.load_vectors``); afterwards each query reads
only the changes since the last one and appends, replaces or drops those rows, so recording one
decision does not rebuild 10,000 rows. Category and validity windows are columns, so filters are
masks over one matrix product. A decision stored without a vector (written by someone who did not
embed it) is embedded when the index meets it, and the vector is cached in the store.

On a store with a folder the rows persist as an index file (``engine/persist.py``): a new process's first
``find_precedents`` maps the file and catches up from the change log instead of loading every vector.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import numpy as np

from ..embed.cache import embed_missing, embed_texts
from ..engine.live import Column, LiveIndex, NodeVectors, stored_epoch
from ..engine.persist import persisted
from ..engine.vectors import masked_top_k
from ..model import Node, to_utc_iso
from ..store.base import Capability
from ..workspace import Workspace
from .common import DECISION, embed_text

Scores = Callable[[Sequence[str]], dict[str, float]]
REBUILD_AFTER = 50_000  # more changes than this since the last sync: reload everything
FILE_KIND = "decision-index"
COLUMNS = {"category": Column(np.int32, -1, coded=True), "vfrom": Column(np.float64, 0.0),
           "vuntil": Column(np.float64, 0.0)}


def _values(node: Node) -> dict[str, Any]:
    return {"category": str(node.props.get("category", "")), "vfrom": stored_epoch(node.valid_from, -math.inf),
            "vuntil": stored_epoch(node.valid_until, math.inf)}


class DecisionIndex:
    """Precedent search over one namespace's decisions (the rows of a live index)."""

    def __init__(self, rows: LiveIndex) -> None:
        self.rows = rows

    @property
    def pos(self) -> dict[str, int]:
        return self.rows.row

    @property
    def matrix(self) -> np.ndarray:
        return self.rows.storage()

    def mask(self, category: str | None = None, at: float | None = None) -> np.ndarray:
        m = self.rows.mask(category=category)
        if at is not None:
            m &= (self.rows.column("vfrom") <= at) & (self.rows.column("vuntil") > at)
        return m

    def top(self, qvec: np.ndarray, k: int, category: str | None = None, at: float | None = None
            ) -> tuple[list[tuple[str, float]], Scores]:
        """The k best (id, cosine) under the filters, and the cosine of any other decisions that pass them."""
        rows = self.rows
        with rows.lock:
            sims = rows.scores(qvec)
            m = self.mask(category, at)
            best = masked_top_k(sims, k, m)

        def scores(ids: Sequence[str]) -> dict[str, float]:
            found = ((i, rows.row.get(i)) for i in ids)
            return {i: float(sims[r]) for i, r in found if r is not None and r < len(m) and m[r]}

        return [(rows.ids[i], float(sims[i])) for i in best], scores


class ServerDecisions:
    """The same answers as ``DecisionIndex.top``, asked of a store that ranks vectors itself
    (``Capability.VECTOR_SEARCH``): the process holds no decision vectors."""

    def __init__(self, workspace: Workspace, namespace: str) -> None:
        self.ws, self.namespace = workspace, namespace

    def _passes(self, node: Node, category: str | None, at: float | None) -> bool:
        values = _values(node)
        return (node.kind == DECISION and node.namespace == self.namespace
                and (category is None or values["category"] == category)
                and (at is None or values["vfrom"] <= at < values["vuntil"]))

    def top(self, qvec: np.ndarray, k: int, category: str | None = None, at: float | None = None
            ) -> tuple[list[tuple[str, float]], Scores]:
        store, model, ws = self.ws.store, self.ws.model_name, self.ws
        if ws.cached(f"decisions:{self.namespace}:missing", lambda: bool(store.missing_vectors(model, self.namespace))):
            embed_missing(store, ws.embedder, self.namespace)  # written without a vector (a loaded graph): embed now
        valid_at = to_utc_iso(datetime.fromtimestamp(at, timezone.utc)) if at is not None else None
        props = {"category": category} if category else None  # "" (no category) is checked below
        hits = store.nearest(qvec, model, k, namespace=self.namespace, kind=DECISION, valid_at=valid_at, props=props)
        if category == "":
            nodes = store.get_nodes([i for i, _ in hits])
            hits = [(i, s) for i, s in hits if i in nodes and self._passes(nodes[i], category, at)]

        def scores(ids: Sequence[str]) -> dict[str, float]:
            nodes = {i: n for i, n in store.get_nodes(ids).items() if self._passes(n, category, at)}
            sims = store.similarities(qvec, model, [n.embed_hash for n in nodes.values() if n.embed_hash])
            return {i: sims[n.embed_hash] for i, n in nodes.items() if n.embed_hash in sims}

        return hits, scores


def _feed(ws: Workspace, namespace: str) -> NodeVectors:
    def embed(nodes: list[Node]) -> dict[str, np.ndarray]:
        texts = [embed_text(n.props.get("scenario", n.title), n.props.get("reasoning", n.content)) for n in nodes]
        return {n.id: vec for n, vec in zip(nodes, embed_texts(ws.store, ws.embedder, texts))}

    return NodeVectors(ws.model_name, namespace, DECISION, COLUMNS, _values, embed, limit=REBUILD_AFTER)


def index_for(workspace: Workspace, namespace: str) -> DecisionIndex | ServerDecisions:
    """The workspace's index of its decisions in one namespace, synced to the store (on a store that ranks vectors
    itself, a handle that asks it instead)."""
    if Capability.VECTOR_SEARCH in workspace.store.capabilities:
        return ServerDecisions(workspace, namespace)
    name = f"decisions:{namespace}"
    refresh = persisted(workspace.index_files, FILE_KIND, name, workspace.model_name, _feed(workspace, namespace),
                        COLUMNS)
    return DecisionIndex(workspace.live(name, refresh))
