"""A pack's view (and the console's doc table and lint built on it) is kept while only other namespaces
change (Workspace.cached with namespace=): storing a memory or editing another pack must not rebuild it, and every
change to the pack's own docs or edges must."""
from __future__ import annotations

import pytest

from agentcontext.knowledge import catalog, flash, packs
from agentcontext.knowledge.graphview import pack_view
from agentcontext.memory import AgentMemory
from agentcontext.workspace import NAMESPACE_SCAN


def _put(ws, pack, sel, deps=()):
    return packs.put_doc(ws, pack, sel, title=sel.title(), summary=f"About {sel}.", content=f"Body of {sel}.",
                         related=[{"type": "depends_on", "target": d} for d in deps], embed=False)


@pytest.fixture
def two_packs(ws):
    for name in ("shop", "other"):
        packs.create_pack(ws, name)
    _put(ws, "lib:shop", "base")
    _put(ws, "lib:shop", "cart", ["base"])
    _put(ws, "lib:other", "note")
    return ws


def test_other_namespaces_changing_keeps_the_view(two_packs):
    ws = two_packs
    view = pack_view(ws, "lib:shop")
    rows = catalog.list_docs(ws, "lib:shop")
    AgentMemory(workspace=ws).store("the user likes tea", vector=[1.0] + [0.0] * 383)
    _put(ws, "lib:other", "second", ["note"])
    assert pack_view(ws, "lib:shop") is view
    assert catalog.list_docs(ws, "lib:shop") == rows
    assert flash.flash(ws, "lib:shop", ["cart"]).order == ["base", "cart"]


@pytest.mark.parametrize("change", ["new doc", "edit", "delete", "edge", "drop edge"])
def test_every_change_to_the_pack_rebuilds_it(two_packs, change):
    ws = two_packs
    view = pack_view(ws, "lib:shop")
    if change == "new doc":
        _put(ws, "lib:shop", "checkout", ["cart"])
    elif change == "edit":
        packs.put_doc(ws, "lib:shop", "base", title="Base, renamed", summary="s", content="new body", embed=False)
    elif change == "delete":
        packs.delete_doc(ws, "lib:shop", "cart")
    elif change == "edge":
        packs.set_edge(ws, "lib:shop", "base", "depends_on", "cart", present=True)
    else:
        packs.set_edge(ws, "lib:shop", "cart", "depends_on", "base", present=False)
    fresh = pack_view(ws, "lib:shop")
    assert fresh is not view
    assert fresh.depends_on != view.depends_on or {m.title for m in fresh.meta.values()} != {
        m.title for m in view.meta.values()} or fresh.order != view.order


def test_a_long_log_since_the_view_rebuilds_it(two_packs, monkeypatch):
    ws = two_packs
    monkeypatch.setattr("agentcontext.workspace.NAMESPACE_SCAN", 3)
    view = pack_view(ws, "lib:shop")
    mem = AgentMemory(workspace=ws)
    for i in range(4):
        mem.store(f"memory {i}", vector=[1.0] + [0.0] * 383)
    assert pack_view(ws, "lib:shop") is not view
    assert NAMESPACE_SCAN > 3
