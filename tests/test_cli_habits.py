"""The CLI habits people expect (issue 12, section 4), each through the real CLI in a subprocess."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from agentcontext import __version__
from agentcontext.cli.entry import command
from agentcontext.knowledge.packs import install_folder
from agentcontext.mcp_server import build_server

from .conftest import CLI
from .test_interface_docs import leaf_commands
from .test_mcp import call, run

# Typer 0.29's notation (the CLI ran on Typer until issue 27): <bool>, <str>, <int range>, <list[str]>, {pack}
# (single braces, not {{ lib.x }})
PLACEHOLDERS = re.compile(r"<(?:bool|str|int|float|path|datetime|list\[[^\]]*\])[^>]*>|(?<!\{)\{[A-Za-z_]+\}(?!\})")


def cli(*args, home=None, ok=True, env=None):
    full = [*CLI, *(["--home", str(home)] if home else []), *map(str, args)]
    proc = subprocess.run(full, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    if ok:
        assert proc.returncode == 0, (full, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def initialized(tmp_path_factory):
    """One workspace made by `agentcontext init` in a subprocess; each test gets a copy (one init, not seven)."""
    folder = tmp_path_factory.mktemp("init")
    target = folder / ".agentcontext"
    assert json.loads(cli("init", folder, "--json", home=target).stdout)["home"] == str(target.resolve())
    return target


@pytest.fixture
def home(initialized, tmp_path):
    target = tmp_path / ".agentcontext"
    shutil.copytree(initialized, target)
    return target


def test_version_and_short_help():
    assert cli("--version").stdout.strip() == f"agentcontext {__version__}"
    assert cli("-h").stdout.startswith("Usage: ")
    assert "[OPTIONS] PACK SELECTOR" in cli("read", "-h").stdout
    assert "--type TEXT" in cli("graph", "node", "add", "-h").stdout


def test_home_and_as_work_after_the_subcommand(home):
    assert json.loads(cli("pack", "new", "notes", "--home", home, "--json").stdout)["pack"] == "lib:notes"
    cli("pack", "new", "secret", "--json", "--home", home)
    cli("grant", "reader", "lib:notes", "read", "--home", home)
    seen = json.loads(cli("pack", "list", "--json", "--home", home, "--as", "reader").stdout)
    assert [p["pack"] for p in seen] == ["lib:notes"]
    denied = cli("memory", "store", "x", "--as", "reader", "--home", home, "--json", ok=False)
    assert denied.returncode == 1 and json.loads(denied.stdout)["error"]["type"] == "AccessDeniedError"
    # given twice, the one after the subcommand wins (it comes later, as with any repeated flag)
    both = json.loads(cli("--as", "reader", "pack", "list", "--as", "owner", "--json", home=home).stdout)
    assert {p["pack"] for p in both} == {"lib:notes", "lib:secret"}
    assert "--home PATH" in cli("memory", "store", "-h").stdout


def test_pack_list_never_truncates_ids_at_80_columns(home):
    long_slug = "a-pack-whose-slug-goes-on-for-quite-a-while-indeed"
    cli("pack", "new", long_slug, "--name", "A pack with a long name that must wrap somewhere", home=home)
    cli("pack", "new", "notes", home=home)
    shown = cli("pack", "list", home=home, env={"COLUMNS": "80"}).stdout
    assert f"lib:{long_slug}" in shown and "lib:notes" in shown  # whole, on one line


def test_lint_exits_non_zero_on_errors(home, write_pack):
    cli("pack", "add", write_pack("cyc", {"a": (["b"], "A"), "b": (["a"], "B")}), "--defer-embeddings", home=home)
    cli("pack", "add", write_pack("gap", {"a": (["ghost"], "A")}), "--defer-embeddings", home=home)
    cli("pack", "add", write_pack("fine", {"a": ([], "A"), "b": (["a"], "B")}), "--defer-embeddings", home=home)
    for pack in ("lib:cyc", "lib:gap"):
        bad = cli("lint", pack, home=home, ok=False)
        assert bad.returncode == 1 and "problems found" in bad.stdout, bad.stdout
        as_json = cli("lint", pack, "--json", home=home, ok=False)
        assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False
    assert cli("lint", "lib:fine", home=home).returncode == 0


def test_memory_stats_prints_for_people_unless_json(home):
    cli("memory", "store", "Alice drinks tea", "--conversation", "c1", home=home)
    human = cli("memory", "stats", home=home).stdout
    assert "1 memories, 1 conversations" in human and "{" not in human
    assert json.loads(cli("memory", "stats", "--json", home=home).stdout)["total_memories"] == 1


def test_hints_name_cli_flags_in_the_cli_and_tool_arguments_in_mcp(home, ws, write_pack):
    pack = write_pack("big", {"base": ([], "word " * 400), "top": (["base"], "Top.")})
    cli("pack", "add", pack, "--defer-embeddings", home=home)
    failed = cli("flash", "lib:big", "top", "--budget", "5", home=home, ok=False)
    assert failed.returncode == 1 and "--degrade summaries" in failed.stderr and "degrade=" not in failed.stderr
    as_json = json.loads(cli("flash", "lib:big", "top", "--budget", "5", "--json", home=home, ok=False).stdout)
    assert "--degrade summaries" in as_json["error"]["message"]
    related = cli("search", "lib:big", "x", "--edge-type", "depends_on", home=home, ok=False)
    assert "--related-to SELECTOR" in related.stderr and "related_to=" not in related.stderr
    missing_node = cli("graph", "path", "nobody", "alice", home=home, ok=False)
    assert "`agentcontext graph node add NODE_ID`" in missing_node.stderr and "add_node()" not in missing_node.stderr

    install_folder(ws, pack, defer_embeddings=True)
    over = {"pack": "lib:big", "selectors": ["top"], "budget_tokens": 5}

    async def script(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        return (set(listed["flash_knowledge"].input_schema["properties"]), await call(client, "flash_knowledge", over),
                await call(client, "flash_knowledge", {**over, "budget_tokens": 100, "degrade": "summaries"}))

    arguments, (is_error, data), (degraded_error, degraded) = run(build_server(ws), script)
    message = data["error"]["message"]
    assert is_error and "degrade='summaries'" in message and "--degrade" not in message
    named = set(re.findall(r"\b([a-z_]+)=", message))
    assert named and named <= arguments  # every parameter the hint names is an argument of the tool
    assert not degraded_error and degraded["degraded"] == ["base"]


def test_a_missing_file_says_no_such_file(home, tmp_path):
    cli("pack", "new", "notes", home=home)
    missing = tmp_path / "nope.md"
    for args in (("doc", "put", "lib:notes", "intro", "--file", missing), ("render", missing),
                 ("memory", "import", missing), ("pack", "add", missing), ("eval", "locomo", missing)):
        proc = cli(*args, home=home, ok=False)
        assert proc.returncode == 1 and re.search(rf"no such file( or folder)?: {re.escape(str(missing))}",
                                                  proc.stderr), (args, proc.stderr)
        as_json = json.loads(cli(*args, "--json", home=home, ok=False).stdout)
        assert as_json["error"]["type"] == "ValidationError" and "no such file" in as_json["error"]["message"]


def usage_and_help(root, path: str) -> str:
    """The help text of ``agentcontext PATH`` as `-h` prints it (plain text once ``conventional`` ran)."""
    ctx = root.make_context("agentcontext", [], resilient_parsing=True)
    target = root
    for word in path.split():
        target = target.commands[word]
        ctx = target.make_context(word, [], parent=ctx, resilient_parsing=True)
    return target.get_help(ctx)


def test_help_has_no_placeholders():
    root = command()
    paths = ["", *(path for path, _ in leaf_commands(root))]
    for path in paths:
        text = usage_and_help(root, path)
        found = PLACEHOLDERS.search(text)
        assert found is None, (path, found.group(0) if found else None)
    ctx = root.make_context("agentcontext", [], resilient_parsing=True)
    assert root.commands["lint"].collect_usage_pieces(ctx) == ["[OPTIONS]", "PACK"]
    assert "Arguments:\n  PACK  " in usage_and_help(root, "lint")  # each argument listed with its help
