"""Read replicas of the PostgreSQL store (streaming replication) with read-your-writes.

``ReplicatedPostgresStore`` is a ``PostgresStore`` whose writes go to the primary (the store URL) and whose reads
go to a replica (a hot standby, ``pg_basebackup -R``) that has replayed everything this store has written or seen,
else to the primary. ``ReplicaSet`` does the routing; the store only says which reads may leave the primary.

Read your writes, by WAL position: after each commit the store notes the primary's WAL insert position
(``pg_current_wal_insert_lsn()``, in the COMMIT's round trip); a replica serves a read only once its
``pg_last_wal_replay_lsn()`` has reached that position (the floor). The change counter, which the derived
caches follow, is read with the position of the server that answered, and raises the floor to it; so is the change
log (``changes_since``). Every read after them goes to a server at least that far on, so a cache never holds data
older than the counter it was built at (it may hold newer data, which only costs a rebuild).

Read your writes holds per store object: another store's (another process's) writes are seen once the replica
serving a read has replayed them (within ``max_lag`` and a probe), not always at the very next read; unless
``max_lag`` is 0: then each read first asks the primary its position (one small query), so every write committed
anywhere before the read is seen, as with the primary alone.

Reads that stay on the primary: everything inside a write transaction (and writes themselves); records (grants,
tokens, settings: a revocation takes effect at once), tombstones and which ids an erasure removed (they keep erased
data out on the next write); ``info()`` and ``check_integrity()``.

A replica is skipped, with no error reaching the caller, when it is down (a failed connection or a statement that
failed because it went away: the read runs again on another replica or the primary, and the replica is connected
to again ``RETRY_SECONDS`` later, on a thread, so no read waits for a server that does not answer), when it lags
beyond ``max_lag`` seconds (or ``max_lag_bytes`` of WAL, when set), or when it has not replayed the floor yet; it
comes back into use as soon as it catches up. Lag is measured by this process
every ``PROBE_SECONDS`` at most: the bytes between the primary's position and the replica's, and the seconds it
trails: the longer of the time since this process first saw the primary past the replica's position and the time
the WAL the replica received has waited to be replayed (``REPLAY_WAIT``).

Refused when the store opens (``ValidationError`` saying what to fix): a replica URL that names a primary (a
server not in recovery), one of another cluster (a different system identifier), another database or another
schema. A replica that is down at that moment is not an error: it is checked when it comes up, and if it is wrong
then it is shown as refused (``info()['replicas']``) and never used.
"""
from __future__ import annotations

import threading
import time
from bisect import bisect_right
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, TypeVar

import psycopg
from psycopg import sql as pgsql
from pgvector.psycopg import register_vector

from ..errors import ValidationError
from .pg_sql import redact, split_url
from .pg_vectors import SESSION, STORED
from .postgres import PostgresStore, RawVector

T = TypeVar("T")
DEFAULT_MAX_LAG = 5.0  # seconds a replica may trail the primary and still serve reads
RETRY_SECONDS = 2.0  # a replica that went away is tried again after this long
REFUSED_RETRY_SECONDS = 30.0  # one refused when it came up (wrong cluster, promoted) is checked again after this
PROBE_SECONDS = 1.0  # lag is measured at most this often
CONNECT_TIMEOUT = 3  # seconds (libpq's least is 2)
SAMPLES = 512  # primary positions remembered for measuring lag in seconds
SHORT_HEADER, LONG_HEADER = 24, 40  # WAL page headers (a segment's first page has the long one)
PRIMARY_POSITION = "pg_current_wal_insert_lsn() - '0/0'::pg_lsn"
REPLICA_POSITION = "pg_last_wal_replay_lsn() - '0/0'::pg_lsn"
# On a replica: how long the WAL it received but has not replayed has waited (the time since the last transaction
# it replayed committed on the primary; both servers' clocks are taken to agree, as PostgreSQL's own lag views do)
REPLAY_WAIT = ("CASE WHEN pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() THEN extract(epoch FROM "
               "clock_timestamp() - pg_last_xact_replay_timestamp()) END")
