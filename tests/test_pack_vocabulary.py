"""Open vocabularies and template names (issue 12, section 2): edge types beyond the known ones are stored,
traversed and linted, never rejected; template names written with '_' find packs named with '-'."""
from __future__ import annotations

import pytest

from agentcontext.errors import CycleError, ValidationError
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.flash import flash
from agentcontext.knowledge.lint import lint
from agentcontext.knowledge.render import render


@pytest.fixture
def vws(ws, write_pack):
    root = write_pack("vocab", {
        "base": {"title": "Base", "body": "The base."},
        "idea": {"title": "Idea", "body": "An idea.", "related": [
            {"type": "depends_on", "target": "base"},
            {"type": "Inspired-By", "target": "muse", "description": "where it came from"},
            {"type": "depnds_on", "target": "base"}]},
        "muse": {"title": "Muse", "body": "The muse."},
    })
    packs.install_folder(ws, root, defer_embeddings=True)
    return ws


def test_unknown_edge_types_are_stored_and_traversed(vws):
    ws = vws
    doc = tools.read_knowledge_doc(ws, "lib:vocab", "idea")
    assert doc["related"] == [{"type": "depends_on", "target": "base"}, {"type": "inspired_by", "target": "muse"},
                              {"type": "depnds_on", "target": "base"}]
    assert [n["selector"] for n in tools.list_knowledge_neighbors(ws, "lib:vocab", "idea", "inspired_by")] == ["muse"]
    hits = tools.search_knowledge(ws, "lib:vocab", "", related_to="idea", edge_type="inspired_by")
    assert [h["selector"] for h in hits] == ["muse"]
    assert "inspired_by muse" in render(ws, "{{ lib.vocab }}")
    assert flash(ws, "lib:vocab", ["idea"]).order == ["base", "idea"]  # only depends_on pulls docs in


def test_lint_warns_about_unknown_edge_types(vws):
    report = lint(vws, "lib:vocab")
    assert report["unknown_edge_types"] == [
        {"selector": "idea", "type": "inspired_by", "target": "muse", "did_you_mean": None},
        {"selector": "idea", "type": "depnds_on", "target": "base", "did_you_mean": "depends_on"}]
    assert report["cycles"] == [] and report["missing_targets"] == []


def test_edges_of_any_type_can_be_added_and_removed(vws):
    ws = vws
    packs.set_edge(ws, "lib:vocab", "muse", "Contrasts With", "base")
    assert tools.list_knowledge_neighbors(ws, "lib:vocab", "muse") == [
        {"selector": "base", "type": "contrasts_with", "exists": True, "title": "Base", "kind": "reference",
         "summary": "About base."}]
    packs.set_edge(ws, "lib:vocab", "muse", "contrasts_with", "base", present=False)
    assert tools.list_knowledge_neighbors(ws, "lib:vocab", "muse") == []
    with pytest.raises(ValidationError, match="not a word"):
        packs.set_edge(ws, "lib:vocab", "muse", "??", "base")


def test_template_names_with_underscores_and_ambiguity(ws, write_pack, tmp_path):
    write_pack("x", {"a": {"title": "A"}}, selector="pkg:acme-co.tools.my-pkg.core", folder=tmp_path / "p1")
    packs.install_folder(ws, tmp_path / "p1", defer_embeddings=True)
    assert render(ws, "{{ pkg.acme_co.tools.my_pkg.core.a }}").startswith("# A (a)")
    packs.create_pack(ws, "team-notes")
    assert render(ws, "{{ lib.team_notes }}").startswith("# Knowledge pack: team-notes (lib:team-notes)")
    packs.create_pack(ws, "team_notes")  # now the exact name wins
    assert "(lib:team_notes)" in render(ws, "{{ lib.team_notes }}")
    write_pack("y", {"a": {"title": "Other"}}, selector="pkg:acme_co.tools.my-pkg.core", folder=tmp_path / "p2")
    packs.install_folder(ws, tmp_path / "p2", defer_embeddings=True)
    assert render(ws, "{{ pkg.acme_co.tools.my-pkg.core.a }}").startswith("# Other")  # exact
    with pytest.raises(ValidationError, match="differ only in '-' versus '_'"):
        render(ws, "{{ pkg.acme_co.tools.my_pkg.core.a }}")


def test_context_blocks_render_recursively_and_refuse_cycles(ws, tmp_path):
    root = tmp_path / "p"
    (root / "b").mkdir(parents=True)
    for name, text in (("outer", "[{{ pkg.s.r.p.b.inner }} {{ task }}]"), ("inner", "in"),
                       ("loop", "{{ pkg.s.r.p.b.loop }}")):
        (root / "b" / f"{name}.yml").write_text(
            f"schema: nenjo.context_block.v1\nslug: {name}\nmanifest:\n  name: {name}\n  template: '{text}'\n")
    (root / "b" / "index.yml").write_text("schema: nenjo.module_index.v1\nmodules: [outer.yml, inner.yml, loop.yml]\n")
    (root / "package.yaml").write_text("schema: nenjo.package.v1\nname: p\nmodules: [b/]\n")
    packs.install_folder(ws, root, scope="s", repo="r", defer_embeddings=True)
    assert render(ws, "{{ pkg.s.r.p.b.outer }}") == "[in {{ task }}]"
    with pytest.raises(CycleError) as info:
        render(ws, "{{ pkg.s.r.p.b.loop }}")
    assert info.value.data["cycle"] == ["pkg:s.r.p.b/loop", "pkg:s.r.p.b/loop"]
