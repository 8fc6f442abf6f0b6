"""Malformed JSON-RPC frames on MCP stdio get the JSON-RPC error the spec names, and the server stays up (issue 26
section 2): not JSON and 100k-deep nesting -32700 with id null; a batch, ``"jsonrpc": "1.0"``, no method, a bad id
-32600; ``params`` that are not an object -32602 with the request's id. A real ``agentcontext serve mcp`` subprocess,
raw frames written to its stdin, replies read with a timeout."""
from __future__ import annotations

import json
import queue
import subprocess
import threading

import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from .test_mcp_transports import AGENTCONTEXT, env_for

PARSE, INVALID, PARAMS = -32700, -32600, -32602


class Server:
    def __init__(self, home):
        self.proc = subprocess.Popen([AGENTCONTEXT, "serve", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env_for(home), text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: str | dict) -> None:
        self.proc.stdin.write((raw if isinstance(raw, str) else json.dumps(raw)) + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 30) -> dict:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s") from None

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


@pytest.fixture
def server(ws, tmp_path):
    running = Server(tmp_path / ".agentcontext")
    running.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "0"}}})
    assert running.reply()["id"] == 0
    running.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield running
    running.close()


CASES = [
    ("not json", "this is not json", PARSE, None),
    ("truncated", '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', PARSE, None),
    ("deep", "[" * 100_000 + "]" * 100_000, PARSE, None),
    ("deep object", '{"a":' * 100_000 + "1" + "}" * 100_000, PARSE, None),
    ("batch", json.dumps([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}]), INVALID, None),
    ("empty batch", "[]", INVALID, None),
    ("a number", "42", INVALID, None),
    ("jsonrpc 1.0", json.dumps({"jsonrpc": "1.0", "id": 8, "method": "tools/list"}), INVALID, 8),
    ("no jsonrpc", json.dumps({"id": 9, "method": "tools/list"}), INVALID, 9),
    ("no method", json.dumps({"jsonrpc": "2.0", "id": 10}), INVALID, 10),
    ("method not a string", json.dumps({"jsonrpc": "2.0", "id": 11, "method": 5}), INVALID, 11),
    ("id an object", json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}), INVALID, None),
    ("params an array", json.dumps({"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": [1, 2]}), PARAMS,
     12),
    ("params a string", json.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": "x"}), PARAMS,
     "s"),
]


@pytest.mark.timeout(300)
def test_notifications_and_responses_are_never_answered(server):
    for raw in (json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}),
                json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}}),
                json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}})):
        server.send(raw)
    server.send({"jsonrpc": "2.0", "id": "next", "method": "tools/list"})
    assert server.reply()["id"] == "next"  # the first reply is the request's: nothing answered the others


@pytest.mark.timeout(300)
def test_every_malformed_frame_gets_its_error_and_the_server_stays_up(server):
    for name, raw, code, rid in CASES:
        server.send(raw)
        reply = server.reply()
        assert reply["jsonrpc"] == "2.0" and "result" not in reply, name
        assert reply["error"]["code"] == code, (name, reply)
        assert reply["id"] == rid, (name, reply)
        server.send({"jsonrpc": "2.0", "id": f"after {name}", "method": "tools/list"})  # still up and answering
        listed = server.reply()
        assert listed["id"] == f"after {name}" and listed["result"]["tools"], name
