"""Flash (seed 000): the walk-through, cycles, missing modules, budgets, determinism, deep chains."""
from __future__ import annotations

import pytest

from agentcontext.errors import BudgetExceededError, CycleError, MissingModuleError, ValidationError
from agentcontext.knowledge.flash import flash
from agentcontext.knowledge.packs import install_folder, put_doc

from .conftest import PACKS


@pytest.fixture
def semdag(ws):
    install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    return ws


def test_seed_walkthrough_order(semdag):
    bundle = flash(semdag, "lib:semdag", "invitations")
    assert [d.title for d in bundle.docs] == ["Identity", "Account", "Membership", "Invitations"]
    assert bundle.order == ["identity", "account", "membership", "invitations"]
    # Identity is reached by several paths but included once.
    assert bundle.order.count("identity") == 1
    assert bundle.text.index("Identity") < bundle.text.index("Invitations")
    assert bundle.tokens == sum(d.tokens for d in bundle.docs) > 0
    assert len(bundle.digest) == 64


def test_flash_of_a_foundation_is_just_it(semdag):
    assert flash(semdag, "lib:semdag", "identity").order == ["identity"]


def test_several_targets_each_once(semdag):
    assert flash(semdag, "lib:semdag", ["membership", "account"]).order == ["identity", "account", "membership"]


def test_seed_cycle_reports_whole_path(ws):
    install_folder(ws, PACKS / "semdag-cyclic", defer_embeddings=True)
    with pytest.raises(CycleError) as info:
        flash(ws, "lib:semdag-cyclic", "invitations")
    cycle = info.value.data["cycle"]
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"invitations", "account", "identity"} or set(cycle) >= {"identity", "invitations"}
    # Every consecutive pair is a real depends_on edge.
    from agentcontext.knowledge.tools import list_knowledge_neighbors

    for a, b in zip(cycle, cycle[1:]):
        deps = [n["selector"] for n in list_knowledge_neighbors(ws, "lib:semdag-cyclic", a, "depends_on")]
        assert b in deps


def test_missing_prerequisite_names_it_and_the_chain(ws, write_pack):
    install_folder(ws, write_pack("m", {"a": (["b"], "A"), "b": (["ghost"], "B")}), defer_embeddings=True)
    with pytest.raises(MissingModuleError) as info:
        flash(ws, "lib:m", "a")
    assert info.value.data["missing"] == "ghost"
    assert info.value.data["required_by"] == "b"
    assert info.value.data["chain"] == ["a", "b", "ghost"]


def test_missing_target(semdag):
    with pytest.raises(MissingModuleError):
        flash(semdag, "lib:semdag", "nope")


def test_budget_exceeded_names_largest(semdag):
    with pytest.raises(BudgetExceededError) as info:
        flash(semdag, "lib:semdag", "invitations", budget_tokens=10)
    data = info.value.data
    assert data["budget"] == 10 and data["needed"] > 10
    sizes = [x["tokens"] for x in data["largest"]]
    assert sizes == sorted(sizes, reverse=True)


def test_budget_degradation_is_reported(ws, write_pack):
    long = "word " * 800
    install_folder(ws, write_pack("d", {"base": {"body": long, "summary": "Short base."},
                                        "top": {"related": [{"type": "depends_on", "target": "base"}],
                                                "body": "Top."}}), defer_embeddings=True)
    full = flash(ws, "lib:d", "top")
    small = flash(ws, "lib:d", "top", budget_tokens=200, degrade="summaries")
    assert small.tokens <= 200 < full.tokens
    assert small.degraded == ["base"] and small.policy == "summaries"
    assert "Short base." in small.text


def test_bad_arguments(semdag):
    with pytest.raises(ValidationError):
        flash(semdag, "lib:semdag", [])
    with pytest.raises(ValidationError):
        flash(semdag, "lib:semdag", "not a selector!")
    with pytest.raises(ValidationError):
        flash(semdag, "lib:semdag", "identity", budget_tokens=-1)


def test_ties_follow_declared_order(ws, write_pack):
    install_folder(ws, write_pack("t", {"z": ([], "Z"), "a": ([], "A"), "top": (["z", "a"], "T")}),
                   defer_embeddings=True)
    assert flash(ws, "lib:t", "top").order == ["z", "a", "top"]


