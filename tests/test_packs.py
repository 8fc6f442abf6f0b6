"""Knowledge packs and their four tools (seed 002) on real SQLite with the real embedding model."""
from __future__ import annotations

import pytest

from agentcontext.errors import ConflictError, NotFoundError, ReadOnlyError, ValidationError
from agentcontext.knowledge import packs
from agentcontext.knowledge.lint import lint, why
from agentcontext.knowledge.render import render
from agentcontext.knowledge.tools import (list_knowledge_neighbors, list_knowledge_packs, read_knowledge_doc,
                                          search_knowledge)

from .conftest import PACKS

DOCS = "pkg:agentcontext.agentcontext.docs.guide"


@pytest.fixture
def pkgws(ws, write_pack):
    root = write_pack("core", {
        "design.agents": {"title": "Agent Design", "summary": "How agents are designed and configured.",
                          "kind": "design", "tags": ["intent:design", "resource:agents"],
                          "related": [{"type": "depends_on", "target": "resources.agents"},
                                      {"type": "references", "target": "resources.agents"},
                                      {"type": "governs", "target": "policy.safety"}],
                          "body": "Agents have roles, tools and prompts. The prompt template names the pack."},
        "resources.agents": {"title": "Agents resource", "summary": "The agents API resource.",
                             "kind": "resource", "tags": ["resource:agents"],
                             "body": "GET /agents lists agents; POST creates one."},
        "policy.safety": {"title": "Safety policy", "summary": "What agents must never do.", "kind": "policy",
                          "tags": ["intent:design", "audience:builder"],
                          "body": "Never delete production data without a human approval."},
        "glossary.pack": {"title": "Knowledge pack", "summary": "A graph of documents with metadata.",
                          "kind": "glossary", "body": "A pack holds docs with selectors."},
    }, selector="pkg:acme.tools.knowledge.core")
    packs.install_folder(ws, root)
    return ws


def test_list_packs(pkgws):
    assert list_knowledge_packs(pkgws) == [{"pack": "pkg:acme.tools.knowledge.core", "name": "core",
                                            "pack_id": "core", "docs": 4, "editable": False}]


def test_search_metadata_first_and_signals(pkgws):
    hits = search_knowledge(pkgws, "pkg:acme.tools.knowledge.core", "agent design")
    assert hits[0]["selector"] == "design.agents"
    assert {"title", "selector"} <= set(hits[0]["signals"])
    assert all(h["score"] == pytest.approx(sum(h["signals"].values()), abs=1e-3) for h in hits)
    exact = search_knowledge(pkgws, "pkg:acme.tools.knowledge.core", "policy.safety")
    assert exact[0]["selector"] == "policy.safety" and "selector_exact" in exact[0]["signals"]


def test_search_body_and_meaning(pkgws):
    body = search_knowledge(pkgws, "pkg:acme.tools.knowledge.core", "production approval")
    assert body[0]["selector"] == "policy.safety" and "body" in body[0]["signals"]
    meaning = search_knowledge(pkgws, "pkg:acme.tools.knowledge.core", "rules forbidding destructive actions")
    assert meaning[0]["selector"] == "policy.safety" and "meaning" in meaning[0]["signals"]


def test_search_filters(pkgws):
    p = "pkg:acme.tools.knowledge.core"
    both = search_knowledge(pkgws, p, "", tags=["intent:design", "audience:builder"])
    assert [h["selector"] for h in both] == ["policy.safety"]  # tags are all-of
    assert [h["selector"] for h in search_knowledge(pkgws, p, "agents", kind="resource")] == ["resources.agents"]
    assert {h["selector"] for h in search_knowledge(pkgws, p, "", selector_prefix="design.")} == {"design.agents"}
    rel = search_knowledge(pkgws, p, "", related_to="design.agents", edge_type="governs")
    assert [h["selector"] for h in rel] == ["policy.safety"]
    # Issue 12 s2: an edge type outside the known ones is a filter like any other (nothing has it here).
    assert search_knowledge(pkgws, p, "", edge_type="loves", related_to="design.agents") == []
    with pytest.raises(ValidationError):
        search_knowledge(pkgws, p, "x", edge_type="!!!", related_to="design.agents")
    with pytest.raises(ValidationError):
        search_knowledge(pkgws, p, "x", limit=0)
    with pytest.raises(NotFoundError):
        search_knowledge(pkgws, "lib:nope", "x")


