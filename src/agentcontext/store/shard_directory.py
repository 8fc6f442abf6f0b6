"""Which PostgreSQL server (shard) holds each tenant: the shard list of a store URL and the directory table.

The tenant is the namespace (``lib:hr``, ``memory:alice``, ``graph:default``, ...): every record, edge and tombstone
carries one, and the access rules are written over namespaces (a grant is a glob over them; ``access.py``), so a
call that a principal may make reads and writes whole namespaces, and one namespace's records never need another
server. A user id or a workspace-level tenant id would not do: the memories of one user id are spread over
namespaces that grants give out separately, and a workspace is already one store URL.

The shards are named: ``AGENTCONTEXT_SHARD_URLS="a=postgresql://h1/db,b=postgresql://h2/db"`` (or the ``shards``
argument of ``open_store``/``Workspace``: that string, a ``{name: url}`` mapping or ``(name, url)`` pairs). The first
shard listed is the directory shard: it holds the directory table, and the records (grants, tokens, settings), the
audit log and the erasure receipts of the whole store (a "global" shard; they are small and read on every call that
checks access, which they would otherwise have to fan out for).

The directory table ``shard_directory`` (in the store's schema on the directory shard) maps each tenant to its
shard; a tenant is assigned when it is first written, to the shard its name picks by rendezvous hashing (the
highest sha256 of shard name and tenant), and stays there until ``move-tenant`` moves it: the assignment is read,
not computed, so adding a shard moves no existing tenant. ``state`` is ``home``, or ``moving`` while a move copies
it (``target`` names where to); a move that did not finish (a killed process) is undone the next time the tenant is
moved or the directory is opened by ``move-tenant``.
"""
from __future__ import annotations

import hashlib
import re
import time
from typing import Any, Mapping, Sequence

from ..errors import ValidationError
from .pg_sql import redact, split_url

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
# a comma starts a new shard only where ``name=`` follows (a URL may hold commas in its query)
SPLIT_RE = re.compile(r",\s*(?=[A-Za-z0-9_-]{1,40}\s*=)")
TABLE = "shard_directory"
SEEN = 100_000  # tenants' rows remembered at most (older ones are dropped first)
MOVE_LOCK = 0x61637479  # advisory lock class of a tenant's writers (shared) and of a move (exclusive)
CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (tenant text PRIMARY KEY, shard text NOT NULL, "
          "state text NOT NULL DEFAULT 'home', target text, assigned_at timestamptz NOT NULL DEFAULT now(), "
          "moved_at timestamptz)")
EXAMPLE = "a=postgresql://user@host1/db,b=postgresql://user@host2/db"


def parse_shards(value: str | Mapping[str, str] | Sequence[Any]) -> dict[str, str]:
    """``{name: url}`` in the order given, from ``name=url,name=url``, a mapping or pairs; bad input refused with
    what to fix (a ``ValidationError``)."""
    if isinstance(value, str):
        pairs: list[tuple[str, str]] = []
        for item in SPLIT_RE.split(value.strip()):
            if not item.strip():
                continue
            name, sep, url = item.partition("=")
            if not sep or "://" in name:
                raise ValidationError(f"shard {redact(item.strip())!r} has no name; give each shard as NAME=URL, "
                                      f"comma-separated: AGENTCONTEXT_SHARD_URLS=\"{EXAMPLE}\"", shard=redact(item))
            pairs.append((name.strip(), url.strip()))
    elif isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        pairs = [(str(k), str(v)) for k, v in value]
    shards: dict[str, str] = {}
    for name, url in pairs:
        if not NAME_RE.match(name):
            raise ValidationError(f"shard name {name!r} is not allowed; use 1 to 40 letters, digits, '_' or '-' "
                                  f"(e.g. {EXAMPLE})", shard=name)
        if name in shards:
            raise ValidationError(f"shard {name!r} is named twice; give each shard a name of its own", shard=name)
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValidationError(f"shard {name!r} has the URL {redact(url)!r}, not a PostgreSQL URL; give it as "
                                  f"{name}=postgresql://user@host:port/database", shard=name, url=redact(url))
        shards[name] = url
    if not shards:
        raise ValidationError(f"no shards given; list them as NAME=URL, comma-separated: \"{EXAMPLE}\"")
    schemas = {split_url(u)[1] for u in shards.values()}
    if len(schemas) > 1:
        raise ValidationError("the shard URLs name different schemas ("
                              + ", ".join(sorted(str(s) for s in schemas)) + "); a sharded store is one schema on "
                              "every shard: give every URL the same ?schema= (or none)")
    return shards


