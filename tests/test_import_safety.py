"""Malformed and hostile input files (issue 13, section 5): YAML aliases, duplicate and non-text keys,
non-UTF-8 text, directories, FIFOs and links named ``*.md``, and imports that land whole or not at all."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentcontext import AgentMemory, ValidationError, VectorStore
from agentcontext.graph.persistence import load_graph
from agentcontext.knowledge.package import load_folder

STAMP = "created_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n"
# 406 bytes of YAML that expand to 9^9 (387 million) strings once written out as JSON.
LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")))


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    yield mem
    mem.workspace.close()


def memory_file(mid: str, body: str = "text", extra: str = "type: note\n") -> str:
    return f"---\nid: {mid}\n{STAMP}{extra}---\n\n{body}\n"


def snapshot(memory: AgentMemory) -> tuple[int, list[tuple[str, str, int]]]:
    return memory.db.change_counter(), [(m["id"], m["content"], m["version"]) for m in memory.list_memories()]


@pytest.fixture
def folder_with_edit(memory, tmp_path):
    """An export folder in which an existing memory's file has been edited: a good change that must not
    land when another file of the same import is bad."""
    mid = memory.store("The desk closes at five.", metadata={"type": "note"})
    folder = tmp_path / "in"
    memory.export(format="markdown", destination=folder)
    path = folder / f"{mid}.md"
    path.write_text(path.read_text().replace("at five.", "at six."))
    return folder, snapshot(memory)


def expect_refused(memory, folder, before, *words):
    with pytest.raises(ValidationError) as info:
        memory.import_data(folder, format="markdown")
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert snapshot(memory) == before
    return info.value


# --- YAML aliases ---------------------------------------------------------------------------------
def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_alias_bomb_in_frontmatter_is_refused_and_nothing_grows(memory, folder_with_edit, tmp_path):
    folder, before = folder_with_edit
    assert len(LAUGHS) <= 472
    (folder / "zz_bomb.md").write_text(f"---\nid: bomb\n{STAMP}type: note\n{LAUGHS}---\n\nboom\n")
    size = _bytes(tmp_path / ".agentcontext")
    started = time.monotonic()
    err = expect_refused(memory, folder, before, "zz_bomb.md", "alias")
    assert time.monotonic() - started < 5
    assert err.data["line"] == 6  # the first anchored value reused (file line: frontmatter starts on line 2)
    assert _bytes(tmp_path / ".agentcontext") < size + 100_000


def test_alias_in_manifest_and_package_refused(tmp_path):
    root = tmp_path / "pack"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("A")
    (root / "manifest.yaml").write_text(
        "schema: nenjo.knowledge.v1\nslug: p\nmanifest:\n  name: P\n  docs:\n"
        "  - &doc {selector: a, source_path: docs/a.md, tags: &t [x, y]}\n"
        "  - {selector: b, source_path: docs/a.md, tags: *t}\n")
    with pytest.raises(ValidationError, match="alias") as info:
        load_folder(root)
    assert "manifest.yaml" in str(info.value)
    (root / "manifest.yaml").write_text("schema: nenjo.knowledge.v1\nslug: p\nmanifest: {name: P, docs: []}\n")
    (root / "package.yaml").write_text("schema: nenjo.package.v1\nname: &n p\nx: *n\nmodules: [manifest.yaml]\n")
    with pytest.raises(ValidationError, match="alias"):
        load_folder(root)


def test_alias_in_saved_graph_refused(tmp_path):
    from agentcontext import ContextGraph

    graph = ContextGraph(name="kb")
    graph.add_node("n1", "thing", properties={"name": "one"})
    graph.save_to_file(str(tmp_path / "saved"), format="markdown")
    index = tmp_path / "saved" / "graph.md"
    index.write_text(index.read_text().replace("---\n", f"---\n{LAUGHS}", 1))
    with pytest.raises(ValidationError, match="alias"):
        load_graph(graph, tmp_path / "saved")
    assert graph.resolve("n1") is not None  # the graph was not cleared before the file was refused


# --- duplicate and non-text keys ----------------------------------------------------------------
def test_duplicate_slug_in_manifest_names_key_and_line(tmp_path):
    root = tmp_path / "pack"
    root.mkdir()
    (root / "manifest.yaml").write_text("schema: nenjo.knowledge.v1\nslug: first\nslug: second\n"
                                        "manifest: {name: P, docs: []}\n")
    with pytest.raises(ValidationError) as info:
        load_folder(root)
    assert "'slug'" in str(info.value) and "line 3" in str(info.value) and "manifest.yaml" in str(info.value)
    assert info.value.data["key"] == "slug" and info.value.data["line"] == 3


def test_duplicate_field_in_a_doc_entry(tmp_path):
    root = tmp_path / "pack"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("A")
    (root / "manifest.yaml").write_text("schema: nenjo.knowledge.v1\nslug: p\nmanifest:\n  name: P\n  docs:\n"
                                        "  - selector: a\n    source_path: docs/a.md\n    title: One\n"
                                        "    title: Two\n")
    with pytest.raises(ValidationError, match=r"'title' appears twice \(first on line 8\)") as info:
        load_folder(root)
    assert info.value.data["line"] == 9


def test_duplicate_frontmatter_key_names_key_and_line(memory, folder_with_edit):
    folder, before = folder_with_edit
    (folder / "zz_dup.md").write_text(f"---\nid: a\n{STAMP}type: note\ntype: other\n---\n\ntext\n")
    err = expect_refused(memory, folder, before, "zz_dup.md", "'type'", "line 6")
    assert err.data["key"] == "type"


@pytest.mark.parametrize("key", ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n"])
def test_non_scalar_frontmatter_key(memory, folder_with_edit, key):
    folder, before = folder_with_edit
    (folder / "zz_key.md").write_text(f"---\nid: a\n{STAMP}type: note\n{key}---\n\ntext\n")
    expect_refused(memory, folder, before, "zz_key.md", "key must be plain text")


@pytest.mark.parametrize("value", ["!!binary aGVsbG8=", ".nan", "!!set {a, b}", "!!python/object:os.system x"])
def test_values_json_cannot_hold_are_refused(memory, folder_with_edit, value):
    folder, before = folder_with_edit
    (folder / "zz_val.md").write_text(f"---\nid: a\n{STAMP}type: note\nextra: {value}\n---\n\ntext\n")
    expect_refused(memory, folder, before, "zz_val.md")


def test_values_written_twice_export_without_aliases(memory, tmp_path):
    shared = ["alpha", "beta"]
    mid = memory.store("shared lists", metadata={"type": "note", "a": shared, "b": shared})
    text = memory.export(format="markdown", type="note")
    assert "&id" not in text and "*id" not in text
    memory.delete_memory(mid)
    (tmp_path / "one.md").write_text(text)
    assert memory.import_data(tmp_path / "one.md", format="markdown") == 1
    assert memory.get_memory(mid)["metadata"]["b"] == shared


# --- files that are not text files --------------------------------------------------------------
def test_non_utf8_file(memory, folder_with_edit):
    folder, before = folder_with_edit
    (folder / "zz_latin1.md").write_bytes(memory_file("x", "caf\u00e9").encode("latin-1"))
    expect_refused(memory, folder, before, "zz_latin1.md", "not UTF-8")


def test_nul_in_file(memory, folder_with_edit):
    folder, before = folder_with_edit
    (folder / "zz_nul.md").write_text(memory_file("x", "a\x00b"))
    expect_refused(memory, folder, before, "zz_nul.md", "NUL")


def test_directory_named_md(memory, folder_with_edit):
    folder, before = folder_with_edit
    (folder / "zz_dir.md").mkdir()
    expect_refused(memory, folder, before, "zz_dir.md", "directory")


@pytest.mark.timeout(20)
def test_fifo_named_md_does_not_hang(memory, folder_with_edit):
    folder, before = folder_with_edit
    os.mkfifo(folder / "zz_pipe.md")
    expect_refused(memory, folder, before, "zz_pipe.md", "FIFO")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("target", ["file", "dir", "fifo"])
def test_links_under_the_root(memory, folder_with_edit, tmp_path, target):
    folder, before = folder_with_edit
    outside = tmp_path / f"outside-{target}"
    if target == "file":
        outside.write_text(memory_file("planted"))
    elif target == "dir":
        outside.mkdir()
    else:
        os.mkfifo(outside)
    os.symlink(outside, folder / "zz_link.md")
    expect_refused(memory, folder, before, "zz_link.md", "link")
    os.unlink(folder / "zz_link.md")
    with pytest.raises(ValidationError, match="link"):  # a single file named directly
        os.symlink(outside, tmp_path / "direct.md")
        memory.import_data(tmp_path / "direct.md", format="markdown")
    assert snapshot(memory) == before


# --- all or nothing -----------------------------------------------------------------------------
def test_nested_timestamps_import_with_the_edit(memory, folder_with_edit):
    """Dates inside lists used to pass validation and then fail in the write (TypeError), after the edited
    memory had already been rewritten."""
    folder, before = folder_with_edit
    (folder / "zz_new.md").write_text(memory_file("mem_dates", "dated", "type: note\ndays: [2026-01-02]\n"))
    assert memory.import_data(folder, format="markdown") == 2
    assert memory.get_memory("mem_dates")["metadata"]["days"] == ["2026-01-02"]
    assert any(m["content"] == "The desk closes at six." for m in memory.list_memories())


IMPORTER = textwrap.dedent("""
    import sys
    from agentcontext import AgentMemory, VectorStore
    mem = AgentMemory(vector_store=VectorStore(home=sys.argv[1]), max_memory_size=10**7)
    mem.workspace.embedder  # loaded before the clock starts
    print("START", flush=True)
    mem.import_data(sys.argv[2], format="markdown")
    print("DONE", flush=True)
