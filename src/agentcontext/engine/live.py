"""A live vector index: growable float32 rows that follow the store's change log.

``LiveIndex`` holds one float32 matrix (``vectors``, one row per item), the id of each row and the
row of each id, an ``alive`` mask (a dropped row is zeroed and stays dead until the next rebuild),
and named columns: a number per row, a further vector per row (``width``), or a label code per row
(``coded``) for filters. ``search`` is exact: one product over the matrix, masked, then ``top_k``.

An index remembers the store change counter it reflects (``counter``). ``follow`` brings it up to
the store: it reads ``store.changes_since(counter)`` and lets a ``Feed`` replay them (append,
replace or drop rows). The feed decides what a change means for its rows; when it cannot replay
them (an edit it does not handle, more than ``feed.limit`` changes, a counter that went backwards,
a damaged index) the index is rebuilt from the store instead. ``NodeVectors`` is the feed for "the
active nodes of a namespace and kind that have a vector": packs, decisions and ``VectorStore``.

An index persists beside the store through ``engine/snapshot.py``: ``export`` gives its used rows
(every column) and the lists beside them, ``restore`` adopts arrays mapped from a file (no copy: they
are copied only when the index grows past them), and ``follow`` catches it up from the change log as
for an index built now.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Mapping, Protocol, Sequence, TypeVar

import numpy as np

from ..model import Change, Node
from ..store.base import Store
from .vectors import masked_top_k, similarities

VECTORS = "vectors"
ALIVE = "alive"


@dataclass(frozen=True)
class Column:
    """One per-row column: ``dtype``; ``fill`` for rows not yet written (None: left uninitialised);
    ``width`` for a vector per row; ``coded`` for a label column (values are codes into ``labels``)."""

    dtype: Any
    fill: Any = 0
    width: int | None = None
    coded: bool = False


class LiveIndex:
    """Rows of float32 vectors keyed by id, with an alive mask and named columns; see the module doc."""

    def __init__(self, dimension: int, columns: Mapping[str, Column] | None = None, capacity: int = 1024) -> None:
        self.dimension = dimension
        self.n = 0
        self.counter = -1  # the store change counter these rows reflect (-1: not built from a store)
        self.dead = 0
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self.labels: dict[str, list[str]] = {}
        self._codes: dict[str, dict[str, int]] = {}
        self._specs: dict[str, Column] = {VECTORS: Column(np.float32, None, dimension), ALIVE: Column(bool, False)}
        self._specs.update(columns or {})
        self._arrays: dict[str, np.ndarray] = {}
        self.capacity = 0
        self.pending: set[str] = set()  # ids a feed knows of that wait for their vector
        self.incomplete = False  # built while some items had no vector (a feed decides what that means)
        self.lock = threading.RLock()  # held by a feed while it changes rows
        self.source: Any = None  # the mapped index file the rows came from (engine/persist.py), if any
        self.saved = -1  # the change counter of the last index file written or read
        self.due = False  # rebuilt or rows dropped since the last save started: save at the next chance
        self._resize(max(16, capacity))

    # --- storage ---------------------------------------------------------------------------
    def _allocate(self, spec: Column, capacity: int) -> np.ndarray:
        shape = (capacity,) if spec.width is None else (capacity, spec.width)
        return np.empty(shape, spec.dtype) if spec.fill is None else np.full(shape, spec.fill, spec.dtype)

    def _resize(self, capacity: int) -> None:
        for name, spec in self._specs.items():
            new = self._allocate(spec, capacity)
            old = self._arrays.get(name)
            if old is not None:
                new[: self.n] = old[: self.n]
            self._arrays[name] = new
        self.capacity = capacity

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more rows (capacity doubles, so appends cost amortised O(1))."""
        if self.n + extra > self.capacity:
            self._resize(max(self.capacity * 2, self.n + extra))

    def add_column(self, name: str, spec: Column, initial: np.ndarray | None = None) -> None:
        """A column added later (e.g. context vectors, once the first one exists); ``initial`` fills the used rows."""
        if name in self._specs:
            return
        self._specs[name] = spec
        array = self._allocate(spec, self.capacity)
        if initial is not None:
            array[: self.n] = initial
        self._arrays[name] = array

    def storage(self, name: str = VECTORS) -> np.ndarray:
        """The whole backing array of a column (every allocated row; the same object until it grows)."""
        return self._arrays[name]

    def has(self, name: str) -> bool:
        return name in self._specs

    def column(self, name: str) -> np.ndarray:
        """The used rows of a column (a view: writes go to the index)."""
        return self._arrays[name][: self.n]

    @property
    def vectors(self) -> np.ndarray:
        return self._arrays[VECTORS][: self.n]

    @property
    def alive(self) -> np.ndarray:
        return self._arrays[ALIVE][: self.n]

    @property
    def live_count(self) -> int:
        return self.n - self.dead

    @property
    def wasteful(self) -> bool:
        """So many dead rows that a rebuild pays for itself."""
        return self.dead > 1000 and self.dead > self.n // 4

    def __len__(self) -> int:
        return self.n

    # --- persistence -----------------------------------------------------------------------
    def intact(self) -> bool:
        """False when the index file these rows map was scrubbed meanwhile (an erasure)."""
        return self.source is None or self.source.intact()

    def export(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The used rows of every column, and what a ``restore`` needs beside them (ids, labels, counts)."""
        arrays = {name: array[: self.n] for name, array in self._arrays.items()}
        return arrays, {"ids": self.ids, "labels": self.labels, "dead": self.dead, "dimension": self.dimension,
                        "pending": sorted(self.pending), "incomplete": self.incomplete}

    @classmethod
    def restore(cls, columns: Mapping[str, Column], arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any],
                counter: int) -> "LiveIndex":
        """An index over ``arrays`` as ``export`` gave them (e.g. mapped from a file), reflecting ``counter``.
        Raises ValueError when the arrays do not fit the columns."""
        ids = list(meta["ids"])
        index = cls(int(meta["dimension"]), columns, capacity=16)
        n = len(ids)
        for name, spec in index._specs.items():
            array = arrays.get(name)
            shape = (n,) if spec.width is None else (n, spec.width)
            if array is None or array.shape != shape or array.dtype != np.dtype(spec.dtype):
                raise ValueError(f"column {name!r} does not fit an index of {n} rows")
        index._arrays = {name: arrays[name] for name in index._specs}
        index.capacity = index.n = n
        index.ids = ids
        index.row = {nid: i for i, nid in enumerate(ids)}
        if len(index.row) != n:
            raise ValueError("an id appears twice")
        index.labels = {k: list(v) for k, v in meta["labels"].items()}
        index._codes = {k: {label: i for i, label in enumerate(v)} for k, v in index.labels.items()}
        index.dead = int(meta["dead"])
        index.pending = set(meta.get("pending", ()))
        index.incomplete = bool(meta.get("incomplete", False))
        index.counter = counter
        return index

    # --- labels ----------------------------------------------------------------------------
    def code(self, column: str, label: str) -> int:
        """The code of ``label`` in a coded column, assigned in order of first appearance."""
        codes = self._codes.setdefault(column, {})
        found = codes.get(label)
        if found is None:
            found = codes[label] = len(codes)
            self.labels.setdefault(column, []).append(label)
        return found

    def code_of(self, column: str, label: str) -> int | None:
        """The code of ``label`` if it has one (a filter on an unknown label matches nothing)."""
        return self._codes.get(column, {}).get(label)

    # --- rows ------------------------------------------------------------------------------
    def put(self, ids: Sequence[str], vectors: np.ndarray | Sequence[np.ndarray],
            values: Mapping[str, Sequence[Any]] | None = None) -> np.ndarray:
        """Append new ids and overwrite (and revive) known ones; ``values`` gives other columns, aligned
        with ``ids`` (labels for coded columns). Returns the rows written."""
        count = len(ids)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        matrix = vectors if isinstance(vectors, np.ndarray) else np.stack(vectors)
        if self.dimension == 0 and self.n == 0:  # adopt the first rows' dimension
            self.dimension = int(matrix.shape[1])
            self._specs[VECTORS] = Column(np.float32, None, self.dimension)
            self._arrays[VECTORS] = self._allocate(self._specs[VECTORS], self.capacity)
        if matrix.shape != (count, self.dimension):
            raise ValueError(f"rows of shape {matrix.shape} do not fit an index of dimension {self.dimension}")
        fresh = [i for i in dict.fromkeys(ids) if i not in self.row]
        self.reserve(len(fresh))
        new_row = {nid: self.n + k for k, nid in enumerate(fresh)}
        rows = np.fromiter((self.row.get(nid, new_row.get(nid, -1)) for nid in ids), dtype=np.int64, count=count)
        revived = {int(r) for r in rows if r < self.n and not self._arrays[ALIVE][r]}
        self._arrays[VECTORS][rows] = matrix
        self._arrays[ALIVE][rows] = True
        for name, column in (values or {}).items():
            spec = self._specs[name]
            data = [spec.fill if v is None else self.code(name, str(v)) for v in column] if spec.coded else column
            self._arrays[name][rows] = data
        self.dead -= len(revived)
        self.ids.extend(fresh)
        self.row.update(new_row)
        self.n += len(fresh)  # last: a reader sees whole rows only
        return rows

    def drop(self, ids: Sequence[str] | set[str]) -> int:
        """Mark rows dead and zero their vectors (nothing of an erased item stays in the matrix)."""
        rows = [r for r in (self.row.get(i) for i in ids) if r is not None and self._arrays[ALIVE][r]]
        if rows:
            self._arrays[ALIVE][rows] = False
            self._arrays[VECTORS][rows] = 0.0
            self.dead += len(rows)
        return len(rows)

    # --- queries ---------------------------------------------------------------------------
    def mask(self, **labels: str | None) -> np.ndarray:
        """Alive rows whose coded columns hold these labels (a None label does not filter)."""
        keep = self.alive.copy()
        for column, label in labels.items():
            if label is None:
                continue
            code = self.code_of(column, label)
            if code is None:
                return np.zeros(self.n, dtype=bool)
            keep &= self.column(column) == code
        return keep

    def scores(self, query: np.ndarray, rows: np.ndarray | None = None, plane: str = VECTORS) -> np.ndarray:
        """Cosine of ``query`` with each row (or with ``rows``), against ``plane`` (the vectors by default)."""
        matrix = self._arrays[plane][: self.n] if rows is None else self._arrays[plane][rows]
        return similarities(matrix, query)

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The ``k`` best alive rows (within ``mask``) as (id, cosine), best first, ties by row."""
        with self.lock:
            sims = self.scores(query)
            keep = self.alive if mask is None else mask
            if self.dead == 0 and mask is None:
                keep = None
            return [(self.ids[i], float(sims[i])) for i in masked_top_k(sims, k, keep)]


# --- following the store -------------------------------------------------------------------------
Index = TypeVar("Index")


class Feed(Protocol[Index]):
    """How one index follows the store."""

    limit: int  # more changes pending than this: rebuild rather than replay

    def build(self, store: Store) -> Index:
        """A full build; the result's ``counter`` is the change counter read before loading."""

    def apply(self, index: Index, store: Store, changes: Sequence[Change]) -> bool:
        """Replay changes onto ``index``; False when only a rebuild will do."""


class Counted(Protocol):
    counter: int


C = TypeVar("C", bound=Counted)


def follow(index: C | None, store: Store, feed: Feed[C]) -> C:
    """``index`` brought up to the store's change counter (caught up in place), or a rebuilt one."""
    counter = store.change_counter()
    if index is not None and index.counter == counter:
        return index
    if index is None or index.counter < 0 or index.counter > counter:  # never built, or the store went back
        return feed.build(store)
    changes = store.changes_since(index.counter, limit=feed.limit + 1)
    if len(changes) > feed.limit or not feed.apply(index, store, changes):
        return feed.build(store)
    index.counter = changes[-1].seq if changes else counter
    return index


def stored_epoch(value: str | None, default: float) -> float:
    """Seconds since the epoch of a timestamp as the store writes it (normalised ISO-8601)."""
    return datetime.fromisoformat(value).timestamp() if value else default


Values = Callable[[Node], Mapping[str, Any]]
Embed = Callable[[list[Node]], dict[str, np.ndarray]]


class NodeVectors:
    """Feed: one row per active node of ``namespace`` (and ``kind``) with a vector for ``model``.

    ``values(node)`` gives the node's other columns. ``embed(nodes)`` (optional) returns vectors by
    node id for nodes stored without one (it may write them to the store). Without it such a node is
    ``pending`` and is picked up when a ``vectors.put`` arrives; a build that finds nodes lacking
    vectors marks the index incomplete, and the next ``vectors.put`` rebuilds it.
    """

    def __init__(self, model: str, namespace: str | Sequence[str] | None = None,
                 kind: str | Sequence[str] | None = None, columns: Mapping[str, Column] | None = None,
                 values: Values | None = None, embed: Embed | None = None, limit: int = 50_000) -> None:
        self.model = model
        self.namespace, self.kind = namespace, kind
        self.namespaces = None if namespace is None else {namespace} if isinstance(namespace, str) else set(namespace)
        self.kinds = None if kind is None else {kind} if isinstance(kind, str) else set(kind)
        self.columns = dict(columns or {})
        self.values = values
        self.embed = embed
        self.limit = limit

    def _in_scope(self, namespace: str, kind: str | None) -> bool:
        return (self.namespaces is None or namespace in self.namespaces) and (
            self.kinds is None or kind in self.kinds)

    def _columns_of(self, nodes: Sequence[Node]) -> dict[str, list[Any]] | None:
        if self.values is None:
            return None
        rows = [self.values(n) for n in nodes]
        return {name: [r[name] for r in rows] for name in self.columns}

    def build(self, store: Store) -> LiveIndex:
        counter = store.change_counter()
        ids, matrix = store.load_vectors(self.model, self.namespace, self.kind)
        index = LiveIndex(matrix.shape[1] if ids else 0, self.columns, capacity=len(ids) + len(ids) // 4)
        if self.values is None and self.embed is None:
            index.put(ids, matrix)
            index.incomplete = bool(store.missing_vectors(self.model, self.namespace))
        else:
            nodes = {n.id: n for n in store.find_nodes(namespace=self.namespace, kind=self.kind, order="none",
                                                       with_content=False)}
            keep = [i for i, nid in enumerate(ids) if nid in nodes]  # skip any written since the first read
            if len(keep) < len(ids):
                ids, matrix = [ids[i] for i in keep], matrix[keep]
            index.put(ids, matrix, self._columns_of([nodes[i] for i in ids]))
            lacking = [n for nid, n in nodes.items() if nid not in index.row]
            if lacking and not self._put(index, lacking, {}):
                raise ValueError("vectors of mixed dimensions in one index")
            index.incomplete = self.embed is None and bool(lacking)
        index.counter = counter
        return index

    def _put(self, index: LiveIndex, nodes: list[Node], vectors: dict[str, np.ndarray]) -> bool:
        """Write the nodes that have (or, with ``embed``, get) a vector; the others become pending."""
        lacking = [n for n in nodes if n.id not in vectors]
        if lacking and self.embed is not None:
            vectors.update(self.embed(lacking))
        ready = [n for n in nodes if n.id in vectors]
        index.pending.update(n.id for n in nodes if n.id not in vectors)
        index.pending.difference_update(n.id for n in ready)
        if not ready:
            return True
        matrix = np.stack([vectors[n.id] for n in ready])
        if matrix.shape[1] != index.dimension and not (index.n == 0 and index.dimension == 0):
            return False  # another dimension than the rows already held: rebuild
        index.put([n.id for n in ready], matrix, self._columns_of(ready))
        return True

    def apply(self, index: LiveIndex, store: Store, changes: Sequence[Change]) -> bool:
        touched: set[str] = set()
        removed: set[str] = set()
        for ch in changes:
            if ch.op == "node.put":
                if ch.target in index.row or ch.target in index.pending or self._in_scope(
                        ch.namespace, ch.detail.get("kind")):
                    touched.add(ch.target)
                    removed.discard(ch.target)
            elif ch.op in ("node.retract", "node.purge"):
                if ch.target in index.row or ch.target in index.pending:
                    removed.add(ch.target)
                touched.discard(ch.target)
            elif ch.op == "vectors.delete":
                return False  # which rows lost a vector is not logged: reload
            elif ch.op == "vectors.put" and self.embed is None:
                if index.incomplete:
                    return False
                touched |= index.pending
        with index.lock:
            if touched:
                found = store.get_nodes(sorted(touched))
                live = [n for n in found.values() if self._in_scope(n.namespace, n.kind)]
                removed |= touched - {n.id for n in live}
                hashes = {n.id: n.embed_hash for n in live if n.embed_hash}
                known = store.get_vectors(sorted(set(hashes.values())), self.model) if hashes else {}
                vectors = {nid: known[h] for nid, h in hashes.items() if h in known}
                removed |= {n.id for n in live if n.id not in vectors} if self.embed is None else set()
                if not self._put(index, live, vectors):
                    return False
            index.drop(removed)
            index.pending.difference_update(removed - touched)
            return not index.wasteful
