"""The CLI as a subprocess on the example packs: human output, --json shapes, errors and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import PACKS, ROOT

DOCS = "pkg:agentcontext.agentcontext.docs.guide"


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    home = tmp_path_factory.mktemp("cli") / ".agentcontext"
    env = {**os.environ, "AGENTCONTEXT_HOME": str(home)}
    env.pop("AGENTCONTEXT_URL", None)

    def run(*args, input=None, ok=True):
        proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", *args], capture_output=True, text=True,
                              env=env, input=input, timeout=300, cwd=ROOT)
        if ok:
            assert proc.returncode == 0, proc.stderr + proc.stdout
        return proc

    run("init")
    run("pack", "add", str(PACKS / "semdag"))
    run("pack", "add", str(PACKS / "semdag-cyclic"), "--defer-embeddings")
    run("pack", "add", str(PACKS / "agentcontext-docs"), "--defer-embeddings")
    return run


def test_pack_list_json(cli):
    packs = json.loads(cli("pack", "list", "--json").stdout)
    assert {p["pack"] for p in packs} == {"lib:semdag", "lib:semdag-cyclic", DOCS}


def test_flash_json_shape(cli):
    data = json.loads(cli("flash", "lib:semdag", "invitations", "--json").stdout)
    assert data["order"] == ["identity", "account", "membership", "invitations"]
    assert data["tokens"] > 0 and len(data["digest"]) == 64 and "## Identity" in data["text"]
    human = cli("flash", "lib:semdag", "invitations")
    assert "## Invitations" in human.stdout and "identity -> account" in human.stderr


def test_search_json_shape(cli):
    hits = json.loads(cli("search", DOCS, "flash budget", "--limit", "3", "--json").stdout)
    assert 1 <= len(hits) <= 3
    assert set(hits[0]) >= {"selector", "title", "kind", "score", "signals"}
    assert hits == sorted(hits, key=lambda h: -h["score"])
    tagged = json.loads(cli("search", DOCS, "", "--tag", "topic:flash", "--json").stdout)
    assert tagged and all("topic:flash" in h["tags"] for h in tagged)


def test_neighbors_read_why_lint(cli):
    rows = json.loads(cli("neighbors", "lib:semdag", "membership", "--json").stdout)
    assert [(r["selector"], r["type"]) for r in rows] == [("account", "depends_on"), ("identity", "depends_on")]
    doc = json.loads(cli("read", "lib:semdag", "identity", "--json").stdout)
    assert doc["title"] == "Identity" and doc["content"]
    assert json.loads(cli("why", "lib:semdag", "membership", "identity", "--json").stdout)["path"][0] == "membership"
    lint = cli("lint", "lib:semdag", "--json")
    assert lint.returncode == 0 and json.loads(lint.stdout)["redundant_edges"]
    bad = cli("lint", "lib:semdag-cyclic", "--json", ok=False)
    assert bad.returncode == 1 and json.loads(bad.stdout)["cycles"]


def test_errors_one_line_and_json(cli):
    proc = cli("flash", "lib:semdag-cyclic", "invitations", ok=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "CycleError" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("flash", "lib:semdag-cyclic", "invitations", "--json", ok=False)
    err = json.loads(proc.stdout)["error"]
    assert err["type"] == "CycleError" and err["cycle"][0] == err["cycle"][-1]
    proc = cli("flash", "lib:semdag", "invitations", "--budget", "5", "--json", ok=False)
    err = json.loads(proc.stdout)["error"]
    assert err["type"] == "BudgetExceededError" and err["needed"] > 5 and err["largest"]
    proc = cli("read", "lib:nope", "x", "--json", ok=False)
    assert json.loads(proc.stdout)["error"]["type"] == "NotFoundError"


def test_editing_lib_and_readonly_pkg(cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("Rules for notes.", encoding="utf-8")
    cli("pack", "new", "notes")
    cli("doc", "put", "lib:notes", "base", "--title", "Base", "--file", str(body))
    out = json.loads(cli("doc", "put", "lib:notes", "top", "--title", "Top", "--tag", "a:b", "--depends-on", "base",
                         "--json").stdout)
    assert out["version"] == 1
    assert json.loads(cli("flash", "lib:notes", "top", "--json").stdout)["order"] == ["base", "top"]
    cli("doc", "rm", "lib:notes", "top")
    proc = cli("doc", "put", DOCS, "x", "--title", "no", "--json", ok=False)
    assert json.loads(proc.stdout)["error"]["type"] == "ReadOnlyError"


def test_render_stdin(cli):
    proc = cli("render", "-", input="Seed: {{ lib.semdag }}\nOne: {{ lib.semdag.identity }}\n")
    assert "`membership` [concept] Membership" in proc.stdout
    bad = cli("render", "-", input="{{ lib.unknown }}", ok=False)
    assert bad.returncode == 1 and "NotFoundError" in bad.stderr


def test_reindex(cli):
    data = json.loads(cli("reindex", "--json").stdout)
    assert data["embedded"] >= 0
    assert json.loads(cli("reindex", "--json").stdout)["embedded"] == 0


def test_usage_errors_are_one_clear_message(cli):
    proc = cli("flash", "--json", ok=False)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["type"] == "UsageError"
    proc = cli("flash", "lib:semdag", "invitations", "--bogus", ok=False)
    assert proc.returncode == 2 and "No such option" in proc.stderr and "Traceback" not in proc.stderr


def test_init_follows_agentcontext_home(tmp_path):
    home = tmp_path / "elsewhere"
    env = {**os.environ, "AGENTCONTEXT_HOME": str(home)}
    env.pop("AGENTCONTEXT_URL", None)
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "init", "--json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (home / "store.db").exists() and not (tmp_path / ".agentcontext").exists()