IDENTITY = ("SELECT pg_is_in_recovery(), (SELECT system_identifier FROM pg_control_system())::text, "
            "current_database(), (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'), "
            "(SELECT setting::bigint FROM pg_settings WHERE name = 'wal_block_size')")
MISSING = object()  # no replica could serve a read: the primary does


def replica_urls(value: str | Sequence[str] | None) -> list[str]:
    """Replica URLs from a comma-separated string (``AGENTCONTEXT_REPLICA_URLS``) or a list, blanks dropped."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    urls = [str(u).strip() for u in items if str(u).strip()]
    for url in urls:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValidationError(f"replica URL {redact(url)!r} is not a PostgreSQL URL; give each replica as "
                                  "postgresql://user@host:port/database, comma-separated", url=redact(url))
    return urls


def settle(lsn: int, segment: int = 16 << 20, page: int = 8192) -> int:
    """An insert position as a replica's replay position can equal it: the insert position of an empty WAL page
    points past the page's header, where the last record ended before it (``segment``, ``page``: the server's
    ``wal_segment_size`` and ``wal_block_size``)."""
    if lsn % segment == LONG_HEADER:
        return lsn - LONG_HEADER
    if lsn % page == SHORT_HEADER:
        return lsn - SHORT_HEADER
    return lsn


def lsn_text(lsn: int | None) -> str | None:
    """A WAL position as PostgreSQL writes it (``16/B374D848``)."""
    return None if lsn is None else f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _bound(value: Any, kind: type, name: str, unit: str) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = -1
    if not number >= 0:
        raise ValidationError(f"{name}={value!r}: give the {unit} a replica may trail the primary and still serve "
                              "reads, a number >= 0", **{name: str(value)})
    return number


@dataclass
class Replica:
    """One replica and what this process knows of it."""

    shown: str  # the URL without its password
    conninfo: str
    schema: str | None
    conn: Any = None
    state: str = "unknown"  # current, behind, lagging, down, refused
    reason: str = ""
    replayed: int = -1  # its replay position when last asked
    lag_seconds: float | None = None
    lag_bytes: int | None = None
    retry_at: float = 0.0
    probed_at: float = -1e9
    reads: int = 0
    connecting: bool = False  # a connection is being made on a thread (ReplicaSet._reconnect)
    arrived: tuple | None = None  # what that thread found, for the next read to take

    def drop(self, state: str, reason: str, retry_after: float) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn, self.state, self.reason = None, state, reason
        self.retry_at = time.monotonic() + retry_after

    def status(self) -> dict[str, Any]:
        return {"url": self.shown, "state": self.state, "reason": self.reason,
                "replayed": lsn_text(self.replayed) if self.replayed >= 0 else None,
                "lag_seconds": None if self.lag_seconds is None else round(self.lag_seconds, 3),
                "lag_bytes": self.lag_bytes, "reads": self.reads}


class ReplicaSet:
    """Chooses a replica for each read: current (replayed the floor), up, and within the lag bound; round robin."""

    def __init__(self, urls: Sequence[str], primary: str, schema: str | None, identity: tuple,
                 primary_position: Callable[[], int], max_lag: float = DEFAULT_MAX_LAG,
                 max_lag_bytes: int | None = None) -> None:
        self.max_lag, self.max_lag_bytes = _bound(max_lag, float, "max_lag", "seconds"), None
        if max_lag_bytes is not None:
            self.max_lag_bytes = _bound(max_lag_bytes, int, "max_lag_bytes", "bytes of WAL")
        self.primary = primary
        self._sysid, self._database, self._segment, self._page = identity
        self._primary_position = primary_position
        self.replicas: list[Replica] = []
        for url in urls:
            conninfo, url_schema = split_url(url)
            if url_schema and url_schema != schema:
                raise ValidationError(f"replica URL {redact(url)} names schema {url_schema!r} but the store's is "
                                      f"{schema!r}; a replica holds the primary's schemas: drop ?schema= from it",
                                      url=redact(url))
            self.replicas.append(Replica(redact(url), conninfo, schema))
        self.floor = 0  # a replica serves reads once it has replayed this far
        self._seen: deque[tuple[int, float]] = deque(maxlen=SAMPLES)  # (primary position, first seen), ascending
        self._probed_primary = -1e9
        self._next = 0
        self.primary_reads = 0
        self.closed = False
        self.last: Replica | None = None  # the replica that answered the last routed read (None: the primary)

    # --- positions ---------------------------------------------------------------------------
    def settle(self, lsn: int) -> int:
        return settle(lsn, self._segment, self._page)

    def saw_primary(self, lsn: int) -> None:
        """This store wrote or read on the primary at ``lsn`` (an insert position): reads must see at least that
        much from here on."""
        self.floor = max(self.floor, self._sample(lsn))

    def _sample(self, lsn: int) -> int:
        """Remember when the primary was first seen at or past ``lsn`` (for lag in seconds); ``lsn`` settled."""
        lsn = self.settle(int(lsn))
        if not self._seen or lsn > self._seen[-1][0]:
            self._seen.append((lsn, time.monotonic()))
        return lsn

    def saw(self, lsn: int | None) -> None:
        """A read was answered at ``lsn``: later reads must not see less."""
        if lsn is not None:
            self.floor = max(self.floor, int(lsn))

    def _lag(self, replayed: int, now: float, waiting: float) -> tuple[float, int]:
        """(seconds, bytes) a replica at ``replayed`` trails the primary: none once it has replayed the primary's
        latest position; else the longer of how long ago this process first saw the primary past it and how long
        WAL the replica received has waited (``waiting``, ``REPLAY_WAIT``)."""
        if not self._seen or replayed >= self._seen[-1][0]:
            return 0.0, 0
        first_past = bisect_right(self._seen, replayed, key=lambda s: s[0])
        return max(now - self._seen[first_past][1], waiting), self._seen[-1][0] - replayed

    # --- connecting and probing -------------------------------------------------------------------
    def attach(self) -> None:
        """Connect to every replica now; a wrong one is refused (ValidationError), one that is down is skipped."""
        for replica in self.replicas:
            problem = self._take(replica, self._open(replica))
            if problem:
                raise ValidationError(problem, url=replica.shown)

    def _open(self, replica: Replica) -> tuple[Any, str, str]:
        """(connection or None, state, reason): a new connection to ``replica``, checked and set up. Touches no
        state, so it may run on a thread of its own (``_reconnect``)."""
        try:
            conn = psycopg.connect(replica.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            return None, "down", f"cannot connect: {exc}".strip()
        try:
            recovering, sysid, database, _, _ = conn.execute(IDENTITY).fetchone()
            problem = self._wrong(replica, recovering, sysid, database)
            if problem is None:
                for statement in SESSION:
                    conn.execute(statement)
                if replica.schema:
                    conn.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(replica.schema)))
                register_vector(conn)
        except psycopg.Error as exc:
            conn.close()
            return None, "down", f"lost while connecting: {exc}".strip()
        if problem:
            conn.close()
            return None, "refused", problem
        return conn, "behind", ""

    def _take(self, replica: Replica, opened: tuple[Any, str, str]) -> str | None:
        """Apply what ``_open`` found; the problem that makes the replica wrong, else None."""
        conn, state, reason = opened
        if conn is None:
            replica.drop(state, reason, REFUSED_RETRY_SECONDS if state == "refused" else RETRY_SECONDS)
            return reason if state == "refused" else None
        if self.closed:
            conn.close()
            return None
        replica.conn, replica.state, replica.reason, replica.probed_at = conn, state, reason, -1e9
        return None

    def _reconnect(self, replica: Replica) -> None:
        """Connect to ``replica`` on a thread of its own (a read never waits for a connection to a server that
        may not answer); the next read after it is done takes the connection (``_arrived``)."""
        if replica.connecting:
            return
        replica.connecting = True

        def work() -> None:
            opened: tuple[Any, str, str] = (None, "down", "the connection attempt failed")
            try:
                opened = self._open(replica)
                if self.closed and opened[0] is not None:  # the store closed meanwhile
                    opened[0].close()
                    opened = (None, "down", "the store was closed")
            finally:
                replica.arrived, replica.connecting = opened, False

        threading.Thread(target=work, name=f"agentcontext-replica {replica.shown}", daemon=True).start()

    def _wrong(self, replica: Replica, recovering: bool, sysid: str, database: str) -> str | None:
        fix = "or remove it from AGENTCONTEXT_REPLICA_URLS (the replicas argument)"
        if sysid != self._sysid:
            return (f"replica URL {replica.shown} belongs to another cluster (system identifier {sysid}; the primary "
                    f"{self.primary}'s is {self._sysid}): it is not a copy of the primary. Make the replica from the "
                    f"primary (pg_basebackup -R -D <folder> -h <primary host>), {fix}")
        if not recovering:
            return (f"replica URL {replica.shown} is a primary (the server is not in recovery), not a replica of "
                    f"{self.primary}: what it holds is not what the primary writes. Give the URL of a standby that "
                    f"streams from the primary (pg_basebackup -R makes one), {fix}")
        if database != self._database:
            return (f"replica URL {replica.shown} names database {database!r} but the store is in {self._database!r}; "
                    f"name the same database in the replica URL, {fix}")
        return None

    def _probe(self, replica: Replica, now: float, lag: bool) -> None:
        """Ask ``replica`` how far it has replayed (and, with ``lag``, the primary too): its state follows."""
        if lag and now - self._probed_primary >= PROBE_SECONDS:
            self._sample(self._primary_position())  # not a floor: this store has not read anything there
            self._probed_primary = now
        recovering, replayed, waiting = replica.conn.execute(f"SELECT pg_is_in_recovery(), {REPLICA_POSITION}, "
                                                             f"{REPLAY_WAIT}").fetchone()
        if not recovering:
            replica.drop("refused", f"replica {replica.shown} was promoted: it is a primary now, its writes are not "
                                    f"the primary's ({self.primary}); remove it from the replicas",
                         REFUSED_RETRY_SECONDS)
            return
        replica.replayed = int(replayed)
        if lag:
            replica.lag_seconds, replica.lag_bytes = self._lag(replica.replayed, now, float(waiting or 0.0))
            replica.probed_at = now

    def _lagging(self, replica: Replica) -> bool:
        return bool(replica.lag_seconds is not None and replica.lag_seconds > self.max_lag or (
            self.max_lag_bytes is not None and replica.lag_bytes is not None
            and replica.lag_bytes > self.max_lag_bytes))

    def _usable(self, replica: Replica, now: float, wait: bool = False) -> bool:
        """Whether ``replica`` may serve the next read (probing it as needed); one without a connection is connected
        to on a thread (``wait``: here, before answering)."""
        if replica.conn is None and replica.arrived is not None:
            opened, replica.arrived = replica.arrived, None
            self._take(replica, opened)
        if replica.conn is None:
            if now < replica.retry_at:
                return False
            if not wait:
                self._reconnect(replica)
                return False
            self._take(replica, self._open(replica))
            if replica.conn is None:
                return False
        try:
            if now - replica.probed_at >= PROBE_SECONDS:
                self._probe(replica, now, lag=True)
            if replica.conn is not None and not self._lagging(replica) and replica.replayed < self.floor:
                self._probe(replica, now, lag=False)
        except psycopg.Error as exc:
            replica.drop("down", f"went away: {exc}".strip(), RETRY_SECONDS)
            return False
        if replica.conn is None:
            return False
        if self._lagging(replica):
            replica.state = "lagging"
            return False
        replica.state = "current" if replica.replayed >= self.floor else "behind"
        return replica.state == "current"

    # --- reads -----------------------------------------------------------------------------------
    def read(self, fn: Callable[[Any], T]) -> Any:
        """``fn(connection)`` on a replica that may serve it, or MISSING (the caller asks the primary). With
        ``max_lag`` 0 the floor first rises to the primary's position now: every write committed anywhere before the
        read is seen (one small query to the primary per read)."""
        if self.max_lag == 0:
            self.saw_primary(self._primary_position())
        now = time.monotonic()
        count = len(self.replicas)
        for step in range(count):
            replica = self.replicas[(self._next + step) % count]
            if not self._usable(replica, now):
                continue
            try:
                result = fn(replica.conn)
            except psycopg.Error as exc:
                if replica.conn.broken or replica.conn.closed:  # it went away: skipped until it answers again
                    replica.drop("down", f"went away: {exc}".strip(), RETRY_SECONDS)
                    continue
                break  # the statement failed there (a conflict with recovery, ...): the primary answers
            replica.reads += 1
            self.last = replica
            self._next = (self._next + step + 1) % count
            return result
        self.primary_reads += 1
        self.last = None
        return MISSING

    def status(self) -> list[dict[str, Any]]:
        """Each replica's state, position and lag, measured now."""
        now = time.monotonic()
        self._probed_primary = -1e9
        for replica in self.replicas:
            replica.probed_at = -1e9
            if replica.conn is None and not replica.connecting:
                replica.retry_at = 0.0
            self._usable(replica, now, wait=not replica.connecting)
        return [r.status() for r in self.replicas]

    def close(self) -> None:
        self.closed = True
        for replica in self.replicas:
            if replica.arrived is not None and replica.arrived[0] is not None:
                replica.arrived[0].close()
            replica.arrived = None
            if replica.conn is not None:
                replica.conn.close()
                replica.conn = None


