"""The derived memory index: a live vector index (``engine/live.py``) of one namespace's memories.

Built from the store, then kept current from its change log: new memories are appended (one
``changes_since`` read); an update, retraction or purge in the namespace rebuilds it. Each memory
of a conversation may carry a *pair vector*: the embedding of the previous turn followed by this
one (``props.pair_hash``). A turn's dense vector is the mean of its own vector, its pair vector and
the next turn's pair vector, so a reply is found through the question that prompted it and back.

On a store with a folder the index persists as one file (``engine/snapshot.py``): a new process maps
it and catches up from the change log instead of rebuilding. It is saved (on a thread of its own, off
the query path: ``engine/persist.schedule``) after every rebuild and once it lags the file by
``SAVE_LAG`` changes, never while a purge it has not seen is pending (a purge means a rebuild, and the
rebuild saves). Each memory's props are parsed from the file only when a metadata filter first needs them.
The time columns (``refs``, ``month``, ``month_before``) are derived by memory/dates.py's code, not read from the
store, and so are the word counts (``df``, by stem since issue 11 s5 (b); by word before): the file records the
version of that code (``DERIVED``, its ``derived`` section), and a file of another version, or of none (written
before the version existed), is rebuilt rather than trusted.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..embed.base import Embedder
from ..embed.cache import embed_missing
from ..engine.fusion import stemmed, words
from ..engine.live import Column, LiveIndex, follow
from ..engine import persist
from ..engine.persist import load_rows
from ..engine.snapshot import IndexFiles, Snapshot
from ..model import Change, Node
from ..store.base import Store
from ..workspace import Workspace
from .dates import NO_MONTH, TIME_BITS_VERSION, month_numbers, time_refs
from .answers import asks
from .records import KIND

APPEND_LIMIT = 5000  # more pending changes than this: rebuild instead of replaying
SAVE_LAG = 1000  # save the index file again once the index is this many changes ahead of it
FILE_KIND = "memory-index"
log = logging.getLogger(__name__)
# the versions of the code that derived the file's columns and word counts (module doc)
DERIVED = {"time_bits": TIME_BITS_VERSION, "df": "stems of the text index's fields", "asks": 1}


def indexed_text(node: Node) -> str:
    """The fields the text index holds (SQLite's FTS columns, PostgreSQL's tsv: key, title, summary, tags,
    content), so ``df`` counts the memories a keyword can match by each word: a date word in every memory's
    summary ("1 May 2023") is common, as the server's own counts say, not rare."""
    return " ".join([node.key or "", node.title or "", node.summary or "", " ".join(node.tags or ()),
                     node.content or ""])


PAIR, DENSE = "pair", "dense"  # context vector planes, added once the first pair vector arrives
COLUMNS = {"has_pair": Column(bool, False), "prev": Column(np.int64, -1), "next": Column(np.int64, -1),
           "title": Column(np.int32, 0, coded=True), "conversation": Column(np.int32, -1, coded=True),
           "user": Column(np.int32, -1, coded=True),
           "refs": Column(np.uint8, 0), "month": Column(np.int32, NO_MONTH),  # memory/dates.py: time expressions,
           "month_before": Column(np.int32, NO_MONTH),  # the month of created_at and of a week before it
           "asks": Column(bool, False)}  # the memory asks a question (memory/answers.py: the next turn answers it)


class Props:
    """Each row's props: those from an index file are parsed on first use, later ones appended."""

    def __init__(self, loaded: Callable[[], list[dict[str, Any]]] | None = None, count: int = 0) -> None:
        self._load, self._count = loaded, count
        self._items: list[dict[str, Any]] = []

    def _ready(self) -> list[dict[str, Any]]:
        if self._load is not None:
            self._items = self._load() + self._items
            self._load = None
        return self._items

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self._ready()[i]

    def __len__(self) -> int:
        return len(self._items) + (self._count if self._load is not None else 0)

    def __iter__(self):
        return iter(self._ready())

    def extend(self, items: Iterable[dict[str, Any]]) -> None:
        self._items.extend(items)

    def frozen(self) -> Callable[[], list[dict[str, Any]]]:
        """Every row's props as they are now, parsed when called (later appends do not reach them)."""
        load, items = self._load, list(self._items)
        return (lambda: load() + items) if load is not None else (lambda: items)


