"""The MCP server seen by the reference client, the MCP Inspector CLI (the TypeScript SDK's client, which
validates structured content against each tool's output schema with Ajv).

One HTTP server for the module; the Inspector, pinned in tests/inspector/package-lock.json, is installed
once per machine into a cache folder (``npm install --prefix``) and its calls run concurrently. Every tool is
called for a success and for its error paths (tests/mcp_cases.py); resources are listed and read as two
principals. Skipped, with the reason, only where node or npm is not installed.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentcontext import access

from .conftest import ROOT
from .mcp_cases import ALL_TOOLS, cases, pack_writer, seed

PIN = Path(__file__).parent / "inspector"  # package.json + package-lock.json: the Inspector and its whole tree
AGENTCONTEXT = str(ROOT / ".venv" / "bin" / "agentcontext")
TOOL_ERROR_EXIT = 5  # the Inspector CLI's exit code for a result with isError: true
SCHEMA_TROUBLE = ("Structured content does not match", "data must have required property",
                  "declares an output schema but returned no structured content")


@contextmanager
def locked(path: Path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cache_root() -> Path:
    base = os.environ.get("AGENTCONTEXT_TEST_CACHE") or Path(os.environ.get("XDG_CACHE_HOME")
                                                              or Path.home() / ".cache") / "agentcontext-tests"
    Path(base).mkdir(parents=True, exist_ok=True)
    return Path(base)


def install_inspector() -> Path:
    """The pinned Inspector's launcher, installed from the lock file on first use (later runs reuse it)."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are not installed: the MCP Inspector CLI tests need Node 20+ and npm")
    pinned = [(PIN / name).read_bytes() for name in ("package.json", "package-lock.json")]
    key = hashlib.sha256(b"\0".join(pinned)).hexdigest()[:16]
    root = cache_root()
    target = root / f"mcp-inspector-{key}"
    launcher = target / "node_modules" / ".bin" / "mcp-inspector"
    with locked(root / f"mcp-inspector-{key}.lock"):  # other test runs on this machine wait, then reuse it
        if not (target / ".complete").exists():
            staging = root / f"mcp-inspector-{key}.partial"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            for name in ("package.json", "package-lock.json"):
                shutil.copy(PIN / name, staging / name)
            done = subprocess.run(["npm", "install", "--prefix", str(staging), "--ignore-scripts", "--no-audit",
                                   "--no-fund", "--prefer-offline", "--loglevel=error"],
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"npm could not install the MCP Inspector:\n{done.stderr[-3000:]}"
            (staging / ".complete").write_text(key)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
    assert launcher.exists(), launcher
    return launcher


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def inspector():
    return install_inspector()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A seeded workspace served over streamable HTTP; yields (url, tokens by principal, ids)."""
    from agentcontext.workspace import Workspace

    root = tmp_path_factory.mktemp("mcp-inspector")
    home = root / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    ids = seed(ws, pack_writer(root))
    tokens = {who: access.create_token(ws, who or ws.owner)["token"] for who in (None, "reader", "apireader")}
    ws.close()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTCONTEXT_PRINCIPAL", "AGENTCONTEXT_URL")}
    env["AGENTCONTEXT_HOME"] = str(home)
    proc = subprocess.Popen([AGENTCONTEXT, "serve", "mcp", "--http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    yield f"http://127.0.0.1:{port}/mcp", tokens, ids
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


class Inspector:
    """Runs ``mcp-inspector --cli <url> ...`` as a principal; the Inspector's own state goes to a temp HOME."""

    def __init__(self, launcher: Path, url: str, tokens: dict, home: Path) -> None:
        self.launcher, self.url, self.tokens = launcher, url, tokens
        self.env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "XDG_DATA_HOME": str(home / ".local"), "XDG_STATE_HOME": str(home / ".state")}

    def __call__(self, *args: str, principal: str | None = None) -> subprocess.CompletedProcess:
        command = [str(self.launcher), "--cli", self.url, "--transport", "http", "--header",
                   f"Authorization: Bearer {self.tokens[principal]}", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=self.env)

    def call(self, tool: str, arguments: dict, principal: str | None = None) -> subprocess.CompletedProcess:
        return self("--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(arguments),
                    principal=principal)


@pytest.fixture(scope="module")
def run_inspector(inspector, server, tmp_path_factory):
    url, tokens, _ = server
    return Inspector(inspector, url, tokens, tmp_path_factory.mktemp("inspector-home"))


@pytest.fixture(scope="module")
def outcomes(run_inspector, server):
    """Every case through the Inspector CLI, four at a time; name -> (case, completed process)."""
    table = cases(server[2])
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(lambda c: run_inspector.call(c.tool, c.args, c.principal), table))
    return {case.name: (case, proc) for case, proc in zip(table, done)}


def test_every_tool_is_called_for_a_success_and_an_error(outcomes):
    assert {case.tool for case, _ in outcomes.values() if case.expect is None} == ALL_TOOLS
    assert {case.tool for case, _ in outcomes.values() if case.expect is not None} == ALL_TOOLS


def test_every_success_is_valid_structured_content_for_the_inspector(outcomes):
    for name, (case, proc) in outcomes.items():
        if case.expect is not None:
            continue
        assert proc.returncode == 0, (name, proc.stdout[-1500:], proc.stderr[-1500:])
        result = json.loads(proc.stdout)
        assert result.get("isError") is not True and isinstance(result["structuredContent"], dict), name
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"], name


