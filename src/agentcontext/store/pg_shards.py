"""Tenants on several PostgreSQL servers: ``ShardedStore`` routes each tenant's reads and writes to its shard.

The tenant is the namespace and the directory table says which shard holds each (``shard_directory.py``). A
sharded store is one store to every service: it speaks the store protocol (``base.Store``) and holds one
``PostgresStore`` per shard, all in the same schema.

- A call naming namespaces goes to the shards holding them; a write to a new namespace assigns it first.
- A call across tenants (no namespace: an owner's search, ``search --all``, analytics) fans out to every shard (at
  once, a thread per shard, outside a transaction) and merges exactly: ``nearest`` takes each shard's top k by
  absolute inner product; ``text_search`` first adds up every shard's BM25 statistics (rows, average length, rows
  holding each lexeme) and has each shard rank with those sums, so a score is the one a single server holding every
  row gives; counts add up, lists are merged in the order the protocol promises (key, recorded, ...; "insertion
  order" becomes shard by shard).
- A call by id (``get_node``, ``retract_nodes``, ``purge_nodes``, ...) goes to the shard an id reserved for a
  namespace names (``lib:x/...``), else to every shard (an id lives on one).
- Records (grants, tokens, settings), the audit log and erasure receipts live on the directory shard (the first
  listed). Vectors are keyed by text hash, not tenant: a copy is on every shard (a reference table), written to the
  directory shard (logged there) and to every other shard that answers; a purge drops the copies no node uses on
  every shard; they are read from the first shard that has them.
- A write transaction holds its tenants (``hold``: a shared lock per tenant on the directory shard, their rows read
  under it) until every shard it wrote has committed; ``pg_shard_move.py`` moves a tenant under the same lock.
- The change log is each shard's own; ``change_counter()`` is the sum of theirs and ``changes_since`` merges them by
  time, numbered on the same scale. A position this process did not hand out reads as "everything changed" (a
  purge with no target, one more than ``limit``), which makes every cache that follows the log rebuild.
- A transaction opens one on each shard it touches; one that wrote to two or more shards commits with PostgreSQL's
  two-phase commit, its decision logged on the directory shard, so it is atomic across shards and a process killed
  between the phases is resolved by the next open (``pg_shard_commit.py``). Servers that do not allow prepared
  transactions (``max_prepared_transactions`` = 0) commit shard by shard instead, said in ``info()["atomic"]``.
- A shard can have read replicas (``replicas={shard: [url, ...]}``, ``AGENTCONTEXT_SHARD_REPLICA_URLS``): its store is
  then a ``ReplicatedPostgresStore`` (``ShardReplicaStore``) whose reads go to a replica that has replayed its writes;
  what must see the latest commit (the directory, recovery, a write's own look-ups, a move's copy) reads the primary.
- A shard that does not answer: the call that needed it fails fast with ``ShardUnavailableError`` naming the shard
  (it is tried again ``RETRY_SECONDS`` later, connecting for at most ``CONNECT_TIMEOUT``); calls that need only other
  shards go on. A fan-out across every tenant fails too (its answer would be incomplete); the change counter uses
  the down shard's last known position.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import psycopg

from ..errors import ShardUnavailableError, StoreError
from ..model import Change, reserved_namespace, utcnow
from .base import COPY_TABLES, Capability
from .pg_sql import redact
from .postgres import PostgresStore
from .rows import as_list
from .pg_replicas import DEFAULT_MAX_LAG, ReplicatedPostgresStore
from .pg_shard_commit import Decider, NoTempStaging, TwoPhase
from .pg_shard_reads import ShardReads
from .pg_shard_writes import ShardWrites
from .shard_directory import Directory, parse_shard_replicas, parse_shards, unknown_shard

T = TypeVar("T")
RETRY_SECONDS = 2.0
CONNECT_TIMEOUT = 3
MARKS = 4096  # change-log positions remembered (position -> each shard's)


class ShardStore(NoTempStaging, PostgresStore):
    """One shard: a ``PostgresStore`` that gives up connecting after ``CONNECT_TIMEOUT`` seconds, and whose
    transactions can end prepared (``pg_shard_commit``)."""

    CONNECT_TIMEOUT = CONNECT_TIMEOUT

    def _read_primary(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """A read that must see the latest commit (the directory, recovery, a write's own look-ups): this server."""
        return self._read(sql, params)

    def primary(self) -> Any:
        """Reads inside stay on the primary (this server: no replicas)."""
        return nullcontext()


class ShardReplicaStore(NoTempStaging, ReplicatedPostgresStore):
    """A shard with read replicas: reads go to a replica that has replayed this store's writes (``pg_replicas``),
    its writes and the reads of ``_read_primary``/``primary()`` to the shard's primary."""

    CONNECT_TIMEOUT = CONNECT_TIMEOUT

    def primary(self) -> Any:
        return self._on_primary()

    def _saw_commit(self) -> None:
        """A prepared part committed (COMMIT PREPARED): reads wait for a replica that has replayed it."""
        self.replicas.saw_primary(self._position())


@dataclass
class Shard:
    name: str
    url: str  # with its password: to connect again
    shown: str
    store: PostgresStore | None = None
    reason: str = ""
    retry_at: float = 0.0
    seq: int = 0  # its change counter when last read
    calls: int = field(default=0)

    def error(self) -> ShardUnavailableError:
        return ShardUnavailableError(f"shard {self.name!r} ({self.shown}) does not answer: {self.reason}; the "
                                     f"tenants on it are unavailable until it is back (other shards' tenants are "
                                     f"not affected). Start that server, or check its URL in AGENTCONTEXT_SHARD_URLS",
                                     shard=self.name, url=self.shown)


def _lost(exc: BaseException, store: PostgresStore | None) -> bool:
    """Whether ``exc`` means the server went away (not a bad statement)."""
    if isinstance(exc, StoreError) and "cannot connect" in exc.message:
        return True
    if isinstance(exc, psycopg.OperationalError):
        return store is None or store._db.broken or store._db.closed
    return False


class ShardedStore(ShardReads, ShardWrites, TwoPhase):
    """The store protocol over several PostgreSQL servers (module doc). ``shards``: ``name=url,...``, a mapping or
    pairs; the first is the directory shard."""

    backend = "postgresql"
    capabilities = PostgresStore.capabilities - {Capability.READ_AHEAD}  # each shard reads ahead on its own
    MIGRATIONS = PostgresStore.MIGRATIONS  # every shard's schema
    VECTOR_DTYPE = PostgresStore.VECTOR_DTYPE

    def __init__(self, shards: str | Mapping[str, str] | Sequence[Any], timeout: float = 60.0,
                 replicas: str | Mapping[str, Any] | None = None, max_lag: float | None = None,
                 max_lag_bytes: int | None = None) -> None:
        self._urls = parse_shards(shards)
        self._replicas = parse_shard_replicas(replicas, list(self._urls))  # shard -> its read replicas' URLs
        self._lag = (DEFAULT_MAX_LAG if max_lag is None else max_lag, max_lag_bytes)
        self._timeout = timeout
        self.shards = {name: Shard(name, url, redact(url)) for name, url in self._urls.items()}
        self.names = list(self.shards)
        self.url = "shards:" + ",".join(f"{s.name}={s.shown}" for s in self.shards.values())
        self._tx: ExitStack | None = None
        self._tx_depth = 0
        self._tx_at = ""
        self._marks: OrderedDict[int, tuple[int, ...]] = OrderedDict()
        self._closed = False
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.RLock()  # held by a transaction
        self._tx_owner = 0
        self.directory: Directory | None = None
        self._decider: Decider | None = None
        self._written: list[str] = []  # the shards the transaction under way wrote to, in order
        self.two_phase, self.two_phase_reason = False, "not decided yet"
        home = self.shards[self.names[0]]
        try:
            self._connect(home, raising=True)
            for shard in list(self.shards.values())[1:]:
                self._connect(shard, raising=False)  # one that is down is tried again when a call needs it
            self._decide_mode()
            self.recover_prepared()  # what a committer killed between the two phases left prepared (holding locks)
            self.directory = Directory(home.store, self.names)
            if self.directory.unsettled():
                from .pg_shard_move import recover

                recover(self)  # what a killed move left on the shard the directory does not name
        except BaseException:
            self.close()
            raise
        self.schema = home.store.schema

    # --- shards --------------------------------------------------------------------------------------
    def _connect(self, shard: Shard, raising: bool) -> None:
        try:
            if shard.name in self._replicas:
                shard.store = ShardReplicaStore(shard.url, self._replicas[shard.name], *self._lag,
                                                timeout=self._timeout)
            else:
                shard.store = ShardStore(shard.url, timeout=self._timeout)
            shard.reason = ""
        except StoreError as exc:
            if raising or not _lost(exc, None):
                raise
            shard.reason, shard.retry_at = f"cannot connect ({exc.message.split(': ', 1)[-1]})", \
                time.monotonic() + RETRY_SECONDS

    def _store(self, name: str, write: bool = False) -> PostgresStore:
        """The store of shard ``name``, fail fast while it is down; for a write inside a transaction, one opened there
        too (a read there joins it only if a write opened it: reads take no shard's writer lock)."""
        shard = self.shards.get(name)
        if shard is None:
            raise unknown_shard(name, self.names)
        if shard.store is None:
            if time.monotonic() < shard.retry_at:
                raise shard.error()
            self._connect(shard, raising=False)
            if shard.store is None:
                raise shard.error()
        elif shard.reason and time.monotonic() < shard.retry_at:
            raise shard.error()
        if write and self._mine() and not shard.store._depth:
            self._tx.enter_context(shard.store.transaction())
            self._written.append(name)
            shard.store._tx_at = self._tx_at  # one transaction, one moment, on every shard it touches
        return shard.store

    def on(self, name: str, fn: Callable[[PostgresStore], T], write: bool = False) -> T:
        """``fn(store of shard name)`` (``write``: it writes); a shard that went away is marked down and named in the
        error."""
        store = self._store(name, write)
        shard = self.shards[name]
        try:
            result = fn(store)
        except (psycopg.Error, StoreError) as exc:
            if not _lost(exc, store):
                raise
            shard.reason, shard.retry_at = f"went away ({str(exc).strip()[:200]})", time.monotonic() + RETRY_SECONDS
            raise shard.error() from exc
        shard.reason = ""
        shard.calls += 1
        return result

    def _each(self, fn: Callable[[PostgresStore], T], names: Iterable[str] | None = None,
              write: bool = False) -> list[T]:
        return self._fan([(name, fn) for name in (self.names if names is None else names)], write)

    def _fan(self, calls: list[tuple[str, Callable[[PostgresStore], T]]], write: bool = False,
             up_only: bool = False) -> list[T]:
        """``on(name, fn)`` for each call, in order: at once on a thread per shard outside a transaction (each shard
        has its own connection), one after another inside one (it opens the shards' transactions as it goes).
        ``up_only``: a shard that is down answers None instead of raising."""
        call = self._on_up if up_only else self.on
        if len(calls) < 2 or self._mine():
            return [call(name, fn, write) for name, fn in calls]
        futures = [self._workers().submit(call, name, fn, write) for name, fn in calls]
        return [f.result() for f in futures]  # the first failure, in shard order, is raised

    def _workers(self) -> ThreadPoolExecutor:
        """The threads that ask the shards at once (one per shard)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=len(self.names), thread_name_prefix="agentcontext-shard")
        return self._pool

    def _on_up(self, name: str, fn: Callable[[PostgresStore], T], write: bool = False) -> T | None:
        try:
            return self.on(name, fn, write)
        except ShardUnavailableError:
            return None

    def _routes(self, namespace) -> dict[str, list[str] | None]:
        """shard -> the namespaces of ``namespace`` it holds (None: every shard, all of its namespaces); a namespace
        no shard holds yet is left out (nothing to read)."""
        names = as_list(namespace)
        if names is None:
            return {name: None for name in self.names}
        out: dict[str, list[str] | None] = {}
        for tenant, shard in self.directory.shards_of(names).items():
            if shard is not None:
                out.setdefault(shard, []).append(tenant)  # type: ignore[union-attr]
        return out

    def routed(self, namespace, fn: Callable[[PostgresStore, Any], T]) -> list[T]:
        """``fn(store, its namespaces)`` on each shard holding some of ``namespace`` (a str stays a str)."""
        single = isinstance(namespace, str)
        return self._fan([(name, lambda s, ns=ns: fn(s, ns[0] if single and ns else ns))
                          for name, ns in self._routes(namespace).items()])

    def shard_for(self, tenant: str) -> str:
        """The shard that holds (or will hold) ``tenant``, assigning it when new."""
        with self.transaction():
            return self.hold([tenant])[tenant]

    def hold(self, tenants: Sequence[str]) -> dict[str, str]:
        """The tenants' shards, held until this write transaction ends (a move of one waits for it, and it for a
        move under way); must run inside ``transaction()``."""
        assert self._tx is not None, "hold() runs inside a transaction"
        # the tenants are released by transaction() once every shard has committed (both phases)
        try:
            return self.directory.hold(tenants)
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreError(f"a write to {', '.join(sorted(set(tenants)))} waited longer than the lock timeout "
                             f"({self._timeout:g} s) for a move of the tenant (agentcontext store move-tenant) to end; "
                             "try again when it is done", tenants=sorted(set(tenants))) from exc
        except psycopg.OperationalError as exc:
            home = self.shards[self.names[0]]
            home.reason = f"the directory does not answer ({str(exc).strip()[:200]})"
            home.retry_at = time.monotonic() + RETRY_SECONDS
            self.directory.close()
            raise home.error() from exc

    def _tenants_of(self, ids: Sequence[str], table: str = "nodes", column: str = "id") -> list[str]:
        """The namespaces of the rows of ``table`` with these ids (live or not), on whichever shard holds them."""
        sql = f"SELECT DISTINCT namespace FROM {table} WHERE {column} = ANY(%s)"
        return sorted({r[0] for rows in self.by_ids(list(ids), lambda s, chunk: s._read_primary(sql, (chunk,)))
                       for r in rows})

    def _by_tenant(self, items: Sequence[T], tenant: Callable[[T], str]) -> dict[str, list[T]]:
        """Items grouped by the shard of their tenant, the tenants held for this write transaction."""
        homes = self.hold([tenant(i) for i in items]) if items else {}
        out: dict[str, list[T]] = {}
        for item in items:
            out.setdefault(homes[tenant(item)], []).append(item)
        return out

    def _id_shards(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """shard -> ids to ask it about: an id reserved for a namespace to that namespace's shard, others to all."""
        out: dict[str, list[str]] = {}
        free = []
        homes = self.directory.shards_of([ns for ns in map(reserved_namespace, ids) if ns])
        for id in ids:
            ns = reserved_namespace(id)
            shard = homes[ns] if ns else None
            if shard is None and ns:
                continue  # its namespace was never written: nowhere
            if shard is None:
                free.append(id)
            else:
                out.setdefault(shard, []).append(id)
        if free:
            for name in self.names:
                out.setdefault(name, []).extend(free)
        return out

    def by_ids(self, ids: Sequence[str], fn: Callable[[PostgresStore, list[str]], T], write: bool = False) -> list[T]:
        return self._fan([(name, lambda s, chunk=chunk: fn(s, chunk)) for name, chunk in self._id_shards(ids).items()],
                         write)

    # --- lifecycle -----------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction on each shard it touches, committed in turn (module doc); held by this thread: another
        thread's transaction waits for it, as on one store."""
        with self._lock:
            if self._tx is not None:
                self._tx_depth += 1
                try:
                    yield
                finally:
                    self._tx_depth -= 1
                return
            stack, self._tx_at, self._tx_owner = ExitStack(), utcnow(), threading.get_ident()
            self._tx, self._written = stack, []
            try:
                try:
                    yield
                except BaseException as exc:
                    self._tx = None
                    if not stack.__exit__(type(exc), exc, exc.__traceback__):
                        raise
                    self._release(commit=False)
                    return
                self._tx = None
                self._commit_all(stack, list(self._written))  # two phases when it wrote to several shards
            except BaseException:
                self._release(commit=False)
                raise
            self._release(commit=True)

    def _release(self, commit: bool) -> None:
        """The tenants the transaction held (``hold``) let go, their new assignments kept when it committed."""
        self._written = []
        if self.directory is not None:  # no round trip unless the directory's connection has a transaction open
            self.directory.end(commit=commit)

    def _mine(self) -> bool:
        """Whether this thread has a transaction open (a shard call then joins it)."""
        return self._tx is not None and self._tx_owner == threading.get_ident()

    @property
    def _depth(self) -> int:
        return 0 if self._tx is None else 1 + self._tx_depth

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if getattr(self, "directory", None) is not None:  # kept: close() also runs when __init__ failed before it
            self.directory.close()
        if getattr(self, "_decider", None) is not None:  # as above
            self._decider.close()
            self._decider = None
        for shard in self.shards.values():
            if shard.store is not None:
                shard.store.close()
                shard.store = None

    def check_integrity(self) -> str:
        found = [f"{name}: {r}" for name, r in zip(self.names, self._each(lambda s: s.check_integrity())) if r != "ok"]
        return "ok" if not found else "; ".join(found)

    def schema_version(self) -> int:
        return min(self._each(lambda s: s.schema_version()))

    def info(self) -> dict[str, Any]:
        """The directory shard's info with the counts and namespaces of every shard added up (vectors: the
        directory shard's, the others hold copies), the change counter, and each shard's state, tenants and counts.
        A shard that is down is shown as such (its counts are then missing from the totals)."""
        out: dict[str, Any] = {}
        tenants: dict[str, int] = {}
        for shard, _, _ in self.directory.rows().values():
            tenants[shard] = tenants.get(shard, 0) + 1
        entries, counts, namespaces = [], {}, {}
        for name in self.names:
            entry: dict[str, Any] = {"name": name, "url": self.shards[name].shown, "tenants": tenants.get(name, 0)}
            try:
                got = self.on(name, lambda s: s.info())
            except ShardUnavailableError as exc:
                entry.update(state="down", reason=exc.message)
                entries.append(entry)
                continue
            entry.update(state="up", counts=got["counts"], sizes=got.get("sizes"))
            if "replicas" in got:  # a shard with read replicas: each one's state and lag
                entry.update(replicas=got["replicas"], replica_reads=got["replica_reads"])
            entries.append(entry)
            if name == self.names[0]:
                out.update(got)
            for key, value in got["counts"].items():
                if key != "vectors" or name == self.names[0]:
                    counts[key] = counts.get(key, 0) + value
            for ns, value in got["namespaces"].items():
                namespaces[ns] = namespaces.get(ns, 0) + value
        out.update(url=self.url, capabilities=sorted(c.value for c in self.capabilities), counts=counts,
                   namespaces=dict(sorted(namespaces.items())), change_counter=self.change_counter(), shards=entries,
                   atomic="two-phase commit across shards" if self.two_phase else self.two_phase_reason,
                   directory={"shard": self.names[0], "tenants": sum(tenants.values())})
        return out

    # --- change log ----------------------------------------------------------------------------------
    def change_counter(self) -> int:
        for shard in self.shards.values():
            try:
                shard.seq = self.on(shard.name, lambda s: s.change_counter())
            except ShardUnavailableError:
                pass  # its last known position: its tenants' calls fail on their own
        vector = tuple(s.seq for s in self.shards.values())
        return self._mark(vector)

    def _mark(self, vector: tuple[int, ...]) -> int:
        total = sum(vector)
        self._marks[total] = vector
        self._marks.move_to_end(total)
        while len(self._marks) > MARKS:
            self._marks.popitem(last=False)
        return total

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        vector = (0,) * len(self.names) if seq <= 0 else self._marks.get(seq)
        if vector is None:  # not a position this process handed out: everything changed
            return [Change(seq + 1, utcnow(), "", "node.purge", "", "", {"reset": True})] * ((limit or 0) + 1)
        merged: list[tuple[str, int, Change]] = []
        for index, name in enumerate(self.names):
            try:
                got = self.on(name, lambda s, i=index: s.changes_since(vector[i], limit))
            except ShardUnavailableError:
                continue
            merged.extend((c.at, index, c) for c in got)
        merged.sort(key=lambda t: (t[0], t[1], t[2].seq))
        position, out = list(vector), []
        for _, index, change in merged[:limit]:
            position[index] = change.seq
            change.seq = self._mark(tuple(position))
            out.append(change)
        return out

    # --- copying a whole store ---------------------------------------------------------------------------
    def export_rows(self, table: str, after: Sequence[Any] | None = None,
                    limit: int = 5000) -> tuple[list[dict[str, Any]], list[Any] | None]:
        """Pages of each shard in turn (records, audit and vectors: the directory shard's; the change log of each
        shard numbered after the shards before it); the cursor is (shard index, that shard's cursor)."""
        names = self.names[:1] if table in ("records", "audit", "vectors") else self.names
        index, inner = (0, None) if after is None else (int(after[0]), after[1])
        page: list[dict[str, Any]] = []
        while True:  # a page is filled from the next shards when one runs out (callers may read one page)
            rows, cursor = self.on(names[index], lambda s, after=inner: s.export_rows(table, after, limit - len(page)))
            if table == "changes" and index:  # numbered after the shards before it: one log, no seq twice
                offset = sum(self.on(n, lambda s: s.change_counter()) for n in names[:index])
                rows = [{**row, "seq": row["seq"] + offset} for row in rows]
            page.extend(rows)
            if cursor is not None:
                return page, [index, cursor]
            index, inner = index + 1, None
            if index >= len(names):
                return page, None
            if len(page) >= limit:
                return page, [index, None]

    def import_rows(self, table: str, batches: Iterable[Sequence[dict[str, Any]]]) -> int:
        """Rows of a tenant table go to their tenant's shard; records, audit and changes to the directory shard;
        vectors to every shard."""
        if table not in COPY_TABLES:
            return self.on(self.names[0], lambda s: s.import_rows(table, batches), write=True)
        total = 0
        with self.transaction():
            for batch in batches:
                if table in ("records", "audit", "changes"):
                    total += self.on(self.names[0], lambda s, b=batch: s.import_rows(table, [b]), write=True)
                elif table == "vectors":
                    total += max(self._each(lambda s, b=batch: s.import_rows(table, [b]), write=True))
                else:
                    for name, part in self._by_tenant(list(batch), lambda r: r.get("namespace") or "").items():
                        total += self.on(name, lambda s, p=part: s.import_rows(table, [p]), write=True)
        return total

