"""Numbered schema migrations, one list per backend, recorded in each store's ``schema_migrations`` table.

A migration is one function that takes the backend's connection (``db.execute(sql, params)``) and brings the
schema from the previous version to its own. Adding one is a single decorated function at the end of the
backend's list (``store/migrations/sqlite.py`` or ``postgres.py``)::

    @MIGRATIONS.step(3, "FTS5 secure-delete: deleted rows leave no terms behind")
    def fts_secure_delete(db):
        db.execute("INSERT INTO fts(fts, rank) VALUES ('secure-delete', 1)")

Opening a store applies every pending step in order inside one write transaction (the backend's writer lock
is held, so processes opening the same old store at once upgrade it exactly once); if any step fails, none
of them is kept. A store whose recorded version is newer than the code knows is refused, untouched.
Never edit a step that has been released: stores in the field already ran it. Write a new one.

A backend may also give the whole schema at its latest version as one creation (``Migrations.creation``): a new,
empty store is made by it in one step and its bookkeeping rows name every step, as if each had run (PostgreSQL: the
replay rewrote tables a dozen times over, ~0.15 s a new store). A test builds one store each way and compares their
catalogs (tests/test_pg_schema_at_once.py), so a new step that the creation does not match fails there: add the
step, then change the creation to give the same schema (and its ``version`` to the step's number).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ...errors import AgentContextError, SchemaVersionError, StoreError

TABLE = "schema_migrations"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Any], None]


class Migrations:
    """The ordered steps of one backend's schema (and, optionally, the schema at one version made in one step)."""

    def __init__(self, backend: str, steps: Iterable[Migration] = ()) -> None:
        self.backend = backend
        self._steps: dict[int, Migration] = {}
        self._creation: Migration | None = None
        for step in steps:
            self._add(step)

    def create(self, version: int, name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
        """Register the decorated function as the schema at ``version`` made in one step on an empty store (used
        only while ``version`` is this list's latest: a copy with fewer or more steps, ``plus``, replays them)."""
        def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
            self._creation = Migration(version, name, fn)
            return fn

        return register

    @property
    def creation(self) -> Migration | None:
        """The one-step creation of the latest schema, when there is one for exactly this list's latest version."""
        made = self._creation
        return made if made is not None and made.version == self.latest else None

    def step(self, version: int, name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
        """Register the decorated function as migration ``version`` (the next number after the last one)."""
        def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
            self._add(Migration(version, name, fn))
            return fn

        return register

    def _add(self, step: Migration) -> None:
        if step.version != self.latest + 1:
            raise ValueError(f"{self.backend} migration {step.version} ({step.name!r}) must be number "
                             f"{self.latest + 1}: steps are numbered 1, 2, 3... without gaps or repeats")
        self._steps[step.version] = step

    def plus(self, *steps: Migration) -> "Migrations":
        """A copy with more steps after these (for tests and experiments; the shipped list is the module's)."""
        return Migrations(self.backend, [*self._steps.values(), *steps])

    @property
    def latest(self) -> int:
        return max(self._steps, default=0)

    def __iter__(self):
        return iter(self._steps.values())

    def pending(self, current: int, where: str = "?") -> list[Migration]:
        """The steps after ``current``, in order; refuses a store newer than this list."""
        if current > self.latest:
            raise SchemaVersionError(
                f"the store at {where} has schema version {current}, newer than this agentcontext knows "
                f"({self.latest} for {self.backend}): it was written by a newer agentcontext. Upgrade agentcontext "
                "(pip install -U agentcontext) to open it; nothing was changed",
                store_version=current, known_version=self.latest, backend=self.backend, url=where)
        return [self._steps[v] for v in range(current + 1, self.latest + 1)]


def applied(store: Any) -> list[dict[str, Any]]:
    """The steps recorded in a ``SQLStore``'s table, in order (none for a store from before numbered migrations)."""
    if not store._table_exists(TABLE):
        return []
    rows = store._read(f"SELECT version, name, applied_at FROM {TABLE} ORDER BY version")
    return [{"version": v, "name": n, "applied_at": a} for v, n, a in rows]


def upgrade(store: Any) -> None:
    """Apply ``store.MIGRATIONS``' pending steps to a just-opened ``SQLStore``, all in one write transaction."""
    steps: Migrations = store.MIGRATIONS
    current = store.schema_version()
    if current == steps.latest:
        return  # the common case: one read, no writer lock
    steps.pending(current, store.url)  # refuses a newer store before taking the writer lock
    with store.transaction():
        todo = steps.pending(store.schema_version(), store.url)  # again, under the lock: another may have won
        if not todo:
            return
        store._exec(f"CREATE TABLE IF NOT EXISTS {TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                    "applied_at TEXT NOT NULL)")
        made = steps.creation
        if made is not None and len(todo) == steps.latest and not store._table_exists("nodes"):
            _run(store, made)  # a new store: the latest schema at once, recorded as every step
            store._exec(store._q(f"INSERT INTO {TABLE}(version, name, applied_at) VALUES (?,?,?)") + "".join(
                store._q(", (?,?,?)") for _ in todo[1:]),
                        [v for step in todo for v in (step.version, step.name, store._now())])
            return
        for step in todo:
            _run(store, step)
            store._exec(store._q(f"INSERT INTO {TABLE}(version, name, applied_at) VALUES (?,?,?)"),
                        (step.version, step.name, store._now()))


def _run(store: Any, step: Migration) -> None:
    """Apply one step (or the creation) to the store's connection; a failure is a StoreError naming it."""
    try:
        step.apply(store._db)
    except AgentContextError:
        raise
    except Exception as exc:
        raise StoreError(f"upgrading the store at {store.url} to schema version {step.version} "
                         f"({step.name}) failed: {exc}; nothing was changed (the upgrade is one transaction), "
                         "so the agentcontext that wrote the store still opens it. Please report this error",
                         url=store.url, version=step.version) from exc
