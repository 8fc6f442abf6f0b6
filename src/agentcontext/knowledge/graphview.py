"""An in-memory view of one pack's graph (doc ids and typed adjacency), cached by the change counter.

``PackView.closure`` is the same graph for flash, over integer ids (built on first use, and so cached
with the view): the ``depends_on`` prerequisites as a ``Dag`` and, per doc, what a bundle needs of it
without touching the store (selector, token count, its digest line, its content hash), plus the body and
rendered section of each doc once a flash has read it (``hold``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from ..engine.closure import Dag
from ..workspace import Workspace


class DocMeta(NamedTuple):
    key: str
    kind: str
    title: str
    summary: str
    version: int
    content_hash: str
    tokens: int | None


@dataclass
class PackView:
    pack: str
    ids: set[str] = field(default_factory=set)
    meta: dict[str, DocMeta] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # doc ids sorted by selector
    depends_on: dict[str, list[str]] = field(default_factory=dict)
    outbound: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # src -> [(type, dst)] declared order
    inbound: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # dst -> [(type, src)]

    def exists(self, doc_id: str) -> bool:
        return doc_id in self.ids

    @cached_property
    def closure(self) -> "ClosureIndex":
        return ClosureIndex.build(self)


@dataclass
class ClosureIndex:
    """The pack's ``depends_on`` graph over integer ids, plus per-doc columns for assembling bundles.

    Ids ``0..docs-1`` are the docs in selector order; prerequisites that do not exist follow them."""

    index: dict[str, int]
    names: list[str]  # doc id of each integer id
    selectors: list[str]
    dag: Dag
    metas: list[DocMeta | None]
    hashes: list[str]  # content hash ("" for a missing doc)
    tokens: list[int]
    digest_lines: list[bytes]  # what each doc adds to a bundle's digest
    bodies: list[str | None] = field(default_factory=list)  # filled by ``hold``, never cleared
    sections: list[str | None] = field(default_factory=list)  # the doc as it appears in a bundle
    held_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.bodies:
            self.bodies = [None] * len(self.names)
            self.sections = [None] * len(self.names)

    def hold(self, entries: dict[int, tuple[str, str]], limit: int) -> None:
        """Keep (body, section) of these integer ids while the held text stays under ``limit`` characters.
        A slot is only ever set (the view is rebuilt when the pack changes), so readers need no lock."""
        with self._lock:
            for i, (body, section) in entries.items():
                cost = len(body) + len(section)
                if self.sections[i] is None and self.held_bytes + cost <= limit:
                    self.bodies[i], self.sections[i] = body, section
                    self.held_bytes += cost

    @classmethod
    def build(cls, view: "PackView") -> "ClosureIndex":
        names = list(view.order)
        index = {nid: i for i, nid in enumerate(names)}
        for targets in view.depends_on.values():
            for dst in targets:
                if dst not in index:
                    index[dst] = len(names)
                    names.append(dst)
        docs = len(view.order)
        exists = bytearray(b"\x01") * docs + bytearray(len(names) - docs)
        children: list[tuple[int, ...]] = [()] * len(names)
        get = index.__getitem__
        for src, targets in view.depends_on.items():
            children[index[src]] = tuple(map(get, targets))
        metas: list[DocMeta | None] = [view.meta[nid] for nid in view.order] + [None] * (len(names) - docs)
        selectors = [m.key if m else nid.split("/", 1)[-1] for nid, m in zip(names, metas)]
        hashes = [m.content_hash if m else "" for m in metas]
        tokens = [(m.tokens or 0) if m else 0 for m in metas]
        lines = [f"{nid}\x1f{m.version}\x1f{m.content_hash}\x1e".encode() if m else b""
                 for nid, m in zip(names, metas)]
        return cls(index, names, selectors, Dag(children, exists), metas, hashes, tokens, lines)

    def label(self, i: int) -> str:
        """The selector of an integer id (how errors name a doc)."""
        return self.selectors[i]


def build_view(ws: Workspace, pack: str, as_of: str | None = None) -> PackView:
    view = PackView(pack)
    for row in ws.store.node_index(pack, as_of=as_of):
        view.ids.add(row[0])
        view.order.append(row[0])
        view.meta[row[0]] = DocMeta(*row[1:])
    for src, dst, etype, _weight, _pos in ws.store.adjacency(namespace=pack, as_of=as_of):
        if etype == "depends_on":
            view.depends_on.setdefault(src, []).append(dst)
        view.outbound.setdefault(src, []).append((etype, dst))
        view.inbound.setdefault(dst, []).append((etype, src))
    return view


def pack_view(ws: Workspace, pack: str, as_of: str | None = None) -> PackView:
    if as_of is not None:
        return build_view(ws, pack, as_of)
    return ws.cached(f"packview:{pack}", lambda: build_view(ws, pack), namespace=pack)
