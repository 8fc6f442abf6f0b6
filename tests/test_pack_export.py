"""``pack export`` (issue 12, section 2): a pack written back out as a ``nenjo.knowledge.v1`` folder installs
to the same content."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcontext.errors import AccessDeniedError, ValidationError
from agentcontext import access
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.export import export_pack
from agentcontext.workspace import Workspace

NENJO = Path(__file__).resolve().parent / "data" / "nenjo-packages" / "nenjo"


def content_of(ws, pack: str) -> list[dict]:
    out = []
    for node in ws.store.find_nodes(namespace=pack, order="key"):
        doc = tools.read_knowledge_doc(ws, pack, node.key)
        out.append({k: doc[k] for k in ("selector", "title", "summary", "kind", "tags", "related", "content")}
                   | {"descriptions": [e.props.get("description", "") for e in ws.store.edges(src=node.id)]})
    return out


def test_lib_pack_round_trips(ws, tmp_path):
    packs.create_pack(ws, "notes", name="Team notes")
    packs.put_doc(ws, "lib:notes", "base", title="Base", summary="Where it starts.", kind="Concept",
                  tags=["intent:learn", "topic:base"], content="Line one\r\nno newline at the end — ünïcode",
                  embed=False)
    packs.put_doc(ws, "lib:notes", "design.api", title="API", content="# API\n\nUses the base.\n",
                  related=[{"type": "depends_on", "target": "base"},
                           {"type": "inspired_by", "target": "elsewhere", "description": "a missing target"},
                           {"type": "references", "target": "base"}], embed=False)
    before = content_of(ws, "lib:notes")
    result = export_pack(ws, "lib:notes", tmp_path / "out")
    assert result["docs"] == 2 and result["files"] == ["manifest.yaml", "docs/base.md", "docs/design/api.md"]
    body = "Line one\r\nno newline at the end — ünïcode"
    assert (tmp_path / "out" / "docs" / "base.md").read_bytes() == body.encode()
    other = Workspace.open(home=tmp_path / "other" / ".agentcontext", create=True)
    try:
        [installed] = packs.install_folder(other, tmp_path / "out", defer_embeddings=True)
        assert (installed["pack"], installed["name"]) == ("lib:notes", "Team notes")
        assert content_of(other, "lib:notes") == before
    finally:
        other.close()
    packs.install_folder(ws, tmp_path / "out", as_lib="copy", defer_embeddings=True)
    assert content_of(ws, "lib:copy") == before
    assert [r for r in ws.store.audit() if r["action"] == "pack.export"][-1]["detail"]["path"] == \
        str((tmp_path / "out").resolve())  # where the copy went, for whoever must later erase it


def test_real_package_pack_round_trips(ws, tmp_path):
    packs.install_folder(ws, NENJO / "knowledge", defer_embeddings=True)
    pack = "pkg:nenjo-ai.packages.knowledge.core"
    before = content_of(ws, pack)
    export_pack(ws, pack, tmp_path / "core")
    assert (tmp_path / "core" / "docs" / "resources" / "agents.md").read_text() == \
        (NENJO / "knowledge" / "core" / "docs" / "resources" / "agents.md").read_text()  # source paths kept
    packs.install_folder(ws, tmp_path / "core", as_lib="core-copy", defer_embeddings=True)
    assert content_of(ws, "lib:core-copy") == before and len(before) == 46


def test_export_refuses_to_overwrite_or_follow_links(ws, tmp_path):
    packs.create_pack(ws, "n")
    packs.put_doc(ws, "lib:n", "a", content="A", embed=False)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ValidationError, match="not an empty folder"):
        export_pack(ws, "lib:n", tmp_path / "full")
    assert os.listdir(tmp_path / "full") == ["keep.txt"]
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(ValidationError, match="link"):
        export_pack(ws, "lib:n", tmp_path / "link")
    assert not (tmp_path / "elsewhere").exists()
    (tmp_path / "empty").mkdir()
    assert export_pack(ws, "lib:n", tmp_path / "empty")["docs"] == 1
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".") and p != ".agentcontext"]  # no temp folder left


def test_export_needs_read_on_the_whole_pack(ws, tmp_path):
    packs.create_pack(ws, "n")
    packs.put_doc(ws, "lib:n", "a", content="A", embed=False)
    access.grant(ws, "partial", "lib:n/a", "read")
    with pytest.raises(AccessDeniedError):
        export_pack(ws, "lib:n", tmp_path / "x", principal="partial")
    assert not (tmp_path / "x").exists()
