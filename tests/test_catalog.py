"""Browsing services the web console (and the CLI) call: paged doc lists, facets, search across packs,
inbound edges, why-paths, the pack graph, guarded erasure and audit filters. Access as for the four tools."""
from __future__ import annotations

import pytest

from agentcontext import access
from agentcontext.erasure import erase_workspace_entity
from agentcontext.errors import AccessDeniedError, NotFoundError, ValidationError
from agentcontext.knowledge import catalog, packs
from agentcontext.memory import AgentMemory
from tests.conftest import PACKS


def _put(ws, pack, sel, deps=(), **kw):
    return packs.put_doc(ws, pack, sel, title=kw.pop("title", sel.title()), summary=f"About {sel}.",
                         content=f"Body of {sel}.", related=[{"type": "depends_on", "target": d} for d in deps],
                         embed=False, **kw)


@pytest.fixture
def shop(ws):
    packs.create_pack(ws, "shop")
    packs.create_pack(ws, "secret")
    _put(ws, "lib:shop", "base", kind="concept", tags=["layer:foundation"], title="Zeta base")
    _put(ws, "lib:shop", "cart", ["base"], kind="concept", tags=["layer:core"], title="Alpha cart")
    _put(ws, "lib:shop", "checkout", ["cart", "base", "ghost"], kind="howto", tags=["layer:core"], title="Mid")
    _put(ws, "lib:shop", "internal.keys", kind="secret", title="Keys")
    _put(ws, "lib:secret", "salaries", title="Salaries")
    access.grant(ws, "reader", "lib:shop", "read")
    access.grant(ws, "partial", "lib:shop/c*", "read")
    return ws


def test_list_docs_pages_filters_and_sorts(shop):
    page = catalog.list_docs(shop, "lib:shop", limit=2)
    assert page["total"] == 4 and [d["selector"] for d in page["docs"]] == ["base", "cart"]
    assert catalog.list_docs(shop, "lib:shop", offset=2, limit=2)["docs"][0]["selector"] == "checkout"
    assert [d["selector"] for d in catalog.list_docs(shop, "lib:shop", sort="title")["docs"]] == [
        "cart", "internal.keys", "checkout", "base"]
    assert catalog.list_docs(shop, "lib:shop", sort="title", descending=True)["docs"][0]["selector"] == "base"
    core = catalog.list_docs(shop, "lib:shop", tag="layer:core")["docs"]
    assert [d["selector"] for d in core] == ["cart", "checkout"]
    assert [d["selector"] for d in catalog.list_docs(shop, "lib:shop", kind="howto")["docs"]] == ["checkout"]
    assert catalog.list_docs(shop, "lib:shop", prefix="internal.")["total"] == 1
    row = catalog.list_docs(shop, "lib:shop", prefix="cart")["docs"][0]
    assert row["version"] == 1 and row["updated_by"] == shop.owner and row["tags"] == ["layer:core"]
    _put(shop, "lib:shop", "base", title="Zeta base v2")  # the cached table follows the store
    assert catalog.list_docs(shop, "lib:shop", sort="updated", descending=True)["docs"][0]["selector"] == "base"
    with pytest.raises(ValidationError):
        catalog.list_docs(shop, "lib:shop", sort="colour")
    with pytest.raises(ValidationError):
        catalog.list_docs(shop, "lib:shop", limit=0)


def test_list_docs_and_facets_follow_access(shop):
    assert catalog.list_docs(shop, "lib:shop", principal="partial")["total"] == 2  # cart, checkout only
    facets = catalog.pack_facets(shop, "lib:shop", principal="partial")
    assert facets["kinds"] == {"concept": 1, "howto": 1} and "layer:foundation" not in facets["tags"]
    assert catalog.pack_facets(shop, "lib:shop")["kinds"] == {"concept": 2, "howto": 1, "secret": 1}
    for call in (lambda: catalog.list_docs(shop, "lib:secret", principal="reader"),
                 lambda: catalog.pack_facets(shop, "lib:secret", principal="reader")):
        with pytest.raises(AccessDeniedError):
            call()
    with pytest.raises(AccessDeniedError):  # a missing pack answers like a denied one
        catalog.list_docs(shop, "lib:nothing", principal="reader")
    assert shop.store.audit(principal="reader")[-1]["outcome"] == "denied"


def test_search_packs_merges_readable_packs(ws):
    packs.install_folder(ws, PACKS / "semdag")
    packs.install_folder(ws, PACKS / "agentcontext-docs")
    hits = catalog.search_packs(ws, "invitations membership", limit=5)
    assert hits[0]["pack"] == "lib:semdag" and hits[0]["selector"] in ("invitations", "membership")
    assert hits == sorted(hits, key=lambda h: -h["score"])
    access.grant(ws, "reader", "pkg:*", "read")
    assert {h["pack"] for h in catalog.search_packs(ws, "invitations membership", principal="reader")} <= {
        p for p in ("pkg:agentcontext.agentcontext.docs.guide",)}
    with pytest.raises(ValidationError):
        catalog.search_packs(ws, "  ")


