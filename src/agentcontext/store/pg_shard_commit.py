"""Atomic commits across shards: PostgreSQL's two-phase commit, with the decision logged on the directory shard.

A write transaction of ``ShardedStore`` that wrote to two or more shards commits in two phases:

1. On a connection of its own to the directory shard (``Decider``), the committer takes a session advisory lock on the
   transaction's id (``txid``): while it holds it, no recovery touches the transaction.
2. ``PREPARE TRANSACTION 'actx2pc:<schema key>:<txid>:<shard>'`` on every shard written: each shard's part is on disk
   and can still go either way. A prepare that fails rolls back every part (those prepared and those not yet).
3. The decision: a row ``(txid, 'commit')`` inserted into ``shard_commits`` on the directory shard (autocommit: one
   statement, durable once it returns). This row *is* the commit point.
4. ``COMMIT PREPARED`` on every shard, then the row is deleted and the lock released.

A process killed anywhere in between leaves prepared parts (which hold their rows' locks and the shard's writer lock
until resolved). The next ``ShardedStore`` to open resolves them (``recover``): for each prepared part of this schema
whose committer is gone (its lock can be taken), it inserts ``(txid, 'abort')`` unless a decision is there
(``ON CONFLICT DO NOTHING``: the first decision wins, so a committer still alive that logs ``commit`` later finds
``abort`` there and rolls back), then commits or rolls back every part as the row says: commit if the decision was
logged, else roll back.

The servers need ``max_prepared_transactions`` > 0 (PostgreSQL's default is 0). A store whose shards do not all allow
it commits shard by shard as before, says so in ``two_phase`` (``info()["atomic"]``), and logs a warning once.
PostgreSQL refuses to prepare a transaction that touched a temporary table, so a shard of a sharded store stages its
bulk rows (``pg_bulk.stage``) in unlogged tables of its schema instead, truncated before every commit
(``NoTempStaging``; one writer at a time holds a schema's writer lock, so no other sees them).
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Sequence

import psycopg

from ..errors import StoreError
from . import pg_bulk
from .shard_directory import connect

log = logging.getLogger("agentcontext.store.shards")
PREFIX = "actx2pc"
DECISIONS = "shard_commits"
CREATE = (f"CREATE TABLE IF NOT EXISTS {DECISIONS} (txid text PRIMARY KEY, outcome text NOT NULL, "
          "shards text[] NOT NULL, decided_at timestamptz NOT NULL DEFAULT now())")
DIRECTORY_PART = "~directory"  # the part of the directory's hold (new tenants' rows; no shard name has a ~)
LOCK_CLASS = 0x61637475  # advisory lock class of a committer's transaction id
GONE = (psycopg.errors.UndefinedObject,)  # COMMIT/ROLLBACK PREPARED of a part another process already resolved


def txid_key(txid: str) -> int:
    return int(txid[:8], 16) - (1 << 31)


def gid(schema_key: int, txid: str, shard: str) -> str:
    return f"{PREFIX}:{schema_key}:{txid}:{shard}"


def allows_prepare(store: Any) -> bool:
    """Whether the shard's server allows prepared transactions (``max_prepared_transactions`` > 0)."""
    return int(store._read_primary("SHOW max_prepared_transactions")[0][0]) > 0


def _finish(store: Any, name: str, verb: str) -> bool:
    """``COMMIT PREPARED`` or ``ROLLBACK PREPARED`` of part ``name``; False when no such part is left."""
    try:
        with store._lock:
            store._db.execute(f"{verb} PREPARED '{name}'")
            if verb == "COMMIT":
                store._saw_commit()
            store._prepared_ended(committed=verb == "COMMIT")
        return True
    except GONE:
        return False


