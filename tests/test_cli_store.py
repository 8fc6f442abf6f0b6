"""`agentcontext store info` in a real subprocess: URL, schema version, counts and sizes; an old workspace is upgraded
on open, a newer one refused with the error that says what to do, and only an admin of `*` sees it once the
workspace is multi-user."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from agentcontext.store import SQLiteStore

from .conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "workspace_v1"


def cli(home, *args, ok=True, env=None):
    cmd = [sys.executable, "-m", "agentcontext.cli", *(["--home", str(home)] if home else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_store_info_on_an_old_workspace_upgrades_it_and_prints_what_it_holds(tmp_path):
    home = tmp_path / ".agentcontext"
    home.mkdir()
    shutil.copy(FIXTURE / "store.db", home / "store.db")
    contents = json.loads((FIXTURE / "contents.json").read_text())
    info = json.loads(cli(home, "store", "info", "--json").stdout)
    assert info["url"] == f"sqlite:///{(home / 'store.db').resolve()}" and info["backend"] == "sqlite"
    assert info["schema_version"] == info["latest_schema_version"] == SQLiteStore.MIGRATIONS.latest
    assert [m["version"] for m in info["migrations"]] == list(range(1, SQLiteStore.MIGRATIONS.latest + 1))
    versions = sum(len(v) for v in contents["nodes"].values())
    assert info["counts"]["node_versions"] == versions and info["counts"]["vectors"] == len(contents["vectors"])
    assert info["counts"]["audit"] == len(contents["audit"]) and info["counts"]["tombstones"] == 2
    assert info["namespaces"]["lib:semdag"] == 4 and info["change_counter"] == contents["change_counter"]
    assert info["sizes"]["total"] >= (home / "store.db").stat().st_size and info["sizes"]["tables"]["nodes"] > 0
    human = cli(home, "store", "info").stdout
    latest = SQLiteStore.MIGRATIONS.latest
    assert str(home / "store.db") in human and f"schema version: {latest} (latest)" in human and "lib:semdag" in human


def test_a_newer_store_is_refused_and_only_admins_see_the_store(tmp_path):
    home = tmp_path / ".agentcontext"
    cli(home, "init", str(tmp_path), "--json")
    cli(home, "grant", "bob", "lib:notes", "read", "--json")
    denied = cli(home, "--as", "bob", "store", "info", "--json", ok=False)
    assert denied.returncode == 1 and json.loads(denied.stdout)["error"]["type"] == "AccessDeniedError"
    audit = json.loads(cli(home, "audit", "--json").stdout)
    assert ("bob", "store.info", "denied") in {(a["principal"], a["action"], a["outcome"]) for a in audit}
    db = sqlite3.connect(home / "store.db")
    with db:
        db.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', '2030-01-01')")
    db.close()
    refused = cli(home, "store", "info", ok=False)
    assert refused.returncode == 1 and "SchemaVersionError" in refused.stderr
    assert "schema version 99" in refused.stderr and "Upgrade agentcontext" in refused.stderr
    as_json = json.loads(cli(home, "store", "info", "--json", ok=False).stdout)["error"]
    assert as_json["type"] == "SchemaVersionError" and as_json["store_version"] == 99


@pytest.mark.postgres
def test_store_info_on_postgres(pg_url):
    env = {**os.environ, "AGENTCONTEXT_URL": pg_url}
    cli(None, "init", "--json", env=env)
    info = json.loads(cli(None, "store", "info", "--json", env=env).stdout)
    assert info["url"] == pg_url and info["backend"] == "postgresql" and info["schema_version"] >= 1
    assert info["sizes"]["total"] > 0 and "nodes" in info["sizes"]["tables"] and info["counts"]["nodes"] == 0