def test_every_failure_shows_our_error_type_and_message(outcomes):
    """Before: the Inspector showed 'Structured content does not match the tool's output schema' (or Ajv's
    'data must have required property ...') and our message never appeared."""
    for name, (case, proc) in outcomes.items():
        if case.expect is None:
            continue
        shown = proc.stdout + proc.stderr
        assert not any(trouble in shown for trouble in SCHEMA_TROUBLE), (name, shown[-1500:])
        assert proc.returncode == TOOL_ERROR_EXIT, (name, proc.returncode, shown[-1500:])
        result = json.loads(proc.stdout)
        assert result["isError"] is True and "structuredContent" not in result, (name, result)
        text = result["content"][0]["text"]
        assert text.startswith(f"{case.expect}: ") and "Traceback" not in text, (name, text)
        assert result["_meta"]["agentcontext/error"]["type"] == case.expect, name


def test_the_messages_say_what_happened(outcomes):
    def text(name: str) -> str:
        return json.loads(outcomes[name][1].stdout)["content"][0]["text"]

    cycle = text("flash_knowledge-CycleError")
    assert cycle.startswith("CycleError: dependency cycle: ") and all(f"{s} -> " in cycle for s in "abc"), cycle
    assert "ghost" in text("flash_knowledge-MissingModuleError")
    assert "read-only" in text("create_knowledge_doc-ReadOnlyError")
    assert "agentcontext grant reader lib:secret read" in text("search_knowledge-AccessDeniedError")
    assert "'limit'" in text("search_knowledge-bad-type") and "'version'" in text("read_knowledge_doc-huge-version")


def test_tool_schemas_pass_the_inspectors_portability_check(run_inspector):
    """Before: 'Schema portability: 0 errors, 2 warnings' (store_memory's and record_decision's metadata)."""
    proc = run_inspector("--method", "tools/list", "--strict")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Warning:" not in proc.stderr and "Error:" not in proc.stderr, proc.stderr[-2000:]
    assert {t["name"] for t in json.loads(proc.stdout)["tools"]} == ALL_TOOLS


def test_resources_list_what_each_principal_may_read_and_read_back(run_inspector):
    with ThreadPoolExecutor(max_workers=3) as pool:
        owner, reader, apireader = pool.map(lambda who: run_inspector("--method", "resources/list", principal=who),
                                            (None, "reader", "apireader"))
    listed = {}
    for who, proc in (("owner", owner), ("reader", reader), ("apireader", apireader)):
        assert proc.returncode == 0, (who, proc.stderr[-2000:])
        listed[who] = {r["uri"]: r for r in json.loads(proc.stdout)["resources"]}
        for uri in listed[who]:
            parts = urlsplit(uri)
            assert parts.scheme == "knowledge" and parts.port is None and parts.hostname in ("lib", "pkg"), uri
    assert {"knowledge://lib/open", "knowledge://lib/open/guide", "knowledge://lib/secret/salaries",
            "knowledge://pkg/acme.tools.knowledge.core", "knowledge://lib/cyc/a"} <= set(listed["owner"])
    assert set(listed["reader"]) >= {"knowledge://lib/open", "knowledge://lib/open/basics",
                                     "knowledge://lib/open/guide"}
    assert all(u == "knowledge://lib/open" or u.startswith("knowledge://lib/open/") for u in listed["reader"])
    assert not any("secret" in u or "cyc" in u for u in listed["reader"])
    assert set(listed["apireader"]) == {"knowledge://lib/eng", "knowledge://lib/eng/api.leaky",
                                                "knowledge://lib/eng/api.public", "knowledge://lib/eng/core.public"}
    assert listed["owner"]["knowledge://lib/open/guide"]["mimeType"] == "text/markdown"

    with ThreadPoolExecutor(max_workers=3) as pool:
        doc, index, denied = pool.map(lambda a: run_inspector("--method", "resources/read", "--uri", a[0],
                                                              principal=a[1]),
                                      [("knowledge://lib/open/guide", "reader"), ("knowledge://lib/eng", "apireader"),
                                       ("knowledge://lib/secret/salaries", "reader")])
    assert doc.returncode == 0, doc.stderr[-2000:]
    assert json.loads(doc.stdout)["contents"][0]["text"].startswith("# Guide (guide)\n\nThe onboarding guide")
    assert index.returncode == 0, index.stderr[-2000:]
    text = json.loads(index.stdout)["contents"][0]["text"]
    assert "`api.public`" in text and "core.secret" not in text
    assert denied.returncode != 0 and "AccessDeniedError" in denied.stdout + denied.stderr


def test_a_wrong_token_is_told_how_to_get_one_not_sent_into_oauth(run_inspector):
    """Before: the Inspector's 401 carried only "Authentication required" (and without --stored-auth-only it
    started an interactive OAuth flow: "Interactive OAuth requires a TTY"). The server offers no OAuth: its 401
    says to send a token from `agentcontext token create`."""
    run_inspector.tokens["wrong"] = "actx_wrong"
    proc = run_inspector("--stored-auth-only", "--method", "tools/list", principal="wrong")
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "agentcontext token create" in shown and "resource_metadata" not in shown, shown
