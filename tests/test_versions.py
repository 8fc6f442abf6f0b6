"""Versions: history, reading an old version, unified diffs, optimistic concurrency, flash as_of, digests."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError, ConflictError, NotFoundError, ValidationError
from agentcontext.knowledge import history as hist
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.flash import flash
from agentcontext.model import utcnow

from .conftest import CLI


def run_cli(ws_home, *args, principal=None):
    import os

    env = {**os.environ, "AGENTCONTEXT_HOME": str(ws_home)}
    env.pop("AGENTCONTEXT_PRINCIPAL", None)
    if principal:
        env["AGENTCONTEXT_PRINCIPAL"] = principal
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def vws(ws):
    packs.create_pack(ws, "v")
    access.grant(ws, "writer", "lib:v", "write")
    packs.put_doc(ws, "lib:v", "base", title="Base", content="base body\n", embed=False)
    packs.put_doc(ws, "lib:v", "doc", title="Doc", summary="first", content="line one\nline two\n",
                  related=[{"type": "depends_on", "target": "base"}], embed=False)
    packs.put_doc(ws, "lib:v", "doc", content="line one\nline 2\nline three\n", principal="writer", embed=False)
    return ws


def test_history_records_who_when_and_hash(vws):
    rows = hist.history(vws, "lib:v", "doc")
    assert [r["version"] for r in rows] == [1, 2]
    assert [r["by"] for r in rows] == ["owner", "writer"]
    assert rows[0]["content_hash"] != rows[1]["content_hash"]
    assert rows[0]["at"] < rows[1]["at"]
    assert not any(r["deleted"] for r in rows)
    # An unchanged put appends nothing.
    packs.put_doc(vws, "lib:v", "doc", content="line one\nline 2\nline three\n", embed=False)
    assert len(hist.history(vws, "lib:v", "doc")) == 2
    packs.delete_doc(vws, "lib:v", "doc", principal="writer")
    last = hist.history(vws, "lib:v", "doc")[-1]
    assert last["version"] == 3 and last["deleted"] and last["by"] == "writer"


def test_read_an_old_version_with_its_edges(vws):
    packs.put_doc(vws, "lib:v", "doc", related=[], embed=False)
    old = tools.read_knowledge_doc(vws, "lib:v", "doc", version=1)
    assert old["content"] == "line one\nline two\n" and old["version"] == 1
    assert old["related"] == [{"type": "depends_on", "target": "base"}]
    assert tools.read_knowledge_doc(vws, "lib:v", "doc")["related"] == []
    with pytest.raises(NotFoundError):
        tools.read_knowledge_doc(vws, "lib:v", "doc", version=99)


def test_unified_diff_between_versions(vws):
    result = hist.diff(vws, "lib:v", "doc", 1, 2)
    assert result["changed"]
    lines = result["diff"].splitlines()
    assert lines[0] == "--- lib:v/doc@v1" and lines[1] == "+++ lib:v/doc@v2"
    assert "-line two" in lines and "+line 2" in lines and "+line three" in lines and " line one" in lines
    assert hist.diff(vws, "lib:v", "doc", 2, 2) == {**hist.diff(vws, "lib:v", "doc", 2, 2), "changed": False,
                                                    "diff": ""}
    with pytest.raises(NotFoundError) as info:
        hist.diff(vws, "lib:v", "doc", 1, 7)
    assert info.value.data["versions"] == [1, 2]
    for bad in (0, -1, True, "1"):
        with pytest.raises(ValidationError):
            hist.diff(vws, "lib:v", "doc", bad, 2)


def test_history_needs_read_access(vws):
    access.grant(vws, "stranger", "lib:other", "read")
    with pytest.raises(AccessDeniedError):
        hist.history(vws, "lib:v", "doc", principal="stranger")
    with pytest.raises(AccessDeniedError):
        hist.diff(vws, "lib:v", "doc", 1, 2, principal="stranger")
    with pytest.raises(NotFoundError):
        hist.history(vws, "lib:v", "never")


def test_stale_expected_version_conflicts_and_changes_nothing(vws):
    audit_before = len(vws.store.audit())
    with pytest.raises(ConflictError) as info:
        packs.put_doc(vws, "lib:v", "doc", content="lost update", expected_version=1, embed=False)
    assert info.value.data["current_version"] == 2 and info.value.data["expected_version"] == 1
    doc = tools.read_knowledge_doc(vws, "lib:v", "doc")
    assert doc["version"] == 2 and doc["content"] == "line one\nline 2\nline three\n"
    assert len(vws.store.audit()) == audit_before
    assert packs.put_doc(vws, "lib:v", "doc", content="ok", expected_version=2, embed=False)["version"] == 3


def test_flash_as_of_assembles_the_graph_as_it_stood(vws):
    then = flash(vws, "lib:v", "doc")
    stamp = utcnow()
    time.sleep(0.01)
    packs.put_doc(vws, "lib:v", "extra", title="Extra", content="new prerequisite", embed=False)
    packs.put_doc(vws, "lib:v", "doc", content="rewritten", related=[{"type": "depends_on", "target": "extra"},
                                                                      {"type": "depends_on", "target": "base"}],
                  embed=False)
    now = flash(vws, "lib:v", "doc")
    assert now.order == ["extra", "base", "doc"] and now.digest != then.digest
    past = flash(vws, "lib:v", "doc", as_of=stamp)
    assert past.order == then.order == ["base", "doc"]
    assert past.digest == then.digest and past.text == then.text
    with pytest.raises(NotFoundError):
        tools.read_knowledge_doc(vws, "lib:v", "extra", version=2)


def test_digest_is_the_same_across_processes(vws, tmp_path):
    bundle = flash(vws, "lib:v", "doc")
    home = tmp_path / ".agentcontext"
    proc = run_cli(home, "flash", "lib:v", "doc", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["digest"] == bundle.digest
    stamp = utcnow()
    packs.put_doc(vws, "lib:v", "base", content="changed", embed=False)
    proc = run_cli(home, "flash", "lib:v", "doc", "--as-of", stamp, "--json")
    assert json.loads(proc.stdout)["digest"] == bundle.digest
    assert flash(vws, "lib:v", "doc").digest != bundle.digest


def test_history_and_diff_on_the_cli(vws, tmp_path):
    home = tmp_path / ".agentcontext"
    proc = run_cli(home, "history", "lib:v", "doc", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["version"] for r in json.loads(proc.stdout)] == [1, 2]
    proc = run_cli(home, "diff", "lib:v", "doc", "1", "2")
    assert proc.returncode == 0 and proc.stdout.startswith("--- lib:v/doc@v1\n+++ lib:v/doc@v2\n")
    proc = run_cli(home, "diff", "lib:v", "doc", "1", "9", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["type"] == "NotFoundError"
    proc = run_cli(home, "history", "lib:v", "doc", principal="nobody")
    assert proc.returncode == 1 and "AccessDeniedError" in proc.stderr


def test_digest_from_a_fresh_interpreter(vws, tmp_path):
    code = ("import sys; from agentcontext.workspace import Workspace; from agentcontext.knowledge.flash import flash;"
            "print(flash(Workspace.open(home=sys.argv[1]), 'lib:v', ['doc']).digest)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / ".agentcontext")], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == flash(vws, "lib:v", ["doc"]).digest
