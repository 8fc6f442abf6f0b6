"""``agentcontext mcp config --client NAME``: snippets with real paths, and a server a GUI client can start with a
bare environment (no virtualenv on PATH, no AGENTCONTEXT_HOME, another working directory)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from agentcontext.knowledge import packs

from .conftest import CLI

BARE = {"PATH": "/usr/bin:/bin"}  # what a GUI client's launcher gives a server, more or less


def config(client: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_")}
    proc = subprocess.run([*CLI, *args, "mcp", "config", "--client", client, "--json"], capture_output=True,
                          text=True, timeout=120, env={**clean, **(env or {})}, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_each_client_gets_absolute_paths_and_home(ws, tmp_path):
    home = Path(ws.store.url[len("sqlite:///"):]).parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shapes = {"claude-desktop": "mcpServers", "cursor": "mcpServers", "vscode": "servers", "claude-code": "mcpServers"}
    for client, key in shapes.items():
        data = config(client, "--home", str(home), cwd=elsewhere)
        entry = data["config"][key]["agentcontext"]
        assert Path(entry["command"]).is_absolute() and os.access(entry["command"], os.X_OK)
        assert entry["args"][-4:] == ["--home", str(home.resolve()), "serve", "mcp"]
        assert ("type" in entry) is (client in ("vscode", "claude-code")) and entry.get("type", "stdio") == "stdio"
        assert data["where"], client
    code = config("claude-code", "--home", str(home))["command"]
    assert code[:3] == ["claude", "mcp", "add"] and code[code.index("--") + 1:] == [entry["command"], *entry["args"]]
    acting = config("cursor", "--home", str(home), "--as", "support-bot")["config"]["mcpServers"]["agentcontext"]
    assert acting["args"][-4:] == ["--as", "support-bot", "serve", "mcp"]


def test_a_server_store_is_passed_in_env_not_as_home():
    url = "postgresql://team:secret@db.example/agentcontext"
    entry = config("vscode", env={"AGENTCONTEXT_URL": url})["config"]["servers"]["agentcontext"]
    assert entry["env"] == {"AGENTCONTEXT_URL": url} and "--home" not in entry["args"]


def test_a_server_stores_read_replicas_go_in_env_with_it():
    url = "postgresql://team@db.example/agentcontext"
    replicas = "postgresql://team@replica1.example/agentcontext,postgresql://team@replica2.example/agentcontext"
    env = {"AGENTCONTEXT_URL": url, "AGENTCONTEXT_REPLICA_URLS": replicas, "AGENTCONTEXT_REPLICA_MAX_LAG": "2"}
    entry = config("cursor", env=env)["config"]["mcpServers"]["agentcontext"]
    assert entry["env"] == env
    command = config("claude-code", env=env)["command"]
    assert f"--env=AGENTCONTEXT_REPLICA_URLS={replicas}" in command and f"--env=AGENTCONTEXT_URL={url}" in command


def test_an_unknown_client_is_refused():
    proc = subprocess.run([*CLI, "mcp", "config", "--client", "emacs", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "ValidationError" and "claude-desktop" in error["message"]


def test_the_snippet_starts_a_server_from_a_bare_environment(ws, tmp_path):
    packs.create_pack(ws, "notes")
    home = Path(ws.store.url[len("sqlite:///"):]).parent
    entry = config("claude-desktop", "--home", str(home))["config"]["mcpServers"]["agentcontext"]
    elsewhere = tmp_path / "gui-client-cwd"
    elsewhere.mkdir()
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=BARE, cwd=str(elsewhere))

    async def main():
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            listed = await client.call_tool("list_knowledge_packs", {})
            return {t.name for t in tools}, listed.structured_content

    names, listed = anyio.run(main)
    assert {"list_knowledge_packs", "store_memory", "record_decision"} <= names
    assert [p["pack"] for p in listed["packs"]] == ["lib:notes"]