def test_neighbors_outbound_sorted_no_duplicates(pkgws):
    rows = list_knowledge_neighbors(pkgws, "pkg:acme.tools.knowledge.core", "design.agents")
    assert [(r["selector"], r["type"]) for r in rows] == [
        ("policy.safety", "governs"), ("resources.agents", "depends_on"), ("resources.agents", "references")]
    assert list_knowledge_neighbors(pkgws, "pkg:acme.tools.knowledge.core", "resources.agents") == []
    only = list_knowledge_neighbors(pkgws, "pkg:acme.tools.knowledge.core", "design.agents", "governs")
    assert [r["selector"] for r in only] == ["policy.safety"]


def test_read_doc(pkgws):
    doc = read_knowledge_doc(pkgws, "pkg:acme.tools.knowledge.core", "policy.safety")
    assert doc["content"].startswith("Never delete") and doc["kind"] == "policy" and doc["version"] == 1
    with pytest.raises(NotFoundError):
        read_knowledge_doc(pkgws, "pkg:acme.tools.knowledge.core", "nope")


def test_pkg_is_read_only(pkgws):
    p = "pkg:acme.tools.knowledge.core"
    with pytest.raises(ReadOnlyError):
        packs.put_doc(pkgws, p, "x", content="y")
    with pytest.raises(ReadOnlyError):
        packs.delete_doc(pkgws, p, "policy.safety")
    with pytest.raises(ReadOnlyError):
        packs.set_edge(pkgws, p, "policy.safety", "related_to", "glossary.pack")


def test_reinstall_replaces_in_one_transaction(ws, write_pack):
    root = write_pack("r", {"a": ([], "A1"), "b": (["a"], "B1")}, selector="pkg:s.r.p.k")
    packs.install_folder(ws, root, defer_embeddings=True)
    root = write_pack("r", {"a": ([], "A2"), "c": (["a"], "C1")}, selector="pkg:s.r.p.k", folder=root)
    (root / "docs" / "b.md").unlink()
    packs.install_folder(ws, root, defer_embeddings=True)
    sels = [n.key for n in ws.store.find_nodes(namespace="pkg:s.r.p.k")]
    assert sels == ["a", "c"]
    assert read_knowledge_doc(ws, "pkg:s.r.p.k", "a")["content"] == "A2"
    assert read_knowledge_doc(ws, "pkg:s.r.p.k", "a", version=1)["content"] == "A1"


def test_lib_pack_editing(ws):
    packs.create_pack(ws, "notes")
    packs.put_doc(ws, "lib:notes", "base", title="Base", content="The base.", embed=False)
    r = packs.put_doc(ws, "lib:notes", "top", title="Top", content="Top.",
                      related=[{"type": "depends_on", "target": "base"}], embed=False)
    assert r["version"] == 1
    assert packs.put_doc(ws, "lib:notes", "top", summary="now with summary", embed=False)["version"] == 2
    with pytest.raises(ConflictError):
        packs.put_doc(ws, "lib:notes", "top", content="stale", expected_version=1, embed=False)
    assert read_knowledge_doc(ws, "lib:notes", "top")["summary"] == "now with summary"
    packs.set_edge(ws, "lib:notes", "top", "related_to", "base")
    assert len(list_knowledge_neighbors(ws, "lib:notes", "top")) == 2
    packs.set_edge(ws, "lib:notes", "top", "related_to", "base", present=False)
    packs.delete_doc(ws, "lib:notes", "base")
    assert lint(ws, "lib:notes")["missing_targets"] == [{"selector": "top", "type": "depends_on",
                                                         "target": "base"}]
    with pytest.raises(ValidationError):
        packs.create_pack(ws, "notes")
    with pytest.raises(ValidationError):
        packs.create_pack(ws, "Bad Slug")


def test_lint_and_why_on_seed_example(ws):
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    report = lint(ws, "lib:semdag")
    assert {"selector": "membership", "target": "identity",
            "implied_by": ["membership", "account", "identity"]} in report["redundant_edges"]
    assert report["cycles"] == [] and report["missing_targets"] == []
    assert why(ws, "lib:semdag", "invitations", "identity")[-1] == "identity"
    with pytest.raises(NotFoundError):
        why(ws, "lib:semdag", "identity", "invitations")
    packs.install_folder(ws, PACKS / "semdag-cyclic", defer_embeddings=True)
    cyc = lint(ws, "lib:semdag-cyclic")["cycles"]
    assert len(cyc) == 1 and cyc[0][0] == cyc[0][-1]