def test_digest_tracks_graph_state(ws, write_pack):
    install_folder(ws, write_pack("g", {"a": ([], "A"), "b": (["a"], "B")}), defer_embeddings=True)
    first = flash(ws, "lib:g", "b")
    assert flash(ws, "lib:g", "b").digest == first.digest
    put_doc(ws, "lib:g", "a", content="A changed", embed=False)
    second = flash(ws, "lib:g", "b")
    assert second.digest != first.digest
    # as_of assembles the graph as it stood then
    assert flash(ws, "lib:g", "b", as_of=first_time(ws)).digest == first.digest


def first_time(ws):
    return ws.store.node_versions("lib:g/b")[0].recorded_at


def test_deep_chain_is_iterative(ws):
    from agentcontext.model import Edge, Node
    from agentcontext.knowledge.packs import PACK

    n = 10_000  # ten times CPython's default recursion limit (1,000; nothing in src raises it): a recursive walk fails
    pack = "lib:deep"
    ws.store.put_record(PACK, pack, {"pack": pack, "slug": "deep", "name": "deep", "pack_id": "deep",
                                     "source": "", "installed_at": "", "editable": True})
    ws.store.put_nodes([Node(id=f"{pack}/m{i}", kind="reference", namespace=pack, key=f"m{i}", title=f"M{i}",
                             tokens=1) for i in range(n)])
    ws.store.put_edges([Edge(f"{pack}/m{i}", "depends_on", f"{pack}/m{i + 1}", namespace=pack)
                        for i in range(n - 1)])
    bundle = flash(ws, pack, "m0")
    assert len(bundle.order) == n
    assert bundle.order[0] == f"m{n - 1}" and bundle.order[-1] == "m0"


def test_bodies_and_titles_follow_edits_and_as_of(ws, write_pack):
    """Bodies and rendered sections are served from a cache keyed by content hash: an edit is never stale."""
    install_folder(ws, write_pack("e", {"a": ([], "Alpha body"), "b": (["a"], "Beta body")}), defer_embeddings=True)
    first = flash(ws, "lib:e", "b")
    assert "Alpha body" in first.text and [d.content.strip() for d in first.docs] == ["Alpha body", "Beta body"]
    put_doc(ws, "lib:e", "a", title="Renamed", content="Alpha rewritten", embed=False)
    second = flash(ws, "lib:e", "b")
    assert "Alpha rewritten" in second.text and "Alpha body" not in second.text
    assert second.text.startswith("## Renamed (a)") and second.docs[0].title == "Renamed"
    assert second.tokens == sum(d.tokens for d in second.docs)
    then = ws.store.node_versions("lib:e/b")[0].recorded_at
    old = flash(ws, "lib:e", "b", as_of=then)
    assert old.text == first.text and old.digest == first.digest and old.to_dict()["docs"] == first.to_dict()["docs"]


def test_the_closure_index_holds_what_flash_read_within_its_limit(ws, write_pack, monkeypatch):
    """A flash keeps the sections it read on the pack's closure index (the next one touches neither the store
    nor the content cache); past the limit nothing more is held and bundles come out the same."""
    import agentcontext.knowledge.flash as flash_module
    from agentcontext.knowledge.graphview import pack_view

    install_folder(ws, write_pack("h", {"a": ([], "Alpha"), "b": (["a"], "Beta"), "c": (["b", "a"], "Gamma")}),
                   defer_embeddings=True)
    fetched: list[str] = []
    read = ws.store.get_contents
    monkeypatch.setattr(ws.store, "get_contents", lambda ids, as_of=None: fetched.extend(ids) or read(ids, as_of))
    flash(ws, "lib:h", "a")
    closure = pack_view(ws, "lib:h").closure
    assert fetched == ["lib:h/a"] and closure.sections[closure.index["lib:h/a"]] == "## A (a)\n\nAlpha\n"
    monkeypatch.setattr(flash_module, "CONTENT_CACHE_BYTES", closure.held_bytes)  # full: holds nothing more
    first = flash(ws, "lib:h", "c")
    assert fetched == ["lib:h/a", "lib:h/b", "lib:h/c"]  # a was held; b and c read once
    assert closure.sections[closure.index["lib:h/b"]] is None and pack_view(ws, "lib:h").closure is closure
    again = flash(ws, "lib:h", "c")  # a from the index, b and c from the content cache
    assert len(fetched) == 3 and again.text == first.text and again.order == ["a", "b", "c"]
    assert [d.content for d in again.docs] == ["Alpha", "Beta", "Gamma"] == [d.content for d in first.docs]
    assert again.text == "## A (a)\n\nAlpha\n\n## B (b)\n\nBeta\n\n## C (c)\n\nGamma\n"
