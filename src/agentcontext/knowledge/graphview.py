"""An in-memory view of one pack's graph (doc ids and typed adjacency), cached by the change counter."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..workspace import Workspace


@dataclass
class PackView:
    pack: str
    ids: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)  # doc ids sorted by selector
    depends_on: dict[str, list[str]] = field(default_factory=dict)
    outbound: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # src -> [(type, dst)] declared order
    inbound: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # dst -> [(type, src)]

    def exists(self, doc_id: str) -> bool:
        return doc_id in self.ids


def build_view(ws: Workspace, pack: str, as_of: str | None = None) -> PackView:
    view = PackView(pack)
    for node in ws.store.find_nodes(namespace=pack, as_of=as_of, with_content=False, order="key"):
        view.ids.add(node.id)
        view.order.append(node.id)
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