def test_render(pkgws):
    ws = pkgws
    packs.create_pack(ws, "notes")
    packs.put_doc(ws, "lib:notes", "hello", title="Hello", summary="Greeting.", content="Hi there, agent.",
                  embed=False)
    text = render(ws, "Index:\n{{ pkg.acme.tools.knowledge.core }}\nDoc: {{ lib.notes.hello }}\n{{lib.notes}}")
    assert "`design.agents` [design] Agent Design: How agents are designed" in text
    assert "depends_on resources.agents" in text
    assert "Agents have roles" not in text  # never bodies in an index
    assert "Hi there, agent." in text
    with pytest.raises(NotFoundError):
        render(ws, "{{ lib.missing }}")
    with pytest.raises(NotFoundError):
        render(ws, "{{ lib.notes.nothing_here }}")
    # Issue 12 s2: variables that are not pack references are left for the agent runtime; strict refuses them.
    assert render(ws, "{{ something.else }}") == "{{ something.else }}"
    with pytest.raises(ValidationError):
        render(ws, "{{ something.else }}", strict=True)


def test_deferred_embeddings_computed_on_first_search(ws, write_pack):
    root = write_pack("lazy", {"a": {"title": "Alpha", "body": "About apples."}, "b": {"title": "Beta"}})
    packs.install_folder(ws, root, defer_embeddings=True)
    assert len(ws.store.missing_vectors(ws.embedder.name, "lib:lazy")) == 2
    hits = search_knowledge(ws, "lib:lazy", "fruit orchard")
    assert ws.store.missing_vectors(ws.embedder.name, "lib:lazy") == []
    assert hits and hits[0]["selector"] == "a"


def test_docs_pack_tools():
    """The tools on agentcontext's own docs pack."""
    from agentcontext.workspace import Workspace

    ws = Workspace.in_memory()
    packs.install_folder(ws, PACKS / "agentcontext-docs", defer_embeddings=True)
    assert list_knowledge_packs(ws)[0]["docs"] >= 25
    hits = search_knowledge(ws, DOCS, "flash prerequisites reading order")
    assert hits and "flash" in hits[0]["selector"]
    first = hits[0]["selector"]
    assert read_knowledge_doc(ws, DOCS, first)["content"]
    for n in list_knowledge_neighbors(ws, DOCS, first):
        assert n["exists"], n
    assert lint(ws, DOCS)["cycles"] == [] and lint(ws, DOCS)["missing_targets"] == []


@pytest.mark.parametrize("title, content, body", [
    ("Billing rules", "# Billing rules\n\nInvoices close monthly.", "Invoices close monthly."),
    ("Billing rules", "\n## billing   RULES ##\nInvoices.", "Invoices."),
    ("Billing", "# Billing", ""),
    ("Billing rules", "# Billing rules and limits\nInvoices.", "# Billing rules and limits\nInvoices."),
    ("Billing rules", "Intro.\n# Billing rules\nInvoices.", "Intro.\n# Billing rules\nInvoices."),
    ("Billing", "#Billing\nInvoices.", "#Billing\nInvoices."),  # not a heading in markdown
    ("Billing", "    # Billing\nInvoices.", "    # Billing\nInvoices."),  # an indented code block
])
def test_embed_text_drops_a_leading_heading_that_repeats_the_title(title, content, body):
    assert packs.without_title_heading(title, content) == body
    assert packs.embed_text(title, "S.", ["t:x"], content) == f"{title}. S.\nt:x\n{body}"


def test_an_installed_doc_keeps_its_heading_but_embeds_without_it(ws, write_pack):
    root = write_pack("h", {"a": {"title": "Alpha", "body": "# Alpha\n\nAbout apples."}})
    packs.install_folder(ws, root, defer_embeddings=True)
    node = ws.store.get_node("lib:h/a")
    assert node.content == "# Alpha\n\nAbout apples."
    assert read_knowledge_doc(ws, "lib:h", "a")["content"] == "# Alpha\n\nAbout apples."
    texts = [text for _, text in ws.store.missing_vectors(ws.embedder.name, "lib:h")]
    assert texts == ["Alpha. About a.\n\nAbout apples."]
