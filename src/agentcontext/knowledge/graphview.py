"""An in-memory view of one pack's graph (doc ids and typed adjacency), cached by the change counter."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

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
    return ws.cached(f"packview:{pack}", lambda: build_view(ws, pack))
