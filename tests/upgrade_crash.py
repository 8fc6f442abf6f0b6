"""A PostgreSQL upgrade killed in the middle of one step: a new process opens the store with the migrations up to
that step, whose work (``agentcontext.store.migrations.postgres.<name>``) runs whole, then waits uncommitted and is
killed (SIGKILL) holding the upgrade's open transaction (``kill_mid_step``). What the store then holds is the test's
to check; ``crash_keeps_the_step_before`` checks what every step that turns a text column into another type must
keep (migrations 17 and 18): the version before, the old column's type, what the API reads unchanged, and the next
open upgrading it whole. ``store_before`` opens a store pinned to the step before one."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent

CRASH = """
import sys, time
from pathlib import Path
from agentcontext.store.migrations import Migration, Migrations
from agentcontext.store.migrations import postgres as steps
from agentcontext.store.postgres import PostgresStore

work = getattr(steps, sys.argv[3])

def slow(db):
    work(db)  # the step's whole work done, not committed yet
    Path(sys.argv[2]).write_text("done")
    time.sleep(120)

MINE = next(m.version for m in PostgresStore.MIGRATIONS if m.apply is work)

class Crashing(PostgresStore):
    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:MINE - 1]).plus(Migration(MINE, "x", slow))

Crashing(sys.argv[1])
"""


def kill_mid_step(url: str, step: str, tmp_path: Path) -> None:
    """Run the upgrade of the store at ``url`` through the step whose function is named ``step``, and kill its
    process once that step's work is done, before its commit."""
    marker = tmp_path / f"{step}.done"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", CRASH, url, str(marker), step], env=env)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, f"the upgrade did not reach {step}'s end"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)  # the process dies holding the upgrade's open transaction
    finally:
        proc.wait()


def step_number(step: str) -> int:
    """The number of the PostgreSQL step whose function is named ``step`` (the lead renumbers steps at a merge)."""
    from agentcontext.store.postgres import PostgresStore

    return next(m.version for m in PostgresStore.MIGRATIONS if m.apply.__name__ == step)


def store_before(url: str, step: str) -> Any:
    """The store at ``url`` opened pinned to the step before ``step`` (upgraded to it, never past)."""
    from agentcontext.store.migrations import Migrations
    from agentcontext.store.postgres import PostgresStore

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:step_number(step) - 1])
        READ_AHEAD = False  # its second connection would open the schema with every migration (upgrade it)

    return Before(url)


def crash_keeps_the_step_before(url: str, tmp_path: Path, step: str, fill: Callable[[Any], None],
                                read: Callable[[Any], Any], column: tuple[str, str], flag: str,
                                kept: Callable[[Any], None] | None = None) -> None:
    """``fill`` a store at the step before ``step``, kill the upgrade in the middle of ``step`` and check: the store
    is at the step before (its ``flag``, the attribute saying the step's form is there, false), ``column`` (table,
    name) still a text, ``read`` gives what it gave before the crash (and ``kept`` checks more of the store as left);
    then the next open upgrades it whole (``flag`` true) and ``read`` still gives the same."""
    from agentcontext.store import open_store

    old = store_before(url, step)
    fill(old)
    before = read(old)
    old.close()
    kill_mid_step(url, step, tmp_path)
    left = store_before(url, step)
    try:
        assert left.schema_version() == step_number(step) - 1 and not getattr(left, flag)
        assert left._read("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
                          "AND attname = %s", list(column)) == [("text",)], column
        assert read(left) == before
        if kept is not None:
            kept(left)
    finally:
        left.close()
    store = open_store(url)  # the next open upgrades it whole
    try:
        assert getattr(store, flag) and read(store) == before
    finally:
        store.close()