class MemoryIndex:
    """The rows of a ``LiveIndex`` (own vectors, context planes, conversation links, filter columns), plus
    each memory's props and the document frequency of stems (for pruning common query words and weighting the
    keyword coverage: engine/fusion.py)."""

    def __init__(self, dimension: int, capacity: int = 1024, rows: LiveIndex | None = None) -> None:
        self.rows = rows if rows is not None else LiveIndex(dimension, COLUMNS, capacity)
        self.props = Props()
        self.df: Counter[str] = Counter()  # a word's stem (text.stem, as the text index matches) -> memories holding it

    @property
    def source(self) -> Snapshot | None:
        """The index file the rows are mapped from, if any."""
        return self.rows.source

    @property
    def saved(self) -> int:
        """The change counter of the last index file written or read."""
        return self.rows.saved

    def intact(self) -> bool:
        """False when the file this index maps was scrubbed meanwhile (an erasure)."""
        return self.rows.intact()

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
    def refs(self) -> np.ndarray:
        """Each row's time expressions (memory/dates.py's bit set)."""
        return self.rows.column("refs")

    @property
    def asks(self) -> np.ndarray:
        """Whether each row asks a question (memory/answers.py)."""
        return self.rows.column("asks")

    @property
    def months(self) -> np.ndarray:
        """Each row's month (year * 12 + month - 1 of its created_at; dates.NO_MONTH when unknown)."""
        return self.rows.column("month")

    @property
    def months_before(self) -> np.ndarray:
        """The month of the day a week before each row's created_at."""
        return self.rows.column("month_before")

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
            "conversation": [p.get("conversation_id") for p in props], "user": [p.get("user_id") for p in props],
            "refs": [time_refs(node.content) for node in nodes], "asks": [asks(node.content) for node in nodes]}
        months = [month_numbers(p.get("created_at")) for p in props]
        values["month"], values["month_before"] = [m for m, _ in months], [b for _, b in months]
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
            self.df.update(set(map(stemmed, words(indexed_text(node)))))
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


def save_job(files: IndexFiles, name: str, model: str, index: MemoryIndex) -> Callable[[], bool]:
    """A save of ``index`` as it is now (``engine/persist.save_job``), with its props and word counts."""
    props, df = index.props.frozen(), dict(index.df)
    return persist.save_job(files, FILE_KIND, name, model, index.rows, lambda: {
        "props": json.dumps(props()).encode(), "df": json.dumps(df).encode(),
        "derived": json.dumps(DERIVED, sort_keys=True).encode()})


def save_index(files: IndexFiles, name: str, model: str, index: MemoryIndex) -> bool:
    """Write ``index`` to its file now unless a purge it has not seen is pending; True when written."""
    return save_job(files, name, model, index)()


def _planes(dimension: int) -> dict[str, Column]:
    return {PAIR: Column(np.float32, None, dimension), DENSE: Column(np.float32, None, dimension)}


def load_index(files: IndexFiles, name: str, model: str, dimension: int) -> MemoryIndex | None:
    """The index held in its file, if the file passes every check (``engine/snapshot.py``) and fits."""
    loaded = load_rows(files, FILE_KIND, name, model, COLUMNS, optional=_planes)
    if loaded is None:
        return None
    rows, snap = loaded
    if rows.dimension != dimension:
        return None
    index = MemoryIndex(dimension, rows=rows)
    try:
        derived = snap.json("derived") if snap.has("derived") else None
        if derived != DERIVED:  # its time columns were derived by other code: rebuild them from the store
            log.info("rebuilding the memory index file %s: derived by %s, this code is %s", snap.path, derived,
                     DERIVED)
            return None
        index.props = Props(lambda: snap.json("props"), rows.n)
        index.df = Counter(snap.json("df"))
    except (KeyError, ValueError, TypeError) as exc:  # a file that passed the checks yet does not fit: rebuild
        log.warning("ignoring the memory index file %s: %s", snap.path, exc)
        return None
    return index


def memory_index(ws: Workspace, namespace: str, dimension: int) -> MemoryIndex:
    """The current index for ``namespace``: held by the workspace (or mapped from its file), caught up from
    the change log, and saved to its file after a rebuild or once it runs ``SAVE_LAG`` changes ahead."""
    feed = MemoryFeed(ws.store, ws.model_name, lambda: ws.embedder, namespace, dimension)
    files, name, model = ws.index_files, f"memory:{namespace}", ws.model_name

    def refresh(current: MemoryIndex | None) -> MemoryIndex:
        if current is not None and not current.intact():
            current = None
        if current is None and files.enabled:
            current = load_index(files, name, model, dimension)
        fresh = follow(current, ws.store, feed)
        if fresh is not current:
            fresh.rows.due = True
        if files.enabled and len(fresh) and (fresh.rows.due or fresh.counter - fresh.saved >= SAVE_LAG):
            if persist.schedule(files, name, lambda: save_job(files, name, model, fresh)):  # on its thread
                fresh.rows.due = False
        return fresh

    return ws.live(name, refresh)
