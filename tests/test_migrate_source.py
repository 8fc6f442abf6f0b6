"""``agentcontext migrate`` refuses a source that does not exist (issue 26 section 2): an error of ours with a
non-zero exit code and the ``--json`` error shape, and the missing source is never created."""
from __future__ import annotations

import json
import subprocess

import pytest

from agentcontext.errors import NotFoundError
from agentcontext.migrate import migrate

from .conftest import CLI, ROOT


def test_a_missing_source_is_an_error_and_is_not_created(tmp_path):
    missing, new = tmp_path / "MISSING.db", tmp_path / "new.db"
    proc = subprocess.run([*CLI, "migrate", str(missing), f"sqlite:///{new}", "--json"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode != 0, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "NotFoundError" and "MISSING.db" in error["message"]
    assert "Traceback" not in proc.stderr
    assert not missing.exists() and not new.exists()


def test_a_missing_sqlite_url_source_is_refused_in_python(tmp_path):
    with pytest.raises(NotFoundError, match="does not exist"):
        migrate(f"sqlite:///{tmp_path / 'nope.db'}", str(tmp_path / "new.db"))
    assert not (tmp_path / "nope.db").exists() and not (tmp_path / "new.db").exists()


@pytest.mark.postgres
def test_a_missing_postgres_schema_is_refused_and_not_created(pg_url, tmp_path):
    import psycopg

    from agentcontext.store.pg_sql import split_url

    missing = pg_url.split("?")[0] + "?schema=never_made_here"
    with pytest.raises(NotFoundError, match="does not exist"):
        migrate(missing, str(tmp_path / "new.db"))
    conninfo, _ = split_url(missing)
    with psycopg.connect(conninfo) as db:
        assert db.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'never_made_here'").fetchone() is None
    assert not (tmp_path / "new.db").exists()
