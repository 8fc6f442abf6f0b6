"""A PostgreSQL upgrade killed in the middle of one step: a new process opens the store with the migrations up to
that step, whose work (``agentcontext.store.migrations.postgres.<name>``) runs whole, then waits uncommitted and is
killed (SIGKILL) holding the upgrade's open transaction. What the store then holds is the test's to check."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
