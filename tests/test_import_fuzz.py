"""Fuzzing the Markdown importer (issue 13, section 5): whatever the files hold, import_data either lands
them or raises one of our error types, and a refused import leaves the memory exactly as it was."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import AgentContextError

STAMP = "created_at: '2026-01-01T00:00:00Z'\nupdated_at: '2026-01-01T00:00:00Z'\n"
VALUES = ["note", "''", "~", "5", "-3.5", ".nan", ".inf", "true", "2026-01-01", "2026-01-01T10:00:00+02:00",
          "yesterday", "[1, 2]", "{a: b}", "[2026-01-02, {a: [b]}]", "&a [1, 2]", "*a", "!!binary aGk=", "!!set {a}",
          "!!python/object:os.system x", "!!str 5", "'quoted: yes'", '"esc\\u00e9"', "|\n  block\n  text", "[",
          "{", "'", "- item", "\x85", "\u2028", "\ufeff", "\x00", "\t", "%", "@", "`"]
KEYS = ["id", "type", "kind", "conversation_id", "user_id", "created_at", "updated_at", "speaker", "tags", "? [k]",
        "? {k: v}", "<<", "'quoted key'", "1", "on", "null", ""]
printable = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)
line = st.tuples(st.one_of(st.sampled_from(KEYS), st.from_regex(r"[a-z_]{1,8}", fullmatch=True)),
                 st.one_of(st.sampled_from(VALUES), printable)).map(lambda kv: f"{kv[0]}: {kv[1]}")
noise = st.one_of(st.sampled_from(["---", "...", "%YAML 1.1", "\t- x", "  nested: 1", "\r"]), st.text(max_size=20))
frontmatter = st.lists(st.one_of(line, line, line, noise), max_size=6).map(lambda lines: "\n".join(lines))
body = st.one_of(st.just("A memory body."), printable, st.text(max_size=60))


@st.composite
def markdown_file(draw) -> bytes:
    shape = draw(st.sampled_from(["valid", "valid", "valid", "text", "bytes"]))
    if shape == "bytes":
        return draw(st.binary(max_size=200))
    if shape == "text":
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    head = f"id: {draw(st.sampled_from(['f1', 'f2', 'f3', 'f4']))}\n{STAMP}type: note\n" if draw(
        st.integers(0, 3)) else ""
    head += draw(frontmatter)
    closing = draw(st.sampled_from(["---\n", "---\n", "---\n", "---", "--- \n", ""]))
    return f"---\n{head}\n{closing}\n{draw(body)}\n".encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    home = tmp_path_factory.mktemp("fuzz") / ".agentcontext"
    mem = AgentMemory(vector_store=VectorStore(home=home))
    mem.store("An existing memory the fuzzer must never damage.", metadata={"type": "note"})
    yield mem
    mem.workspace.close()


def state(memory: AgentMemory) -> tuple[int, list]:
    return memory.db.change_counter(), [(m["id"], m["content"], m["version"], m["metadata"])
                                        for m in memory.list_memories()]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(files=st.lists(markdown_file(), min_size=1, max_size=2))
def test_markdown_import_raises_only_our_errors(memory, files):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-import-"))
    try:
        for i, data in enumerate(files):
            (folder / f"f{i}.md").write_bytes(data)
        before = state(memory)
        try:
            memory.import_data(folder, format="markdown")
        except AgentContextError as exc:
            assert str(exc)
            assert state(memory) == before, "a refused import changed the memory"
        for mem in memory.list_memories():
            assert isinstance(mem["content"], str) and mem["content"].strip()
    finally:
        shutil.rmtree(folder)
