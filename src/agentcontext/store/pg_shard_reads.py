"""The reads of a sharded store (``pg_shards.ShardedStore``): routed to the shards holding the namespaces asked
for, or fanned out to every shard and merged exactly (see the module doc there)."""
from __future__ import annotations

import heapq
from typing import Any, Sequence

import numpy as np

from ..errors import ShardUnavailableError
from ..model import Edge, Node
from .base import Adjacency, EdgeColumns, Frontier, NodeBrief, TimedEdges

ORDER_KEYS = {"key": lambda n: (n.key, n.id), "id": lambda n: n.id,
              "recorded": lambda n: (n.recorded_at or "", n.id), "recorded_desc": lambda n: (n.recorded_at or "", n.id)}


def _sum_dicts(parts: Sequence[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            out[key] = out.get(key, 0) + value
    return out


def _concat(parts: Sequence[list]) -> list:
    return [x for part in parts for x in part]


class ShardReads:
    """Mixin: every read of the store protocol over ``routed`` (by namespace), ``by_ids`` and ``on``."""

    routed: Any
    by_ids: Any
    on: Any
    names: list[str]
    shards: dict

    # --- nodes ---------------------------------------------------------------------------------------
    def get_node(self, id: str, as_of: str | None = None, include_retracted: bool = False) -> Node | None:
        return self.get_nodes([id], as_of, include_retracted).get(id)

    def get_nodes(self, ids, as_of: str | None = None, include_retracted: bool = False) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for part in self.by_ids(list(ids), lambda s, chunk: s.get_nodes(chunk, as_of, include_retracted)):
            out.update(part)
        return out

    def find_nodes(self, namespace=None, kind=None, key_prefix=None, keys=None, tags=None, valid_at=None,
                   as_of=None, order="key", offset=0, limit=None, with_content=True) -> list[Node]:
        window = None if limit is None else offset + limit
        parts = self.routed(namespace, lambda s, ns: s.find_nodes(ns, kind, key_prefix, keys, tags, valid_at, as_of,
                                                                  order, 0, window, with_content))
        if len(parts) == 1:
            return parts[0][offset:None if window is None else window]
        key = ORDER_KEYS.get(order)
        nodes = list(heapq.merge(*parts, key=key, reverse=order == "recorded_desc")) if key else _concat(parts)
        return nodes[offset:None if window is None else window]

    def node_index(self, namespace, as_of: str | None = None) -> list[tuple]:
        return list(heapq.merge(*self.routed(namespace, lambda s, ns: s.node_index(ns, as_of)),
                                key=lambda r: (r[1], r[0])))

    def node_ids(self, namespace=None, include_retracted: bool = False) -> list[str]:
        return _concat(self.routed(namespace, lambda s, ns: s.node_ids(ns, include_retracted)))

    def node_briefs(self, ids: Sequence[str]) -> dict[str, NodeBrief]:
        out: dict[str, NodeBrief] = {}
        for part in self.by_ids(list(ids), lambda s, chunk: s.node_briefs(chunk)):
            out.update(part)
        return out

    def get_contents(self, ids: Sequence[str], as_of: str | None = None) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in self.by_ids(list(ids), lambda s, chunk: s.get_contents(chunk, as_of)):
            out.update(part)
        return out

    def count_nodes(self, namespace=None, kind: str | None = None) -> int:
        return sum(self.routed(namespace, lambda s, ns: s.count_nodes(ns, kind)))

    def count_by_kind(self, namespace=None) -> dict[str, int]:
        return _sum_dicts(self.routed(namespace, lambda s, ns: s.count_by_kind(ns)))

    def node_versions(self, id: str) -> list[Node]:
        return max(self.by_ids([id], lambda s, chunk: s.node_versions(chunk[0])), key=len, default=[])

    def node_version(self, id: str, version: int) -> Node | None:
        return next((n for n in self.by_ids([id], lambda s, c: s.node_version(c[0], version)) if n), None)

    def namespaces(self) -> list[str]:
        return sorted(set(_concat(self.routed(None, lambda s, ns: s.namespaces()))))

    def nodes_naming(self, prop: str, values: Sequence[str], namespace=None, kind=None) -> list[Node]:
        return _concat(self.routed(namespace, lambda s, ns: s.nodes_naming(prop, values, ns, kind)))

    def tombstone(self, id: str) -> dict[str, Any] | None:
        return next((t for t in self.by_ids([id], lambda s, c: s.tombstone(c[0])) if t), None)

    def tombstones(self, namespace=None, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        found = _concat(self.routed(namespace, lambda s, ns: s.tombstones(ns, ids)))
        return sorted(found, key=lambda t: (t["purged_at"] or "", t["id"]))

    def erased(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` an erasure removed, on any shard (an entity's id is erased on every shard naming it)."""
        out: set[str] = set()
        for name in self.names:
            out |= self.on(name, lambda s: s.erased(ids))
        return out

    def nodes_holding(self, needles: Sequence[str]) -> list[str]:
        return _concat(self.routed(None, lambda s, ns: s.nodes_holding(needles)))

    def find_by_props(self, path: Sequence[str], value: str, namespace=None, kind=None,
                      include_retracted: bool = False) -> list[str]:
        return _concat(self.routed(namespace, lambda s, ns: s.find_by_props(path, value, ns, kind,
                                                                            include_retracted)))

    def phrase_search(self, phrase: str, namespace=None, kind=None, limit: int | None = None) -> list[str]:
        return _concat(self.routed(namespace, lambda s, ns: s.phrase_search(phrase, ns, kind, limit)))[:limit]

    # --- edges ---------------------------------------------------------------------------------------
    def edges(self, src=None, dst=None, type=None, namespace=None, as_of=None, valid_at=None, min_weight=None,
              offset: int = 0, limit: int | None = None, include_retracted: bool = False) -> list[Edge]:
        window = None if limit is None else offset + limit
        parts = self.routed(namespace, lambda s, ns: s.edges(src, dst, type, ns, as_of, valid_at, min_weight, 0,
                                                             window, include_retracted))
        merged = list(heapq.merge(*parts, key=lambda e: (e.src, e.position, e.dst, e.type)))
        return merged[offset:window]

    def count_edges(self, namespace=None, type: str | None = None) -> int:
        return sum(self.routed(namespace, lambda s, ns: s.count_edges(ns, type)))

    def count_edges_by_type(self, namespace=None) -> dict[str, int]:
        return _sum_dicts(self.routed(namespace, lambda s, ns: s.count_edges_by_type(ns)))

    def adjacency(self, namespace=None, types=None, as_of=None, valid_at=None) -> Adjacency:
        return list(heapq.merge(*self.routed(namespace, lambda s, ns: s.adjacency(ns, types, as_of, valid_at)),
                                key=lambda e: (e[0], e[4])))

    def edge_columns(self, namespace=None) -> EdgeColumns:
        return _concat(self.routed(namespace, lambda s, ns: s.edge_columns(ns)))

    def edges_touching(self, ids: Sequence[str], side: str = "src", types=None, min_weight=None) -> Frontier:
        """Edges of these nodes on every shard (an edge lives with its own namespace, which may not be its ends')."""
        return _concat(self.routed(None, lambda s, ns: s.edges_touching(ids, side, types, min_weight)))

    def timed_edges(self, namespace=None) -> TimedEdges:
        return _concat(self.routed(namespace, lambda s, ns: s.timed_edges(ns)))

    def edge_history(self, namespace=None) -> list[Edge]:
        return _concat(self.routed(namespace, lambda s, ns: s.edge_history(ns)))

    # --- text ----------------------------------------------------------------------------------------
    def _bm25_stats(self, query: str, namespace=None, within: Sequence[str] | None = None) -> tuple:
        """Every shard's BM25 statistics added up (``PostgresStore._bm25_stats``): what one server would count."""
        if within is not None:
            parts = self.by_ids(list(within), lambda s, chunk: s._bm25_stats(query, None, chunk))
        else:
            parts = self.routed(namespace, lambda s, ns: s._bm25_stats(query, ns))
        rows = sum(p[0] for p in parts)
        avgdl = sum(p[0] * p[1] for p in parts) / rows if rows else 0.0
        held: dict[tuple[str, str], int] = {}
        for p_rows, _, _, found in parts:
            for term, lex, n, share in found:
                held[(term, lex)] = held.get((term, lex), 0) + (n if n is not None else int((share or 0.0) * p_rows))
        return rows, avgdl, all(p[2] for p in parts), [(t, x, n, None) for (t, x), n in held.items()]

    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None, within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Each shard ranks with the statistics of every shard searched (``_bm25_stats``), so the scores are one
        server's and the best ``limit`` of all the shards' best ``limit`` are the answer."""
        if limit <= 0 or (ids is not None and not ids) or (within is not None and not within):
            return []
        stats = self._bm25_stats(query, namespace, within)
        if within is not None:
            parts = self.by_ids(list(within), lambda s, chunk: s._ranked(query, None, kind, limit, common, ids,
                                                                         chunk, stats=stats))
        else:
            parts = self.routed(namespace, lambda s, ns: s._ranked(query, ns, kind, limit, common, ids,
                                                                   stats=stats))
        return sorted(_concat(parts), key=lambda hit: -hit[1])[:limit]

    def term_counts(self, query: str, namespace=None) -> tuple[int, dict[str, int]]:
        parts = self.routed(namespace, lambda s, ns: s.term_counts(query, ns))
        return sum(p[0] for p in parts), _sum_dicts([p[1] for p in parts])

    # --- vectors -------------------------------------------------------------------------------------
    def get_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name in self.names:
            wanted = [h for h in hashes if h not in out]
            if not wanted:
                break
            try:
                out.update(self.on(name, lambda s, w=wanted: s.get_vectors(w, model)))
            except ShardUnavailableError:
                continue  # a vector is on every shard that answers
        return out

    def missing_vectors(self, model: str, namespace=None) -> list[tuple[str, str]]:
        return list(dict.fromkeys(_concat(self.routed(namespace, lambda s, ns: s.missing_vectors(model, ns)))))

    def load_vectors(self, model: str, namespace=None, kind=None) -> tuple[list[str], np.ndarray]:
        parts = [p for p in self.routed(namespace, lambda s, ns: s.load_vectors(model, ns, kind)) if p[0]]
        if not parts:
            return [], np.zeros((0, 0), dtype=np.float32)
        return _concat([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def count_vectors(self, model: str, namespace=None, kind=None) -> int:
        return sum(self.routed(namespace, lambda s, ns: s.count_vectors(model, ns, kind)))

    def nearest(self, vector: np.ndarray, model: str, k: int, namespace=None, kind=None, tags=None, valid_at=None,
                props=None, titles=None) -> list[tuple[str, float]]:
        """Each shard's best ``k`` by inner product (an absolute score), merged: the best ``k`` of them all."""
        parts = self.routed(namespace, lambda s, ns: s.nearest(vector, model, k, ns, kind, tags, valid_at, props,
                                                               titles))
        return sorted(_concat(parts), key=lambda hit: -hit[1])[:k]

    def nodes_linked(self, ids: Sequence[str], prop: str, namespace: str, kind: str,
                     fields: Sequence[str] | None = None,
                     content: bool = False) -> tuple[dict[str, Node], list[Node]]:
        parts = self.routed(namespace, lambda s, ns: s.nodes_linked(ids, prop, ns, kind, fields, content))
        if not parts:
            return {}, []
        return parts[0]

    def holds_at_least(self, n: int, namespace: str, kind: str) -> bool:
        return n <= 0 or any(self.routed(namespace, lambda s, ns: s.holds_at_least(n, ns, kind)))

    def similarities(self, vector: np.ndarray, model: str, hashes: Sequence[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        for name in self.names:
            wanted = [h for h in hashes if h not in out]
            if not wanted:
                break
            try:
                out.update(self.on(name, lambda s, w=wanted: s.similarities(vector, model, w)))
            except ShardUnavailableError:
                continue
        return out

    # --- records and audit: the directory shard's ------------------------------------------------------
    def get_record(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.on(self.names[0], lambda s: s.get_record(kind, key))

    def list_records(self, kind: str, prefix: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        return self.on(self.names[0], lambda s: s.list_records(kind, prefix))

    def audit(self, principal: str | None = None, since: str | None = None, limit: int | None = None) -> list[dict]:
        return self.on(self.names[0], lambda s: s.audit(principal, since, limit))