def parse_shard_replicas(value: str | Mapping[str, Any] | None, names: Sequence[str]) -> dict[str, list[str]]:
    """``{shard: [replica URL, ...]}`` from ``name=url|url,name=url`` (``AGENTCONTEXT_SHARD_REPLICA_URLS``) or a
    mapping (a list, or ``|``-separated URLs, per shard); a shard the list does not name is refused."""
    if not value:
        return {}
    pairs = value.items() if isinstance(value, Mapping) else parse_shards(value).items()
    out: dict[str, list[str]] = {}
    for name, urls in pairs:
        if name not in names:
            raise ValidationError(f"replicas are given for shard {name!r}, which the shard list does not name (its "
                                  f"shards are {', '.join(names)}); name each replica's shard: "
                                  "AGENTCONTEXT_SHARD_REPLICA_URLS=\"b=postgresql://replica1/db|postgresql://replica2/db\"",
                                  shard=name, shards=list(names))
        listed = [u.strip() for u in (urls.split("|") if isinstance(urls, str) else urls) if u.strip()]
        for url in listed:
            if not url.startswith(("postgresql://", "postgres://")):
                raise ValidationError(f"replica {redact(url)!r} of shard {name!r} is not a PostgreSQL URL",
                                      shard=name, url=redact(url))
        out[name] = listed
    return out


def tenant_key(tenant: str) -> int:
    """The advisory lock key of ``tenant`` (with ``MOVE_LOCK``)."""
    return int.from_bytes(hashlib.sha256(tenant.encode()).digest()[:4], "big", signed=True)


def home_of(tenant: str, names: Sequence[str]) -> str:
    """The shard a new tenant is assigned to: rendezvous hashing over the shard names (stable as shards are added:
    only tenants whose highest score is the new shard's would go there, and assigned tenants never move)."""
    return max(names, key=lambda name: hashlib.sha256(f"{name}\x1f{tenant}".encode()).digest())


def unknown_shard(name: str, names: Sequence[str], tenant: str | None = None) -> ValidationError:
    """The error for a shard name the store does not list (asked for, or recorded in the directory)."""
    known = ", ".join(names)
    if tenant is None:
        return ValidationError(f"unknown shard {name!r}; this store's shards are {known} (AGENTCONTEXT_SHARD_URLS); "
                               "name one of them", shard=name, shards=list(names))
    return ValidationError(f"tenant {tenant!r} is assigned to shard {name!r}, which this store does not list (its "
                           f"shards are {known}); add {name}=postgresql://... to AGENTCONTEXT_SHARD_URLS, or move the "
                           f"tenant to a listed shard: agentcontext store move-tenant {tenant} SHARD",
                           shard=name, tenant=tenant, shards=list(names))


def connect(store: Any, autocommit: bool = False) -> Any:
    """A new connection to the server and schema of ``store`` (a ``PostgresStore``)."""
    import psycopg
    from psycopg import sql as pgsql

    conn = psycopg.connect(store._conninfo, autocommit=autocommit, connect_timeout=10)
    conn.execute(f"SET lock_timeout = '{int(store._timeout * 1000)}ms'")
    if store.schema:
        conn.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(store.schema)))
    if not autocommit:
        conn.commit()
    return conn


