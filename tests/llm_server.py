"""A scripted LLM server on 127.0.0.1 for the tests: it speaks the OpenAI chat-completions and Anthropic
messages shapes, answers from a script (a list of replies, or a function of the request) and records every
request it got. Nothing here reaches the network.

    with ScriptedServer([Reply(429, headers={"Retry-After": "0"}), openai_reply("hi")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        ...
        server.requests[0].body["messages"]
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    body: bytes | None = None  # raw bytes instead of JSON
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


Script = list[Reply] | Callable[[Recorded], Reply]


def openai_reply(text: str | None, *, finish_reason: str = "stop", usage: tuple[int, int] | None = (12, 5),
                 model: str = "scripted-model", **message: Any) -> Reply:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
                            "choices": [{"index": 0, "finish_reason": finish_reason,
                                         "message": {"role": "assistant", "content": text, **message}}]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply(200, body)


def anthropic_reply(text: str | None = None, *, tool_input: Any = None, stop_reason: str = "end_turn",
                    usage: tuple[int, int] = (20, 7), model: str = "claude-scripted") -> Reply:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_input is not None:
        content.append({"type": "tool_use", "id": "toolu_1", "name": "respond", "input": tool_input})
        stop_reason = "tool_use"
    return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": content,
                       "stop_reason": stop_reason, "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}})


def openai_error(status: int, message: str, **headers: str) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "error", "code": status}}, headers=headers)


class ScriptedServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw
                headers = {k.lower(): v for k, v in self.headers.items()}
                rec = Recorded("POST", self.path, headers, body, time.monotonic())
                reply = server._next(rec)
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.body if reply.body is not None else json.dumps(reply.json).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def _next(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            if callable(self.script):
                return self.script(rec)
            if not self.script:
                return Reply(500, {"error": {"message": "scripted server: the script has no reply left"}})
            return self.script.pop(0)

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port_url() -> str:
    """An address on 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