""")


@pytest.mark.slow
def test_sigkill_mid_import_changes_all_or_none(tmp_path):
    home = tmp_path / ".agentcontext"
    mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
    n = 300
    mem.batch_store([{"content": f"fact number {i} stands", "metadata": {"type": "note"}} for i in range(n)])
    folder = tmp_path / "export"
    mem.export(format="markdown", destination=folder)
    edited = []
    for path in folder.glob("*.md"):
        path.write_text(path.read_text().replace(" stands", " was revised"))
        edited.append(path.read_text().rsplit("\n\n", 1)[1].strip())
    from agentcontext.embed.cache import embed_texts

    embed_texts(mem.db, mem.workspace.embedder, edited)  # so the child spends its time writing, not embedding
    mem.workspace.close()
    script = tmp_path / "importer.py"
    script.write_text(IMPORTER)
    outcomes = set()
    for delay in (0.05, 0.25):
        proc = subprocess.Popen([sys.executable, str(script), str(home), str(folder)], stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout.readline().strip() == "START"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
        revised = sum(m["content"].endswith("was revised") for m in mem.list_memories())
        assert mem.db.check_integrity() == "ok" and mem.count() == n
        assert revised in (0, n), f"killed after {delay}s: {revised} of {n} rewritten"
        outcomes.add(revised)
        if revised == n:
            break
        mem.workspace.close()
    mem.workspace.close()


# --- saved graphs: the same file rules -------------------------------------------------------------
@pytest.fixture
def saved_graph(tmp_path):
    from agentcontext import ContextGraph

    graph = ContextGraph(name="kb")
    graph.add_node("n1", "thing", properties={"name": "one"})
    graph.save_to_file(str(tmp_path / "saved"), format="markdown")
    return graph, tmp_path / "saved"


@pytest.mark.timeout(20)
@pytest.mark.parametrize("bad", ["fifo", "latin1", "dir", "nodes_link", "no_id"])
def test_saved_graph_files_are_checked_before_the_graph_changes(saved_graph, tmp_path, bad):
    graph, saved = saved_graph
    nodes = saved / "nodes"
    if bad == "fifo":
        os.mkfifo(nodes / "zz.md")
    elif bad == "latin1":
        (nodes / "zz.md").write_bytes("---\nid: caf\u00e9\n---\n".encode("latin-1"))
    elif bad == "dir":
        (nodes / "zz.md").mkdir()
    elif bad == "no_id":
        (nodes / "zz.md").write_text("---\nversions: []\n---\n")
    else:
        shutil.move(nodes, tmp_path / "elsewhere")
        os.symlink(tmp_path / "elsewhere", nodes)
    with pytest.raises(ValidationError) as info:
        load_graph(graph, saved)
    assert ("zz.md" if bad != "nodes_link" else "nodes") in str(info.value)
    assert graph.resolve("n1") is not None


@pytest.mark.timeout(20)
def test_saved_graph_json_fifo(saved_graph, tmp_path):
    graph, _ = saved_graph
    os.mkfifo(tmp_path / "graph.json")
    with pytest.raises(ValidationError, match="FIFO"):
        load_graph(graph, tmp_path / "graph.json")
