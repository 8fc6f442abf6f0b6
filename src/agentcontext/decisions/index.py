"""The exact vector index over decision nodes: a live index (``engine/live.py``) following the change log.

The first use loads every decision vector (``store.load_vectors``); afterwards each query reads
only the changes since the last one and appends, replaces or drops those rows, so recording one
decision does not rebuild 10,000 rows. Category and validity windows are columns, so filters are
masks over one matrix product. A decision stored without a vector (written by someone who did not
embed it) is embedded when the index meets it, and the vector is cached in the store.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..embed.cache import embed_texts
from ..engine.live import Column, LiveIndex, NodeVectors, follow, stored_epoch
from ..engine.vectors import masked_top_k
from ..model import Node
from ..workspace import Workspace
from .common import DECISION, embed_text

REBUILD_AFTER = 50_000  # more changes than this since the last sync: reload everything
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
            ) -> tuple[list[tuple[str, float]], np.ndarray, np.ndarray]:
        """The k best (id, cosine) under the filters, plus the full score vector and mask."""
        rows = self.rows
        with rows.lock:
            sims = rows.scores(qvec)
            m = self.mask(category, at)
            best = masked_top_k(sims, k, m)
            return [(rows.ids[i], float(sims[i])) for i in best], sims, m


def _feed(ws: Workspace, namespace: str) -> NodeVectors:
    def embed(nodes: list[Node]) -> dict[str, np.ndarray]:
        texts = [embed_text(n.props.get("scenario", n.title), n.props.get("reasoning", n.content)) for n in nodes]
        return {n.id: vec for n, vec in zip(nodes, embed_texts(ws.store, ws.embedder, texts))}

    return NodeVectors(ws.model_name, namespace, DECISION, COLUMNS, _values, embed, limit=REBUILD_AFTER)


def index_for(workspace: Workspace, namespace: str) -> DecisionIndex:
    """The workspace's index of its decisions in one namespace, synced to the store."""
    feed = _feed(workspace, namespace)
    rows = workspace.live(f"decisions:{namespace}", lambda current: follow(current, workspace.store, feed))
    return DecisionIndex(rows)