class Decider:
    """The committers' connection to the directory shard: the decisions table, and the locks saying who is alive."""

    def __init__(self, home: Any) -> None:
        self.conn = connect(home, autocommit=True)  # home: the directory shard's store
        try:
            self.conn.execute(CREATE)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            pass  # another process made it at the same moment

    def lock(self, txid: str, wait: bool) -> bool:
        if wait:
            self.conn.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_CLASS, txid_key(txid)))
            return True
        return bool(self.conn.execute("SELECT pg_try_advisory_lock(%s, %s)",
                                      (LOCK_CLASS, txid_key(txid))).fetchone()[0])

    def unlock(self, txid: str) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, txid_key(txid)))

    def decide(self, txid: str, outcome: str, shards: Sequence[str]) -> str:
        """The decision for ``txid``: ``outcome`` unless one was logged first (the first one wins)."""
        return self.conn.execute(  # one round trip: the row inserted, else the one there
            f"WITH mine AS (INSERT INTO {DECISIONS}(txid, outcome, shards) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING "
            f"RETURNING outcome) SELECT outcome FROM mine UNION ALL SELECT outcome FROM {DECISIONS} WHERE txid = %s "
            "LIMIT 1", (txid, outcome, list(shards), txid)).fetchone()[0]

    def forget(self, txid: str) -> None:
        self.conn.execute(f"DELETE FROM {DECISIONS} WHERE txid = %s", (txid,))

    def close(self) -> None:
        self.conn.close()


class TwoPhase:
    """Mixin of ``ShardedStore``: the commit of a transaction that wrote to several shards, and recovery."""

    shards: Any
    names: list[str]
    directory: Any
    _decider: Decider | None
    _workers: Any
    two_phase: bool
    two_phase_reason: str

    def _schema_key(self) -> int:
        return self.shards[self.names[0]].store._lock_key

    def _decide_mode(self) -> None:
        """``two_phase``: every shard that answers allows prepared transactions (else shard by shard, said once)."""
        refusing = [s.name for s in self.shards.values() if s.store is not None and not allows_prepare(s.store)]
        self.two_phase = not refusing
        self.two_phase_reason = "" if not refusing else (
            f"max_prepared_transactions is 0 on shard{'s' if len(refusing) > 1 else ''} {', '.join(refusing)}: a "
            "transaction spanning shards commits shard by shard (atomic within each shard only); set "
            "max_prepared_transactions (e.g. 64) on every shard's server and restart it for atomic commits")
        if refusing:
            log.warning("agentcontext sharded store: %s", self.two_phase_reason)

    def _decider_conn(self) -> Decider:
        if self._decider is None or self._decider.conn.closed:
            self._decider = Decider(self.shards[self.names[0]].store)
        return self._decider

    def _commit_all(self, stack: Any, written: list[str]) -> None:
        """Close ``stack`` (the shards' transactions), in two phases when ``written`` holds two or more shards and the
        servers allow it (module doc); the directory's hold (new tenants' assignments) is then one more part."""
        if len(written) < 2 or not self.two_phase:
            stack.close()  # one shard: its commit is atomic; or shard by shard (two_phase_reason)
            return
        txid = uuid.uuid4().hex
        parts = {gid(self._schema_key(), txid, name): name for name in written}  # gid -> the shard holding it
        decider = self._decider_conn()
        decider.lock(txid, wait=True)
        try:
            for part, name in parts.items():
                self.shards[name].store._prepare_as = part
            try:
                stack.close()  # each shard's transaction ends with PREPARE TRANSACTION instead of COMMIT
                if self.directory is not None and self.directory.open():
                    part = gid(self._schema_key(), txid, DIRECTORY_PART)
                    parts[part] = self.names[0]
                    self.directory.prepare(part)
            except BaseException:
                self._resolve(txid, parts, "rollback")
                raise
            finally:
                for name in written:
                    self.shards[name].store._prepare_as = None
            self._log_decision(decider, txid, parts)
        finally:
            decider.unlock(txid)

    def _log_decision(self, decider: Decider, txid: str, parts: dict[str, str]) -> None:
        """Step 3 and 4: the commit point, then every prepared part committed (a lost race to a recovery that
        decided ``abort`` first rolls them back and raises)."""
        outcome = decider.decide(txid, "commit", sorted(set(parts.values())))
        self._resolve(txid, parts, outcome)
        if outcome != "commit":
            raise StoreError("a transaction spanning shards was rolled back: another process found it unfinished and "
                             "decided to roll it back first; nothing of it was kept, try again", txid=txid)

    def _resolve(self, txid: str, parts: dict[str, str], outcome: str, complete: bool = True) -> None:
        """Commit or roll back each part (gid -> shard) as decided; the decision is forgotten once every part is
        resolved (a shard that does not answer keeps it, and the next open resolves its part: ``complete`` False)."""
        verb = "COMMIT" if outcome == "commit" else "ROLLBACK"

        def finish(part: str, name: str) -> psycopg.Error | None:
            store = self.shards[name].store
            try:
                if store is None:
                    raise psycopg.OperationalError("not connected")
                _finish(store, part, verb)
            except psycopg.Error as exc:
                return exc
            return None

        pool = self._workers()  # the shards at once (a part of each shard: each its own connection)
        jobs = [(name, pool.submit(finish, part, name)) for part, name in parts.items() if name != self.names[0]]
        done = [(name, finish(part, name)) for part, name in parts.items() if name == self.names[0]]
        for name, error in [*done, *((n, job.result()) for n, job in jobs)]:
            if error is not None:
                complete = False
                log.warning("agentcontext sharded store: shard %s did not take the %s of a transaction across shards "
                            "(%s); the next open of the store finishes it (its decision is kept on the directory "
                            "shard)", name, verb.lower(), str(error).strip()[:200])
        if complete:
            self._decider_conn().forget(txid)

    def recover_prepared(self) -> dict[str, str]:
        """Resolve what killed committers left prepared on the shards that answer (module doc); txid -> outcome."""
        prefix = f"{PREFIX}:{self._schema_key()}:"
        found: dict[str, dict[str, str]] = {}  # txid -> {gid: shard}
        for shard in self.shards.values():
            if shard.store is None:
                continue
            for (part,) in shard.store._read_primary("SELECT gid FROM pg_prepared_xacts WHERE database = "
                                                     "current_database() AND starts_with(gid, %s)", (prefix,)):
                found.setdefault(part[len(prefix):].split(":", 1)[0], {})[part] = shard.name
        if not found:
            return {}
        every = all(s.store is not None for s in self.shards.values())  # else keep decisions for the others' parts
        decider = self._decider_conn()
        done: dict[str, str] = {}
        for txid, parts in sorted(found.items()):
            if not decider.lock(txid, wait=False):
                continue  # its committer is alive and finishing it
            try:
                outcome = decider.decide(txid, "abort", sorted(set(parts.values())))
                self._resolve(txid, parts, outcome, complete=every)
                done[txid] = outcome
                log.warning("agentcontext sharded store: a transaction across shards %s left prepared by a process "
                            "that ended was %s", ", ".join(sorted(set(parts.values()))),
                            "committed (its decision was logged)" if outcome == "commit" else "rolled back")
            finally:
                decider.unlock(txid)
        return done


