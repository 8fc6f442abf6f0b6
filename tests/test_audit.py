"""The audit log: every write and every denied attempt, with principal, action, target, time, outcome."""
from __future__ import annotations

import json
import time

import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError
from agentcontext.knowledge import packs
from agentcontext.model import utcnow

from .test_versions import run_cli


def test_every_write_is_audited(ws, write_pack):
    packs.create_pack(ws, "a")
    packs.put_doc(ws, "lib:a", "x", content="1", embed=False)
    packs.put_doc(ws, "lib:a", "y", content="2", embed=False)
    packs.set_edge(ws, "lib:a", "y", "depends_on", "x")
    packs.set_edge(ws, "lib:a", "y", "depends_on", "x", present=False)
    packs.delete_doc(ws, "lib:a", "y")
    packs.install_folder(ws, write_pack("b", {"p": ([], "P")}), defer_embeddings=True)
    access.grant(ws, "bob", "lib:a", "read")
    access.revoke(ws, "bob", "lib:a")
    token = access.create_token(ws, "bot")
    access.revoke_token(ws, token["id"])
    rows = ws.store.audit()
    assert [(r["action"], r["target"], r["outcome"]) for r in rows] == [
        ("pack.create", "lib:a", "ok"), ("doc.put", "lib:a/x", "ok"), ("doc.put", "lib:a/y", "ok"),
        ("edge.put", "lib:a/y depends_on x", "ok"), ("edge.delete", "lib:a/y depends_on x", "ok"),
        ("doc.delete", "lib:a/y", "ok"), ("pack.install", "lib:b", "ok"), ("grant", "bob lib:a", "ok"),
        ("revoke", "bob lib:a", "ok"), ("token.create", "bot", "ok"), ("token.revoke", "bot", "ok")]
    assert all(r["principal"] == "owner" and r["at"] for r in rows)
    assert rows[1]["detail"] == {"version": 1}
    assert token["token"] not in json.dumps(rows)  # secrets never reach the log


def test_denied_attempts_are_audited_with_what_was_needed(ws, write_pack):
    packs.create_pack(ws, "a")
    access.grant(ws, "bob", "lib:a", "read")
    folder = write_pack("c", {"p": ([], "P")})
    for attempt in (lambda: packs.put_doc(ws, "lib:a", "x", content="1", principal="bob", embed=False),
                    lambda: packs.install_folder(ws, folder, principal="bob", defer_embeddings=True),
                    lambda: access.grant(ws, "bob", "*", "admin", actor="bob"),
                    lambda: access.create_token(ws, "bob", actor="bob")):
        with pytest.raises(AccessDeniedError):
            attempt()
    denied = [r for r in ws.store.audit(principal="bob")]
    assert [(r["action"], r["outcome"]) for r in denied] == [
        ("doc.put", "denied"), ("install", "denied"), ("grant", "denied"), ("token.create", "denied")]
    assert denied[0]["detail"]["needed"] == "write"


def test_audit_log_visibility(ws):
    packs.create_pack(ws, "a")
    access.grant(ws, "bob", "lib:a", "read")
    access.grant(ws, "root", "*", "admin")
    with pytest.raises(AccessDeniedError):
        packs.put_doc(ws, "lib:a", "x", content="1", principal="bob", embed=False)
    assert {r["principal"] for r in access.audit_log(ws)} == {"owner", "bob"}
    assert {r["principal"] for r in access.audit_log(ws, "root")} == {"owner", "bob"}
    assert {r["principal"] for r in access.audit_log(ws, "bob")} == {"bob"}
    with pytest.raises(AccessDeniedError):
        access.audit_log(ws, "bob", principal="owner")
    assert access.audit_log(ws, "bob")[-1]["action"] == "audit.read"


def test_audit_cli_filters_by_principal_and_time(ws, tmp_path):
    home = tmp_path / ".agentcontext"
    packs.create_pack(ws, "a")
    access.grant(ws, "bob", "lib:a", "read")
    time.sleep(0.01)
    middle = utcnow()
    time.sleep(0.01)
    with pytest.raises(AccessDeniedError):
        packs.put_doc(ws, "lib:a", "x", content="1", principal="bob", embed=False)
    packs.put_doc(ws, "lib:a", "y", content="2", embed=False)
    everything = json.loads(run_cli(home, "audit", "--json").stdout)
    assert [r["action"] for r in everything] == ["pack.create", "grant", "doc.put", "doc.put"]
    recent = json.loads(run_cli(home, "audit", "--since", middle, "--json").stdout)
    assert [(r["principal"], r["outcome"]) for r in recent] == [("bob", "denied"), ("owner", "ok")]
    bobs = json.loads(run_cli(home, "audit", "--principal", "bob", "--json").stdout)
    assert [(r["action"], r["target"], r["outcome"]) for r in bobs] == [("doc.put", "lib:a/x", "denied")]
    assert json.loads(run_cli(home, "audit", "--since", "1h", "--json").stdout) == everything
    human = run_cli(home, "audit")
    assert human.returncode == 0 and "denied" in human.stdout and "doc.put" in human.stdout
    refused = run_cli(home, "audit", "--principal", "owner", "--json", principal="bob")
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"]["type"] == "AccessDeniedError"
    bad = run_cli(home, "audit", "--since", "yesterday-ish", "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["type"] == "ValidationError"
