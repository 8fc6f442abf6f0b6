"""The knowledge graph's own nodes as retrieval candidates (seed 003's GraphRAG over a loaded graph).

Entities, concepts, documents and every other node of a graph (memories aside: they come through the memory
source, and checkpoints and cross-graph links, which are bookkeeping) are found by

- ``dense``: the cosine of the query and the node's text (its name and content; ``writes.make_node`` gives each
  node that text to embed, so the store keeps its vector current as the node changes; nodes written without one
  are embedded on the first search that needs them, ``embed_missing``);
- ``keyword``: the share of the query's words the node's text holds (``proximity.term_share``: absolute);
- ``name``: 1 when the query names the node (whole words, ``proximity.mentioned_nodes``).

``score = RELEVANCE(dense + KEYWORD * keyword + NAME * name)``: the curve memory and vector scores use
(engine/fusion.py), so a node found by meaning alone scores what its cosine earns and one the query names scores
high. Only nodes the graph's principal sees are searched or returned (``ContextGraph.sees``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..embed.cache import embed_missing
from ..engine import proximity
from ..engine.fusion import RELEVANCE
from ..model import MEMORY_KIND, Node
from ..store.base import Capability, Store
from ..vector_store import VectorStore
from .writes import node_text

KEYWORD = 0.3  # how much cosine the query's words all held in the node's text are worth
NAME = 0.35  # how much cosine being named by the query is worth (a named node alone: RELEVANCE(0.35) = 0.49)
SKIPPED_KINDS = frozenset({MEMORY_KIND, "checkpoint", "graph_link"})  # found elsewhere, or bookkeeping


@dataclass
class NodeHit:
    node: Node
    score: float
    signals: dict[str, float]


def search_nodes(graph: Any, query: str, limit: int = 10) -> list[NodeHit]:
    """The ``limit`` graph nodes best matching ``query``, best first (see the module doc): only nodes of the
    namespaces the graph's principal reads (``scope``) that it sees (``sees``); none for one who reads none."""
    ws, store = graph.workspace, graph.store
    scope = graph.scope
    embed_missing(store, ws.embedder, scope)
    pool = max(limit * 3, 20)
    qv = ws.embed_query(query)
    dense: dict[str, float] = {}
    for row in VectorStore(workspace=ws).search(qv, limit=pool * 2, namespace=scope):
        if row.get("kind") not in SKIPPED_KINDS:
            dense[str(row["id"])] = max(0.0, float(row["score"]))
    worded = [sid for sid, _ in store.text_search(query, namespace=scope, limit=pool)]
    named = [sid for sid in (graph.resolve(n) for n in proximity.mentioned_nodes(graph, query)) if sid]
    ids = list(dict.fromkeys([*dense, *worded, *named]))
    nodes = {i: n for i, n in store.get_nodes(ids).items() if n.kind not in SKIPPED_KINDS and graph.sees(n)}
    missing = [n.embed_hash for i, n in nodes.items() if i not in dense and n.embed_hash]
    sims = _similarities(store, qv, ws.model_name, missing) if missing else {}
    named_set = set(named)
    hits = []
    for sid, node in nodes.items():
        cos = dense.get(sid, max(0.0, float(sims.get(node.embed_hash or "", 0.0))))
        words = proximity.term_share(query, node_text(node).replace("_", " "))
        name = 1.0 if sid in named_set else 0.0
        score = float(RELEVANCE(cos + KEYWORD * words + NAME * name))
        hits.append(NodeHit(node, score, {"dense": round(cos, 6), "keyword": round(words, 6), "name": name}))
    hits.sort(key=lambda h: (-h.score, h.node.id))
    return hits[:limit]


def _similarities(store: Store, qv: np.ndarray, model: str, hashes: list[str]) -> dict[str, float]:
    """The query's inner product with the stored vectors of ``hashes``: in the store when it ranks vectors itself
    (``Capability.VECTOR_SEARCH``), else here from the vectors it holds."""
    if Capability.VECTOR_SEARCH in store.capabilities:
        return store.similarities(qv, model, hashes)
    return {h: float(v @ qv) for h, v in store.get_vectors(hashes, model).items()}