class NoTempStaging:
    """Mixin of a shard's ``PostgresStore``: ``PREPARE TRANSACTION`` instead of ``COMMIT`` when asked
    (``_prepare_as``), and no temporary table (PostgreSQL cannot prepare a transaction that touched one): the bulk
    path (``pg_bulk``) stages its rows in unlogged tables of the schema, emptied before every commit."""

    _prepare_as: str | None = None
    _prepared_grew = False  # whether the part this store prepared put vectors into its delta
    _db: Any
    _vector_loader: Any
    _deltas: Any

    def _connect(self) -> None:
        super()._connect()  # type: ignore[misc]
        pg_bulk.SHARED_STAGES[self._db] = set()

    def _commit(self) -> None:
        try:
            pg_bulk.clear_stages(self._db)
        except BaseException:
            self._rollback()  # type: ignore[attr-defined]
            raise
        if self._prepare_as is None:
            super()._commit()  # type: ignore[misc]
            return
        grew = self._vector_loader is not None and self._vector_loader.pending
        self._finish_loads()  # type: ignore[attr-defined]  # a large load's HNSW index, before the prepare
        self._db.execute(f"PREPARE TRANSACTION '{self._prepare_as}'")
        self._prepared_grew = bool(grew)

    def _prepared_ended(self, committed: bool) -> None:
        """A part of this shard was committed or rolled back: once a part this store prepared committed vectors
        into the delta, the background fold past its bound starts, as after a one-shard commit (pg_delta.Delta)."""
        grew, self._prepared_grew = self._prepared_grew, False
        if committed and grew:
            self._deltas.grew()

    def _saw_commit(self) -> None:
        """A prepared part of this shard was committed (a shard with replicas notes the position: ``pg_shards``)."""

    def _rollback(self) -> None:
        used = pg_bulk.SHARED_STAGES.get(self._db)
        if used:
            used.clear()  # what they held goes with the transaction
        super()._rollback()  # type: ignore[misc]
