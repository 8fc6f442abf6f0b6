"""The memory CLI in a real subprocess against a real workspace."""
from __future__ import annotations

import json
import subprocess
import sys


def cli(home, *args, ok=True):
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_memory_cli_round_trip(tmp_path):
    home = tmp_path / ".agentcontext"
    cli(home, "init", str(tmp_path), "--json")
    a = json.loads(cli(home, "memory", "store", "Alice drinks green tea every morning", "--conversation", "c1",
                       "--user", "alice", "--meta", "type=preference", "--json").stdout)["id"]
    b = json.loads(cli(home, "memory", "store", "Bob prefers black coffee", "--conversation", "c2",
                       "--json").stdout)["id"]
    rows = json.loads(cli(home, "memory", "retrieve", "what does Alice drink", "--k", "1", "--json").stdout)
    assert [r["id"] for r in rows] == [a] and rows[0]["metadata"] == {"type": "preference"}
    assert "signals" in rows[0]
    scoped = json.loads(cli(home, "memory", "retrieve", "coffee", "--conversation", "c1", "--json").stdout)
    assert [r["id"] for r in scoped] == [a]
    exported = json.loads(cli(home, "memory", "export", "--format", "json").stdout)
    assert {m["id"] for m in exported["memories"]} == {a, b}
    folder = tmp_path / "md"
    assert json.loads(cli(home, "memory", "export", str(folder), "--json").stdout)["written"] == 2
    assert json.loads(cli(home, "memory", "import", str(folder), "--json").stdout) == {"imported": 0}
    assert json.loads(cli(home, "memory", "forget", "--conversation", "c2", "--json").stdout) == {"forgotten": 1}
    other = tmp_path / "other" / ".agentcontext"
    cli(other, "init", str(tmp_path / "other"), "--json")
    (tmp_path / "dump.json").write_text(json.dumps(exported))
    assert json.loads(cli(other, "memory", "import", str(tmp_path / "dump.json"), "--json").stdout) == {"imported": 2}
    bad = cli(home, "memory", "store", "x", "--meta", "novalue", "--json", ok=False)
    assert bad.returncode != 0 and json.loads(bad.stdout)["error"]["type"] == "ValidationError"


def test_memory_cli_checks_grants_like_mcp(tmp_path):
    home = tmp_path / ".agentcontext"
    cli(home, "init", str(tmp_path), "--json")
    cli(home, "memory", "store", "The owner remembers the launch date", "--json")
    cli(home, "grant", "reader", "memory:*", "read")
    rows = json.loads(cli(home, "--as", "reader", "memory", "retrieve", "launch date", "--json").stdout)
    assert rows and "launch" in rows[0]["content"]
    denied = cli(home, "--as", "reader", "memory", "store", "sneaky write", "--json", ok=False)
    assert denied.returncode == 1 and json.loads(denied.stdout)["error"]["type"] == "AccessDeniedError"
    stranger = cli(home, "--as", "stranger", "memory", "retrieve", "launch", "--json", ok=False)
    assert json.loads(stranger.stdout)["error"]["type"] == "AccessDeniedError"
    log = json.loads(cli(home, "audit", "--json").stdout)
    assert any(e["principal"] == "reader" and e["action"] == "memory.store" and e["outcome"] == "denied" for e in log)
    assert any(e["action"] == "memory.store" and e["outcome"] == "ok" for e in log)


def test_memory_entities_are_a_list(tmp_path):
    """`-m entities=customer-4471` stored a string that the console drew letter by letter (issue 26 s4): --entity
    (repeatable) gives the list; a string where the list is expected is refused through the CLI and Python alike."""
    from agentcontext import AgentMemory
    from agentcontext.errors import ValidationError

    home = tmp_path / ".agentcontext"
    cli(home, "init", str(tmp_path), "--json")
    mid = json.loads(cli(home, "memory", "store", "Refund for the laptop", "--entity", "customer-4471", "-e", "acme",
                         "--json").stdout)["id"]
    got = json.loads(cli(home, "memory", "get", mid, "--json").stdout)
    assert got["metadata"]["entities"] == ["customer-4471", "acme"]
    bad = cli(home, "memory", "store", "x", "-m", "entities=customer-4471", "--json", ok=False)
    error = json.loads(bad.stdout)["error"]
    assert bad.returncode != 0 and error["type"] == "ValidationError" and "--entity" in error["message"]
    from agentcontext.workspace import Workspace

    memory = AgentMemory(workspace=Workspace.open(home=tmp_path / "py" / ".agentcontext", create=True))
    for wrong in ("customer-4471", {"id": "c"}, ["ok", ""], [None]):
        try:
            memory.store("text", metadata={"entities": wrong})
        except ValidationError as e:
            assert "list of entity ids" in str(e)
        else:
            raise AssertionError(f"entities={wrong!r} was accepted")
    assert memory.count() == 0
    assert memory.store("text", metadata={"entities": ["c-1", 7]})