def test_doc_links_show_inbound_and_outbound_readable_only(shop):
    links = catalog.doc_links(shop, "lib:shop", "cart")
    assert links["outbound"] == [{"type": "depends_on", "selector": "base", "exists": True, "title": "Zeta base"}]
    assert [e["selector"] for e in links["inbound"]] == ["checkout"]
    out = catalog.doc_links(shop, "lib:shop", "checkout")["outbound"]
    assert {"type": "depends_on", "selector": "ghost", "exists": False, "title": None} in out
    assert [e["selector"] for e in catalog.doc_links(shop, "lib:shop", "checkout", "partial")["outbound"]] == ["cart"]
    with pytest.raises(AccessDeniedError):
        catalog.doc_links(shop, "lib:shop", "base", principal="partial")
    with pytest.raises(NotFoundError):
        catalog.doc_links(shop, "lib:shop", "nope")


def test_why_paths_name_the_path_from_a_target(ws):
    packs.install_folder(ws, PACKS / "semdag")
    paths = catalog.why_paths(ws, "lib:semdag", ["invitations"])
    assert paths["invitations"] == ["invitations"]
    assert paths["identity"][0] == "invitations" and paths["identity"][-1] == "identity"
    assert set(paths) == {"invitations", "membership", "account", "identity"}


def test_pack_graph_flags_missing_targets_cycles_and_focus(shop, write_pack):
    graph = catalog.pack_graph(shop, "lib:shop")
    nodes = {n["selector"]: n for n in graph["nodes"]}
    assert nodes["ghost"]["missing"] and not nodes["cart"]["missing"]
    assert {"source": "checkout", "target": "ghost", "type": "depends_on"} in graph["edges"]
    focused = catalog.pack_graph(shop, "lib:shop", focus="base", depth=1)
    assert {n["selector"] for n in focused["nodes"] if not n["missing"]} == {"base", "cart", "checkout"}
    assert catalog.pack_graph(shop, "lib:shop", max_nodes=2)["truncated"]
    packs.install_folder(shop, PACKS / "semdag-cyclic")
    cyclic = [p["pack"] for p in packs.list_packs(shop) if "cyclic" in p["pack"]][0]
    assert any(n["in_cycle"] for n in catalog.pack_graph(shop, cyclic)["nodes"])
    with pytest.raises(AccessDeniedError):
        catalog.pack_graph(shop, "lib:secret", principal="reader")


def test_erase_workspace_entity_is_guarded_and_audited(ws):
    packs.install_folder(ws, PACKS / "semdag")
    mem = AgentMemory(workspace=ws, max_memory_size=None)
    mem.store("Alice prefers tea", metadata={"entities": ["alice"]})
    mem.store("Bob prefers coffee", metadata={"entities": ["bob"]})
    access.grant(ws, "helper", "memory:*", "write")
    with pytest.raises(AccessDeniedError):  # no write on graph:default
        erase_workspace_entity(ws, "alice", principal="helper")
    access.grant(ws, "helper", "graph:*", "write")
    receipt = erase_workspace_entity(ws, "alice", reason="request", principal="helper")
    assert receipt.stores["memory"] == {"status": "erased", "items": 1}
    assert [m["content"] for m in mem.list_memories()] == ["Bob prefers coffee"]
    assert ws.store.audit(principal="helper")[-1]["action"] == "erase_entity"
    with pytest.raises(AccessDeniedError):  # a doc of a pack is not the graph's: needs admin on the pack
        erase_workspace_entity(ws, "lib:semdag/identity", principal="helper")
    assert ws.store.get_node("lib:semdag/identity") is not None


def test_audit_log_filters_by_action_outcome_and_time(shop):
    with pytest.raises(AccessDeniedError):
        packs.put_doc(shop, "lib:shop", "base", title="x", principal="reader")
    everything = access.audit_log(shop)
    assert [r["action"] for r in access.audit_log(shop, action="doc.*")] == [
        r["action"] for r in everything if r["action"].startswith("doc.")]
    denied = access.audit_log(shop, outcome="denied")
    assert denied and all(r["outcome"] == "denied" for r in denied)
    assert access.audit_log(shop, until=everything[0]["at"]) == []
    assert access.audit_log(shop, action="doc.put", limit=1) == [
        [r for r in everything if r["action"] == "doc.put"][-1]]
