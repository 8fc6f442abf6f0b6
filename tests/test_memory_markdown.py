"""Markdown round trips of memories, as seed 003 specifies them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from agentcontext import AgentMemory, ValidationError, VectorStore


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    yield mem
    mem.workspace.close()


def front(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_single_memory_as_text_and_folder_export(memory, tmp_path):
    rule = memory.store("All trades must be pre-approved.",
                        metadata={"type": "compliance", "tags": ["trading", "approval"]})
    memory.store("Lunch is at noon", metadata={"type": "note"})
    document = memory.export(format="markdown", type="compliance")
    head = front(document)
    assert head["id"] == rule and head["type"] == "compliance" and head["tags"] == ["trading", "approval"]
    assert {"created_at", "updated_at"} <= set(head)
    assert document.rstrip().endswith("All trades must be pre-approved.")
    with pytest.raises(ValidationError, match="destination"):
        memory.export(format="markdown")  # two memories: needs a folder
    paths = memory.export(format="markdown", destination=tmp_path / "memory_export")
    assert sorted(Path(p).name for p in paths) == sorted(f"{m['id']}.md" for m in memory.list_memories())
    assert not [p for p in os.listdir(tmp_path / "memory_export") if p.endswith(".tmp")]


def test_reimport_unchanged_is_idempotent_and_edits_update_in_place(memory, tmp_path):
    mid = memory.store("All trades must be pre-approved.", metadata={"type": "compliance"})
    folder = tmp_path / "export"
    memory.export(format="markdown", destination=folder)
    before = memory.get_memory(mid)
    counter = memory.db.change_counter()
    assert memory.import_data(folder, format="markdown") == 0
    assert memory.get_memory(mid) == before and memory.db.change_counter() == counter
    path = folder / f"{mid}.md"
    path.write_text(path.read_text().replace("pre-approved.", "pre-approved by a desk head."))
    (folder / "new.md").write_text("---\nid: mem_new_one\ncreated_at: '2026-07-22T09:00:00+02:00'\n"
                                   "updated_at: '2026-07-22T09:00:00+02:00'\nkind: note\n---\n\nA brand new memory.\n")
    (folder / "notes.txt").write_text("ignored")
    assert memory.import_data(folder, format="markdown") == 2
    after = memory.get_memory(mid)
    assert after["id"] == mid and after["content"].endswith("desk head.") and after["version"] == 2
    assert after["updated_at"] != before["updated_at"]
    new = memory.get_memory("mem_new_one")
    assert new["content"] == "A brand new memory." and new["metadata"] == {"kind": "note"}
    assert new["created_at"] == "2026-07-22T09:00:00+02:00"  # offset preserved
    assert memory.import_data(folder, format="markdown") == 0


def test_timestamp_offsets_round_trip(memory, tmp_path):
    memory.batch_store([{"id": "mem_tz", "content": "tz test", "created_at": "2026-07-22T09:00:00+05:30",
                         "metadata": {"type": "t"}}])
    text = memory.export(format="markdown", type="t")
    assert front(text)["created_at"] == "2026-07-22T09:00:00+05:30"
    assert "'2026-07-22T09:00:00+05:30'" in text


@pytest.mark.parametrize("bad", [
    "---\nid: x1\ncreated_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n---\n\nno type\n",
    "---\nid: x1\nid: x2\ncreated_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\ntype: a\n---\n\nd\n",
    "---\nid: x1\ncreated_at: yesterday\nupdated_at: '2026-01-01T00:00:00Z'\ntype: a\n---\n\nbad time\n",
    "---\nid: [x1\ncreated_at: '2026-01-01T00:00:00Z'\n---\n\nbroken yaml\n",
    "no frontmatter at all\n",
    "---\nid: x1\ncreated_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\ntype: a\n---\n\n\n",
])
def test_malformed_files_are_rejected_before_any_change(memory, tmp_path, bad):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a_good.md").write_text("---\nid: good\ncreated_at: '2026-01-01T00:00:00Z'\n"
                                      "updated_at: '2026-01-01T00:00:00Z'\ntype: a\n---\n\nfine\n")
    (folder / "b_bad.md").write_text(bad)
    with pytest.raises(ValidationError):
        memory.import_data(folder, format="markdown")
    assert memory.count() == 0


def test_duplicate_ids_across_files_rejected(memory, tmp_path):
    folder = tmp_path / "dup"
    folder.mkdir()
    for name in ("a.md", "b.md"):
        (folder / name).write_text("---\nid: same\ncreated_at: '2026-01-01T00:00:00Z'\n"
                                   "updated_at: '2026-01-01T00:00:00Z'\ntype: a\n---\n\ntext\n")
    with pytest.raises(ValidationError, match="same"):
        memory.import_data(folder, format="markdown")
    assert memory.count() == 0


def test_links_are_refused_and_stale_files_kept(memory, tmp_path):
    mid = memory.store("linked", metadata={"type": "x"})
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "stale.md").write_text("old export")
    elsewhere = tmp_path / "victim.txt"
    elsewhere.write_text("do not overwrite")
    os.symlink(elsewhere, folder / f"{mid}.md")
    with pytest.raises(ValidationError, match="link"):
        memory.export(format="markdown", destination=folder)
    assert elsewhere.read_text() == "do not overwrite"
    os.unlink(folder / f"{mid}.md")
    memory.export(format="markdown", destination=folder)
    assert (folder / "stale.md").read_text() == "old export"
    (folder / "stale.md").unlink()
    src = tmp_path / "src.md"
    src.write_text((folder / f"{mid}.md").read_text())
    os.symlink(src, folder / "link.md")
    with pytest.raises(ValidationError, match="link"):
        memory.import_data(folder, format="markdown")
    linked_dir = tmp_path / "linked_dir"
    os.symlink(folder, linked_dir)
    with pytest.raises(ValidationError, match="link"):
        memory.import_data(linked_dir, format="markdown")
