"""The names of graph nodes, for finding the nodes a text names (``engine/proximity.mentioned_nodes``): each node's
key and title as lower-cased words -> the store ids of the nodes so named, one index per namespace.

The index follows the change log like the vector indexes (``engine/live.follow``): a node written, retracted or
purged is re-read, dropped or renamed in place, so recording one decision does not re-read 20,000 nodes. On a store
with a folder it persists as an index file (``engine/snapshot.py``, kind ``node-names``: the sorted names and ids
as UTF-8 planes with offsets and the lists between them, read in place by binary search, so a new process parses
nothing; every section checksummed): a new process maps it and catches up from the change log instead of
reading every node. The file obeys the rules of ``engine/persist.py``: saved after a rebuild, after a node was
removed (its names leave the file at the next use; a rename waits like an addition) and once ``persist.SAVE_LAG``
changes behind; never saved while a purge, retraction or vector delete the names have not seen is in the log;
dropped and built anew when it was scrubbed under the process (an erasure zeroes every index file); a stale file
is caught up, and a truncated, corrupt, foreign or another namespace's file is never trusted (the header's kind,
name, store identity and counter, and the crc of the names).
"""
from __future__ import annotations

import logging
import re
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from ..model import Change
from ..store.base import Capability, Store
from .live import follow
from . import persist
from .snapshot import IndexFiles, Snapshot

KIND = "node-names"
MODEL = "names"  # the file is tied to no embedding model
LIMIT = 50_000  # more changes pending than this: read every node again
_WORD = re.compile(r"\w+")
_NAMELESS = ("edges.", "vectors.", "record.", "tombstones.")  # changes that leave every node's key and title
log = logging.getLogger(__name__)


def words(name: str) -> str:
    """A name as the index keys it: its words, lower-cased, one space apart."""
    return " ".join(_WORD.findall(name.lower()))


def names_of(key: str, title: str) -> set[str]:
    return {w for w in (words(key), words(title)) if len(w) > 1}


def file_name(namespace: str | None) -> str:
    return f"names:{'*' if namespace is None else namespace}"


