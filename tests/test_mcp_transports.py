"""The MCP server as users run it: a real stdio subprocess and a real streamable-HTTP server with tokens."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from agentcontext import access

from .conftest import ROOT
from .test_access import build_workspace
from .test_mcp import call, exercise_every_tool

AGENTCONTEXT = str(ROOT / ".venv" / "bin" / "agentcontext")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTCONTEXT_PRINCIPAL", "AGENTCONTEXT_URL")}
    env["AGENTCONTEXT_HOME"] = str(home)
    return env


@pytest.fixture
def aws(ws):
    return build_workspace(ws)


@pytest.fixture
def home(tmp_path):
    return tmp_path / ".agentcontext"


def stdio_session(home: Path, script, *global_args: str):
    params = StdioServerParameters(command=AGENTCONTEXT, args=[*global_args, "serve", "mcp"], env=env_for(home))

    async def main():
        async with Client(params) as client:
            return await script(client)

    return anyio.run(main)


@pytest.mark.timeout(180)
def test_stdio_session_lists_checks_and_calls_every_tool(aws, home):
    good = stdio_session(home, exercise_every_tool)
    assert good["flash_knowledge"]["order"] == ["basics", "guide"]
    assert [r["action"] for r in aws.store.audit(principal="owner")][-3:] == ["doc.put", "doc.put", "doc.delete"]


@pytest.mark.timeout(180)
def test_stdio_acts_as_the_given_principal(aws, home):
    async def script(client):
        listed = await call(client, "list_knowledge_packs", {})
        flashed = await call(client, "flash_knowledge", {"pack": "lib:secret", "selectors": ["bonus"]})
        wrote = await call(client, "update_knowledge_doc", {"pack": "lib:open", "selector": "guide", "title": "X"})
        return listed, flashed, wrote

    listed, flashed, wrote = stdio_session(home, script, "--as", "reader")
    assert [p["pack"] for p in listed[1]["packs"]] == ["lib:open"]
    assert flashed[1]["error"]["type"] == "AccessDeniedError" and wrote[1]["error"]["type"] == "AccessDeniedError"
    assert [(r["action"], r["outcome"]) for r in aws.store.audit(principal="reader")] == [
        ("flash", "denied"), ("doc.put", "denied")]


@pytest.mark.timeout(180)
def test_stdio_stdout_carries_nothing_but_protocol_frames(aws, home):
    """Raw JSON-RPC over the pipe, including calls that load the embedding model and fail."""
    proc = subprocess.Popen([AGENTCONTEXT, "serve", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(home), text=True, bufsize=1)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search_knowledge", "arguments": {"pack": "lib:open", "query": "how do I onboard"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "create_knowledge_doc", "arguments": {"pack": "lib:open", "selector": "raw",
                                                                  "title": "Raw", "content": "embedded on write"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "read_knowledge_doc", "arguments": {"pack": "lib:open", "selector": "ghost"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "flash_knowledge",
                                                                      "arguments": "not an object"}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    ]
    responses = {}
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            if "id" not in request:
                continue
            while request["id"] not in responses:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                frame = json.loads(line)  # every stdout line is a JSON-RPC frame
                assert frame["jsonrpc"] == "2.0"
                if "id" in frame:
                    responses[frame["id"]] = frame
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines() if line.strip())
    assert responses[2]["result"]["structuredContent"]["hits"][0]["selector"] in ("guide", "basics")
    assert responses[3]["result"]["structuredContent"]["version"] == 1
    assert responses[4]["result"]["isError"] is True
    assert responses[4]["result"]["content"][0]["text"].startswith("NotFoundError:")
    assert "error" in responses[5] or responses[5]["result"]["isError"] is True
    assert len(responses[6]["result"]["tools"]) >= 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(aws, home):
    port = free_port()
    proc = subprocess.Popen([AGENTCONTEXT, "serve", "mcp", "--http", "--port", str(port)], env=env_for(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"server did not start: {proc.stderr.read().decode()}") from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    assert proc.stdout.read() == b""  # the HTTP server prints nothing on stdout either


def http_session(url: str, token: str, script):
    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await script(client)

    return anyio.run(main)


def raw_status(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.timeout(180)
def test_http_requires_a_valid_bearer_token(aws, http_server):
    token = access.create_token(aws, "reader")["token"]
    assert raw_status(http_server, {}) == 401
    assert raw_status(http_server, {"Authorization": "Bearer actx_wrong"}) == 401
    assert raw_status(http_server, {"Authorization": f"Basic {token}"}) == 401
    assert raw_status(http_server, {"Authorization": f"Bearer {token}"}) != 401


@pytest.mark.timeout(180)
def test_http_session_calls_every_tool_as_the_token_principal(aws, http_server):
    owner = access.create_token(aws, aws.owner)["token"]
    reader = access.create_token(aws, "reader")["token"]
    good = http_session(http_server, owner, exercise_every_tool)
    assert good["read_knowledge_doc"]["selector"] == "guide"

    async def as_reader(client):
        listed = await call(client, "list_knowledge_packs", {})
        read = await call(client, "read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"})
        wrote = await call(client, "delete_knowledge_doc", {"pack": "lib:open", "selector": "guide"})
        return listed, read, wrote

    listed, read, wrote = http_session(http_server, reader, as_reader)
    assert [p["pack"] for p in listed[1]["packs"]] == ["lib:open"]
    assert read[1]["error"]["type"] == "AccessDeniedError" and wrote[1]["error"]["type"] == "AccessDeniedError"
    assert [(r["action"], r["outcome"]) for r in aws.store.audit(principal="reader")] == [
        ("read", "denied"), ("doc.delete", "denied")]
    # A revoked token is refused from then on.
    access.revoke_token(aws, next(t["id"] for t in access.tokens(aws) if t["principal"] == "reader"))
    assert raw_status(http_server, {"Authorization": f"Bearer {reader}"}) == 401