class Directory:
    """The directory table on the directory shard (``store``, a ``PostgresStore``): tenant -> shard, remembered in
    this process for ``ttl`` seconds for reads (a move is seen that much later at most: a move waits as long before
    it deletes the tenant's old copy). A write transaction holds its tenants (``hold``): a shared advisory lock per
    tenant on a connection of its own (a move takes it exclusively, so writes wait while a tenant moves), new tenants
    assigned and the tenants' rows read under it; ``end`` releases them after every shard has committed."""

    def __init__(self, store: Any, names: Sequence[str], ttl: float = 1.0) -> None:
        self.store, self.names, self.ttl = store, list(names), ttl
        with store.transaction():
            store._exec(CREATE)
        self._seen: dict[str, tuple[float, tuple[str, str, str | None] | None]] = {}  # tenant: (read at, row)
        self._conn: Any = None
        self.holding: dict[str, str] = {}  # the tenants the write transaction under way holds: their shards

    def connect(self, autocommit: bool = False) -> Any:
        """A new connection to the directory shard, in the store's schema."""
        return connect(self.store, autocommit)

    def rows(self, fresh: bool = False) -> dict[str, tuple[str, str, str | None]]:
        """tenant -> (shard, state, target) of every assigned tenant, read now (``info``, recovery, tests)."""
        found = self.store._read_primary(f"SELECT tenant, shard, state, target FROM {TABLE}")
        now = time.monotonic()
        rows = {t: (s, st, tg) for t, s, st, tg in found}
        self._seen = {t: (now, row) for t, row in rows.items()}
        return rows

    def unsettled(self) -> bool:
        """Whether some tenant's move did not finish (``pg_shard_move.recover`` has work)."""
        return bool(self.store._read_primary(f"SELECT EXISTS (SELECT 1 FROM {TABLE} WHERE state <> 'home')")[0][0])

    def shards_of(self, tenants: Sequence[str]) -> dict[str, str | None]:
        """Each tenant's shard (checked against the listed shards; None: not assigned yet), as read at most ``ttl``
        seconds ago: only the tenants asked for are read, in one statement."""
        now = time.monotonic()
        stale = [t for t in dict.fromkeys(tenants) if now - self._seen.get(t, (-1e18, None))[0] > self.ttl]
        if stale:
            found = {t: (s, st, tg) for t, s, st, tg in self.store._read_primary(
                f"SELECT tenant, shard, state, target FROM {TABLE} WHERE tenant = ANY(%s)", (stale,))}
            if len(self._seen) > SEEN:
                self._seen = {t: v for t, v in self._seen.items() if now - v[0] <= self.ttl}
            for tenant in stale:
                self._seen[tenant] = (now, found.get(tenant))
        out: dict[str, str | None] = {}
        for tenant in tenants:
            row = self._seen[tenant][1]
            out[tenant] = None if row is None else self._checked(tenant, row[0])
        return out

    def shard_of(self, tenant: str) -> str | None:
        return self.shards_of([tenant])[tenant]

    def forget(self, tenant: str | None = None) -> None:
        """Read ``tenant``'s row (every row: None) again at the next use."""
        if tenant is None:
            self._seen = {}
        else:
            self._seen.pop(tenant, None)

    def _checked(self, tenant: str, shard: str) -> str:
        if shard not in self.names:
            raise unknown_shard(shard, self.names, tenant)
        return shard

    def hold(self, tenants: Sequence[str]) -> dict[str, str]:
        """Each tenant's shard, held for the write transaction under way (see the class doc); new ones assigned."""
        wanted = sorted(set(tenants))
        new = [t for t in wanted if t not in self.holding]
        if new:
            if self._conn is None or self._conn.closed:
                self._conn = self.connect()
            conn = self._conn
            conn.execute(f"SELECT pg_advisory_xact_lock_shared({MOVE_LOCK}, k) FROM unnest(%s::int[]) k ORDER BY k",
                         ([tenant_key(t) for t in new],))
            conn.execute(f"INSERT INTO {TABLE}(tenant, shard) SELECT t, s FROM unnest(%s::text[], %s::text[]) "
                         "u(t, s) ON CONFLICT DO NOTHING", (new, [home_of(t, self.names) for t in new]))
            now = time.monotonic()
            for tenant, shard, state, target in conn.execute(
                    f"SELECT tenant, shard, state, target FROM {TABLE} WHERE tenant = ANY(%s)", (new,)):
                self._seen[tenant] = (now, (shard, state, target))
                self.holding[tenant] = shard
        return {t: self._checked(t, self.holding[t]) for t in wanted}

    def end(self, commit: bool) -> None:
        """The write transaction ended: keep its new assignments (``commit``) or not, and release its tenants."""
        self.holding.clear()
        if self._conn is not None and not self._conn.closed:
            if commit:
                self._conn.commit()
            else:
                self._conn.rollback()

    def open(self) -> bool:
        """Whether a write transaction's hold is open (its connection inside a transaction)."""
        from psycopg.pq import TransactionStatus

        return self._conn is not None and not self._conn.closed and \
            self._conn.info.transaction_status == TransactionStatus.INTRANS

    def prepare(self, gid: str) -> None:
        """The hold as one prepared part of a commit across shards (``pg_shard_commit``): its tenants stay held and
        its new assignments wait for the decision."""
        self._conn.execute(f"PREPARE TRANSACTION '{gid}'")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