class Packed:
    """Names -> store ids as they stand in an index file, read in place (nothing parsed when the file is mapped):
    the names and the ids sorted, each as UTF-8 bytes with offsets, and both ways between them as index lists."""

    SECTIONS = ("name_bytes", "name_at", "id_bytes", "id_at", "postings_at", "postings", "owned_at", "owned")

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.a = arrays
        self.n_names, self.n_ids = len(arrays["name_at"]) - 1, len(arrays["id_at"]) - 1
        if self.n_names < 0 or self.n_ids < 0 or len(arrays["postings_at"]) != self.n_names + 1 or len(
                arrays["owned_at"]) != self.n_ids + 1:
            raise ValueError("the name sections do not agree in length")

    @staticmethod
    def pack(names: dict[str, list[str]]) -> dict[str, np.ndarray]:
        """The sections of ``names`` (every list sorted and not empty)."""
        keys = sorted(k for k, v in names.items() if v)
        ids = sorted({i for k in keys for i in names[k]})
        at = {i: n for n, i in enumerate(ids)}
        postings = [[at[i] for i in names[k]] for k in keys]
        owned: list[list[int]] = [[] for _ in ids]
        for n, plist in enumerate(postings):
            for i in plist:
                owned[i].append(n)

        def text(items: list[str]) -> tuple[np.ndarray, np.ndarray]:
            raw = [x.encode() for x in items]
            offsets = np.zeros(len(raw) + 1, np.int64)
            np.cumsum([len(r) for r in raw], out=offsets[1:])
            return np.frombuffer(b"".join(raw), np.uint8), offsets

        def lists(items: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
            offsets = np.zeros(len(items) + 1, np.int64)
            np.cumsum([len(x) for x in items], out=offsets[1:])
            flat = np.fromiter((v for x in items for v in x), np.int32, count=int(offsets[-1]))
            return offsets, flat

        out: dict[str, np.ndarray] = {}
        out["name_bytes"], out["name_at"] = text(keys)
        out["id_bytes"], out["id_at"] = text(ids)
        out["postings_at"], out["postings"] = lists(postings)
        out["owned_at"], out["owned"] = lists(owned)
        return out

    def _text(self, which: str, i: int) -> str:
        at = self.a[which + "_at"]
        return self.a[which + "_bytes"][at[i]:at[i + 1]].tobytes().decode()

    def _find(self, which: str, value: str, count: int) -> int | None:
        lo, hi = 0, count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._text(which, mid) < value:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < count and self._text(which, lo) == value else None

    def get(self, name: str) -> list[str]:
        n = self._find("name", name, self.n_names)
        if n is None:
            return []
        at = self.a["postings_at"]
        return [self._text("id", int(i)) for i in self.a["postings"][at[n]:at[n + 1]]]

    def names_of(self, node_id: str) -> set[str]:
        i = self._find("id", node_id, self.n_ids)
        if i is None:
            return set()
        at = self.a["owned_at"]
        return {self._text("name", int(n)) for n in self.a["owned"][at[i]:at[i + 1]]}

    def items(self) -> Iterable[tuple[str, list[str]]]:
        ids = [self._text("id", i) for i in range(self.n_ids)]
        at, postings = self.a["postings_at"], self.a["postings"]
        for n in range(self.n_names):
            yield self._text("name", n), [ids[int(i)] for i in postings[at[n]:at[n + 1]]]


class NodeNames:
    """Names -> sorted store ids of one namespace (every namespace for None), at the change ``counter``: the names
    of a mapped file (``base``, read in place) under the changes since (``names``: a name -> its whole new list,
    empty when it is gone; ``of``: a store id -> its names now). Lists and sets are never changed in place (a
    change puts new ones), so a save may copy the two dicts alone."""

    def __init__(self, names: dict[str, list[str]], of: dict[str, set[str]], counter: int,
                 base: Packed | None = None) -> None:
        self.names, self.of, self.base = names, of, base
        self.counter = counter
        self.saved = -1  # the counter of the file these names were last saved to (or mapped from)
        self.due = False  # saved to no file since a rebuild or a drop
        self.dropped = 0  # nodes removed since this object was built or mapped (a rename is not a removal)
        self.source: Snapshot | None = None  # the file they were mapped from

    def get(self, name: str) -> list[str]:
        if name in self.names:
            return self.names[name]
        return self.base.get(name) if self.base is not None else []

    def names_of(self, node_id: str) -> set[str]:
        if node_id in self.of:
            return self.of[node_id]
        return self.base.names_of(node_id) if self.base is not None else set()

    def __len__(self) -> int:
        """How many names this holds or masks (0: nothing to save)."""
        return len(self.names) + (self.base.n_names if self.base is not None else 0)

    def intact(self) -> bool:
        """False once the file these names were mapped from was scrubbed (an erasure): then nothing is trusted."""
        return self.source is None or self.source.intact()

    def holds(self, node_id: str) -> bool:
        return bool(self.names_of(node_id))

    def rename(self, node_id: str, names: set[str]) -> None:
        """Give ``node_id`` exactly ``names`` (none: drop it)."""
        old = self.names_of(node_id)
        for name in old - names:
            self.names[name] = [i for i in self.get(name) if i != node_id]
        if old and not names:
            self.dropped += 1  # a node gone (retracted, purged): its names leave the file at the next refresh
        for name in names - old:
            self.names[name] = sorted({*self.get(name), node_id})
        self.of[node_id] = set(names)

    def as_dict(self) -> dict[str, list[str]]:
        """Every name with its ids (the base read whole): what a save writes."""
        out = {k: v for k, v in self.base.items() if k not in self.names} if self.base is not None else {}
        out.update((k, v) for k, v in self.names.items() if v)
        return out


def build(store: Store, namespace: str | None) -> NodeNames:
    counter = store.change_counter()
    if namespace is None or Capability.SERVER_QUERIES in store.capabilities:  # node_index: the local bulk read
        rows: Iterable[tuple[str, str, str]] = (
            (n.id, n.key, n.title) for n in store.find_nodes(namespace=namespace, with_content=False, order="none"))
    else:
        rows = ((r[0], r[1], r[3]) for r in store.node_index(namespace))
    names: dict[str, list[str]] = {}
    of: dict[str, set[str]] = {}
    for nid, key, title in rows:
        mine = of[nid] = names_of(key, title)
        for name in mine:
            names.setdefault(name, []).append(nid)
    for ids in names.values():
        ids.sort()
    return NodeNames(names, of, counter)


class NameFeed:
    """``engine/live.Feed`` of one namespace's node names (every namespace's for None)."""

    limit = LIMIT

    def __init__(self, namespace: str | None) -> None:
        self.namespace = namespace

    def build(self, store: Store) -> NodeNames:
        return build(store, self.namespace)

    def _mine(self, index: NodeNames, change: Change) -> bool:
        return self.namespace is None or change.namespace == self.namespace or index.holds(change.target)

    def apply(self, index: NodeNames, store: Store, changes: Sequence[Change]) -> bool:
        touched: set[str] = set()
        for ch in changes:
            if ch.op in ("node.put", "node.retract", "node.purge"):
                if self._mine(index, ch):
                    touched.add(ch.target)
            elif not ch.op.startswith(_NAMELESS):
                return False  # a change this feed does not know: read every node again
        if touched:
            found = store.get_nodes(sorted(touched))
            for nid in sorted(touched):
                node = found.get(nid)
                inside = node is not None and (self.namespace is None or node.namespace == self.namespace)
                index.rename(nid, names_of(node.key, node.title) if inside and node is not None else set())
        return True


def load(files: IndexFiles, namespace: str | None) -> NodeNames | None:
    """The names held in the index file, or None when there is none that passes every check."""
    snap = files.load(KIND, file_name(namespace), MODEL)
    if snap is None:
        return None
    try:
        base = Packed({k: snap.array(k) for k in Packed.SECTIONS})
    except (KeyError, ValueError, TypeError) as exc:  # passed the checks yet does not fit: rebuild
        log.warning("ignoring the index file %s: %s", snap.path, exc)
        return None
    index = NodeNames({}, {}, snap.counter, base)
    index.source, index.saved = snap, snap.counter
    return index


def save_job(files: IndexFiles, namespace: str | None, index: NodeNames) -> Callable[[], bool]:
    """A save of the names as they are now (the changes copied here, under the caller's lock; the mapped base does
    not change), to run now or on a thread; it writes nothing while a purge the names have not seen is in the
    log, nor after a scrub since now."""
    counter, generation = index.counter, files.generation
    frozen = NodeNames(dict(index.names), dict(index.of), counter, index.base)

    def run() -> bool:
        if persist.purge_pending(files, counter):
            return False
        arrays = Packed.pack(frozen.as_dict())
        if index.source is not None and not index.source.intact():
            return False  # the file the base was read from was scrubbed meanwhile (by another process)
        if files.save(KIND, file_name(namespace), MODEL, counter, arrays, {}, generation=generation,
                      keep=lambda: not persist.purge_pending(files, counter)) is None:
            return False
        index.saved = max(index.saved, counter)
        return True

    return run


def persisted(files: IndexFiles, namespace: str | None) -> Callable[[NodeNames | None], NodeNames]:
    """``refresh`` for ``Workspace.live``: the held names (or those mapped from the file) caught up from the change
    log, saved after a rebuild, after a node was removed or once ``persist.SAVE_LAG`` changes ahead of the file."""
    feed = NameFeed(namespace)
    name = file_name(namespace)

    def refresh(current: NodeNames | None) -> NodeNames:
        if current is not None and not current.intact():
            current = None
        if current is None and files.enabled:
            current = load(files, namespace)
        dropped = current.dropped if current is not None else 0
        fresh = follow(current, files.store, feed)
        if fresh is not current or fresh.dropped > dropped:
            fresh.due = True
        behind = fresh.counter - fresh.saved >= persist.SAVE_LAG
        if files.enabled and len(fresh) and (fresh.due or behind):
            if persist.schedule(files, name, lambda: save_job(files, namespace, fresh)):
                fresh.due = False
        return fresh

    return refresh


class Holder(Protocol):
    """What keeps the names: a workspace (``live`` and its ``index_files``)."""

    index_files: IndexFiles

    def live(self, name: str, refresh: Callable[[Any], Any]) -> Any: ...


def node_names(holder: Holder, namespace: str | None) -> NodeNames:
    """One namespace's node names (every namespace's for None), up to date with the store."""
    return holder.live(file_name(namespace), persisted(holder.index_files, namespace))
