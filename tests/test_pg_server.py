"""tests/pg_server.PgServer on a cluster another server already runs: reused as it is (and left running by stop()),
or refused with a StoreError saying what to do when its postmaster does not answer; never stopped."""
from __future__ import annotations

import os

import psycopg
import pytest

from agentcontext.errors import StoreError
from tests.pg_server import PgServer, _free_port

pytestmark = pytest.mark.postgres


def _answers(port: int) -> bool:
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=10) as conn:
        return conn.execute("SELECT 1").fetchone() == (1,)


def test_start_on_a_cluster_a_running_server_holds_reuses_it_and_stop_leaves_it(pg_server):
    again = PgServer(root=pg_server.root).start()  # the session server's own cluster, as a kept one
    assert again.reused and again.port == pg_server.port
    again.stop()
    assert _answers(pg_server.port)  # the session's server still runs (it used to be stopped here)
    assert (pg_server.data / "postmaster.pid").exists()


def test_start_refuses_a_live_postmaster_that_does_not_answer_and_leaves_it(tmp_path):
    data = tmp_path / "cluster" / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text("18\n")
    port = _free_port()  # nothing listens there; the pid is alive (this process)
    pid_file = data / "postmaster.pid"
    pid_file.write_text(f"{os.getpid()}\n{data}\n1700000000\n{port}\n\n127.0.0.1\n")
    server = PgServer(root=tmp_path / "cluster")
    with pytest.raises(StoreError, match="(?s)already runs on the cluster .*pg_ctl -D .* stop"):
        server.start()
    assert pid_file.exists() and not server.reused  # nothing was stopped, started or deleted