def _binary_rows(db: Any, sql: str, params: Sequence[Any]) -> list[tuple]:
    cur = db.cursor(binary=True)
    for name in ("vector", STORED):  # migration 5 holds halfvec
        cur.adapters.register_loader(db.adapters.types[name].oid, RawVector)
    return cur.execute(sql, params).fetchall()


class ReplicatedPostgresStore(PostgresStore):
    """A PostgreSQL store that reads from replicas (module doc). ``replicas`` are URLs of standbys of ``url``."""

    # its reads go where ``ReplicaSet`` routes them (a replica that has replayed this store's writes): a read started
    # ahead stays on that routing, on the main connection, rather than on a second connection to the primary
    READ_AHEAD = False

    def __init__(self, url: str, replicas: Sequence[str], max_lag: float = DEFAULT_MAX_LAG,
                 max_lag_bytes: int | None = None, schema: str | None = None, timeout: float = 60.0) -> None:
        self._pinned = 0
        self.replicas: ReplicaSet | None = None  # until the primary is open and its schema up to date
        try:
            super().__init__(url, schema, timeout)
        except psycopg.errors.ReadOnlySqlTransaction as exc:  # the schema could not be made or upgraded there
            raise self._not_primary() from exc
        try:
            recovering, sysid, database, segment, page = self._db.execute(IDENTITY).fetchone()
            if recovering:
                raise self._not_primary()
            self.replicas = ReplicaSet(replica_urls(replicas), self.url, self.schema,
                                       (sysid, database, int(segment), int(page)), self._position, max_lag,
                                       max_lag_bytes)
            self.replicas.saw_primary(self._position())
            self.replicas.attach()
        except BaseException:
            if self.replicas is not None:
                self.replicas.close()
            super().close()
            raise

    def _not_primary(self) -> ValidationError:
        return ValidationError(f"the store URL {self.url} names a replica (the server is in recovery, read-only); "
                               "give the primary's URL as the store URL (AGENTCONTEXT_URL) and the replicas apart "
                               "(AGENTCONTEXT_REPLICA_URLS)", url=self.url)

    def _position(self) -> int:
        return int(self._read_primary(f"SELECT {PRIMARY_POSITION}")[0][0])

    def _read_primary(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return super()._read(sql, params)

    @contextmanager
    def _on_primary(self) -> Iterator[None]:
        with self._lock:
            self._pinned += 1
            try:
                yield
            finally:
                self._pinned -= 1

    def _routed(self, fn: Callable[[Any], T]) -> Any:
        """``fn`` on a replica when this read may leave the primary and one can serve it, else MISSING."""
        if self.replicas is None:
            return MISSING
        if self._depth or self._pinned or self._closed:
            self.replicas.last = None
            return MISSING
        return self.replicas.read(fn)

    # --- reads ---------------------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            rows = self._routed(lambda db: db.execute(sql, params).fetchall())
            return super()._read(sql, params) if rows is MISSING else rows

    def _vector_rows(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        with self._lock:
            rows = self._routed(lambda db: _binary_rows(db, sql, params))
            return super()._vector_rows(sql, params) if rows is MISSING else rows

    def change_counter(self) -> int:
        """The change counter, read with the position of the server that answered (the floor rises to it)."""
        with self._lock:
            got = self._routed(lambda db: db.execute(
                f"SELECT coalesce(max(seq), 0), {REPLICA_POSITION} FROM changes").fetchone())
            if got is not MISSING:
                self.replicas.saw(got[1])
                return int(got[0])
            counter, position = self._read_primary(f"SELECT coalesce(max(seq), 0), {PRIMARY_POSITION} FROM changes")[0]
            self.replicas.saw_primary(position)
            return int(counter)

    def changes_since(self, seq: int, limit: int | None = None) -> list:
        """The change log after ``seq``; the floor rises to the position of the server that answered."""
        with self._lock:
            changes = super().changes_since(seq, limit)
            replica = self.replicas.last
            try:
                if replica is not None and replica.conn is not None:
                    self.replicas.saw(replica.conn.execute(f"SELECT {REPLICA_POSITION}").fetchone()[0])
                    return changes
            except psycopg.Error:
                pass  # it went away since: the primary's position is a floor at least as high
            self.replicas.saw_primary(self._position())
            return changes

    # --- reads that stay on the primary --------------------------------------------------------------
    def get_record(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._on_primary():
            return super().get_record(kind, key)

    def list_records(self, kind: str, prefix: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        with self._on_primary():
            return super().list_records(kind, prefix)

    def tombstones(self, namespace=None, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        with self._on_primary():
            return super().tombstones(namespace, ids)

    def erased(self, ids: Sequence[str]) -> set[str]:
        with self._on_primary():
            return super().erased(ids)

    def check_integrity(self) -> str:
        with self._on_primary():
            return super().check_integrity()

    def info(self) -> dict[str, Any]:
        """``PostgresStore.info()`` (read on the primary) and each replica's state and lag, measured now."""
        with self._on_primary():  # a diagnostic: its reads leave the routing as it was (the floor)
            floor = self.replicas.floor
            out = super().info()
            self.replicas.floor = floor
        with self._lock:
            out["replicas"] = self.replicas.status()
            out["replica_reads"] = {"primary": self.replicas.primary_reads,
                                    "replicas": sum(r.reads for r in self.replicas.replicas)}
            out["max_lag"] = {"seconds": self.replicas.max_lag, "bytes": self.replicas.max_lag_bytes}
        return out

    # --- writes ----------------------------------------------------------------------------------------
    def _commit(self) -> None:
        if self.replicas is None:
            return super()._commit()
        grew = self._vector_loader is not None and self._vector_loader.pending
        self._finish_loads()  # a large load's HNSW index, built before the commit as on one server
        cur = self._db.execute(f"COMMIT; SELECT {PRIMARY_POSITION}")
        cur.nextset()
        self.replicas.saw_primary(int(cur.fetchone()[0]))
        if grew:
            self._deltas.grew()  # as on one server: a background fold once the delta outgrew its bound

    def scrub(self, tables: Sequence[str] | None = None, strict: bool = True) -> dict[str, Any]:
        out = super().scrub(tables, strict)
        with self._lock:
            self.replicas.saw_primary(self._position())
        names = ", ".join(r.shown for r in self.replicas.replicas)
        out["may_remain"].append(f"on the read replicas ({names}): the erased rows until each has replayed the "
                                 "erasure (VACUUM FULL replaces their files too), and WAL segments written before it "
                                 "until their restartpoints remove them")
        return out

    def close(self) -> None:
        with self._lock:
            if not self._closed and self.replicas is not None:
                self.replicas.close()
            super().close()
