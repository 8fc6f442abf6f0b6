"""Access through the CLI (a real subprocess): the same checks as the service layer, since they live there.

`--as PRINCIPAL` and AGENTCONTEXT_PRINCIPAL both pick the acting principal; without either the CLI acts as
the owner. (MCP in process, over stdio and over HTTP: test_mcp.py and test_mcp_transports.py.)
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import CLI
from .test_access import build_workspace


@pytest.fixture
def cli(ws, tmp_path):
    build_workspace(ws)
    home = tmp_path / ".agentcontext"

    def run(*args, env_principal=None):
        env = {k: v for k, v in os.environ.items() if k not in ("AGENTCONTEXT_PRINCIPAL", "AGENTCONTEXT_URL")}
        env["AGENTCONTEXT_HOME"] = str(home)
        if env_principal:
            env["AGENTCONTEXT_PRINCIPAL"] = env_principal
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=120)
        return proc.returncode, json.loads(proc.stdout) if "--json" in args else proc.stdout, proc.stderr

    return run


def test_reader_sees_no_trace_of_the_denied_pack_on_the_cli(cli, ws):
    code, listed, _ = cli("--as", "reader", "pack", "list", "--json")
    assert code == 0 and [p["pack"] for p in listed] == ["lib:open"]
    code, listed, _ = cli("pack", "list", "--json", env_principal="reader")
    assert [p["pack"] for p in listed] == ["lib:open"]
    code, listed, _ = cli("pack", "list", "--json")  # no principal: the owner
    assert {p["pack"] for p in listed} == {"lib:open", "lib:secret", "lib:eng"}
    for args in (["search", "lib:secret", "salary"], ["neighbors", "lib:secret", "bonus"],
                 ["read", "lib:secret", "salaries"], ["flash", "lib:secret", "bonus"], ["lint", "lib:secret"],
                 ["history", "lib:secret", "salaries"], ["diff", "lib:secret", "salaries", "1", "1"]):
        code, out, _ = cli("--as", "reader", *args, "--json")
        assert code == 1 and out["error"]["type"] == "AccessDeniedError", args
        assert "Secret salary" not in json.dumps(out)
    code, out, err = cli("--as", "reader", "read", "lib:secret", "salaries")
    assert code == 1 and err.startswith("error: AccessDeniedError: reader may not read") and out == ""
    code, out, _ = cli("--as", "apireader", "flash", "lib:eng", "api.leaky", "--json")
    assert code == 1 and out["error"]["selector"] == "api.leaky"  # never the hidden doc (issue 13 s2)
    denied = [r for r in ws.store.audit(principal="reader") if r["outcome"] == "denied"]
    assert len(denied) == 8  # the seven above and the plain read


def test_writes_and_admin_commands_on_the_cli(cli, ws):
    code, out, _ = cli("--as", "reader", "doc", "put", "lib:open", "guide", "--title", "Hacked", "--json")
    assert code == 1 and out["error"]["type"] == "AccessDeniedError"
    code, out, _ = cli("--as", "reader", "grant", "reader", "*", "admin", "--json")
    assert code == 1 and out["error"]["type"] == "AccessDeniedError"
    code, out, _ = cli("grant", "reader", "lib:secret", "read", "--json")
    assert code == 0 and out == {**out, "principal": "reader", "pattern": "lib:secret", "level": "read"}
    code, listed, _ = cli("--as", "reader", "pack", "list", "--json")
    assert [p["pack"] for p in listed] == ["lib:open", "lib:secret"]
    code, mine, _ = cli("--as", "reader", "grants", "--json")
    assert sorted(g["pattern"] for g in mine) == ["lib:open", "lib:secret"]
    code, out, _ = cli("revoke", "reader", "lib:secret", "--json")
    assert out == {"principal": "reader", "pattern": "lib:secret", "revoked": True}
    code, out, _ = cli("grant", "reader", "lib:x", "superuser", "--json")
    assert code == 1 and out["error"]["type"] == "ValidationError"
    code, token, _ = cli("token", "create", "bot", "--note", "ci", "--json")
    assert code == 0 and token["token"].startswith("actx_") and token["principal"] == "bot"
    code, listed, _ = cli("token", "list", "--json")
    assert [t["id"] for t in listed] == [token["id"]] and "token" not in listed[0]
    code, out, _ = cli("--as", "bot", "token", "create", "bot2", "--json")
    assert code == 1 and out["error"]["type"] == "AccessDeniedError"
    code, out, _ = cli("token", "revoke", token["id"], "--json")
    assert out == {"id": token["id"], "revoked": True}
    code, human, _ = cli("grants")
    assert code == 0 and "apireader" in human and "lib:eng/api.*" in human
