"""A new PostgreSQL store is made at the latest schema in one step (``MIGRATIONS.creation``), not by replaying every
migration (they rewrote tables a dozen times: ~0.15 s a new store, ~400 stores in the suite). The one-step schema
must be the replayed one: a store built each way on one server, their catalogs compared item by item. An old store
still upgrades by the replay (the tests of each migration pin older step lists, which carry no creation)."""
from __future__ import annotations

import pytest

from agentcontext.store.migrations import Migrations, applied
from agentcontext.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres


class Replayed(PostgresStore):
    """Every step from 1, in order: the path an old store takes (a copy of the list carries no creation)."""

    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS))


# Each query reads one part of the catalog of the schema %(s)s, the schema's name left out of every text.
CATALOG = {
    "relations": """SELECT c.relname, c.relkind, c.relpersistence, c.reloptions::text, c.relchecks, c.relhastriggers,
        c.relhasindex, c.relreplident, c.relrowsecurity, pg_get_userbyid(c.relowner), c.relacl::text, c.reltuples,
        c.relispartition, am.amname FROM pg_class c LEFT JOIN pg_am am ON am.oid = c.relam
        WHERE c.relnamespace = %(s)s::regnamespace ORDER BY c.relname""",
    "columns": """SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
        a.atthasdef, a.atthasmissing, a.attmissingval::text, a.attidentity, a.attgenerated, a.attisdropped,
        co.collname, a.attstorage, a.attcompression, a.attstattarget, a.attacl::text, a.attndims,
        replace(pg_get_expr(d.adbin, d.adrelid), %(s)s || '.', '')
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_collation co ON co.oid = a.attcollation
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = %(s)s::regnamespace AND a.attnum > 0 ORDER BY c.relname, a.attnum""",
    "indexes": """SELECT c.relname, replace(pg_get_indexdef(i.indexrelid), %(s)s || '.', ''), i.indisunique,
        i.indisprimary, i.indisexclusion, i.indimmediate, i.indisclustered, i.indisvalid, i.indisready,
        i.indnullsnotdistinct, t.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_class t ON t.oid = i.indrelid WHERE c.relnamespace = %(s)s::regnamespace ORDER BY c.relname""",
    "constraints": """SELECT t.relname, k.conname, k.contype, replace(pg_get_constraintdef(k.oid), %(s)s || '.', ''),
        k.condeferrable, k.condeferred, k.convalidated, k.conislocal, k.coninhcount, k.connoinherit,
        (SELECT relname FROM pg_class WHERE oid = k.conindid) FROM pg_constraint k
        LEFT JOIN pg_class t ON t.oid = k.conrelid WHERE k.connamespace = %(s)s::regnamespace
        ORDER BY t.relname, k.conname""",
    "functions": """SELECT p.proname, replace(pg_get_functiondef(p.oid), %(s)s || '.', ''),
        pg_get_userbyid(p.proowner), p.proacl::text, p.provolatile, p.proparallel, p.prosecdef, p.proconfig::text
        FROM pg_proc p WHERE p.pronamespace = %(s)s::regnamespace ORDER BY p.proname""",
    "triggers": """SELECT c.relname, t.tgname, replace(pg_get_triggerdef(t.oid), %(s)s || '.', ''), t.tgenabled
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE c.relnamespace = %(s)s::regnamespace AND NOT t.tgisinternal ORDER BY c.relname, t.tgname""",
    "views": """SELECT c.relname, replace(pg_get_viewdef(c.oid), %(s)s || '.', '') FROM pg_class c
        WHERE c.relnamespace = %(s)s::regnamespace AND c.relkind IN ('v', 'm') ORDER BY c.relname""",
    "sequences": """SELECT c.relname, format_type(q.seqtypid, NULL), q.seqstart, q.seqincrement, q.seqmax, q.seqmin,
        q.seqcache, q.seqcycle, (SELECT r.relname || '.' || a.attname FROM pg_depend d JOIN pg_class r
        ON r.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
        FROM pg_sequence q JOIN pg_class c ON c.oid = q.seqrelid WHERE c.relnamespace = %(s)s::regnamespace
        ORDER BY c.relname""",
    "schema": """SELECT nspname, pg_get_userbyid(nspowner), nspacl::text FROM pg_namespace WHERE nspname = %(s)s""",
}


def catalog(store: PostgresStore) -> dict[str, list[tuple]]:
    schema = store._read("SELECT current_schema()")[0][0]
    out = {part: [tuple("<schema>" if v == schema else v for v in row) for row in store._read(sql, {"s": schema})]
           for part, sql in CATALOG.items()}
    out["migrations"] = [(row["version"], row["name"]) for row in applied(store)]
    out["version"] = [(store.schema_version(),)]
    return out


@pytest.fixture(scope="module")
def both(pg_server):
    steps = PostgresStore.MIGRATIONS
    made = steps._creation
    assert steps.creation is not None, (
        f"the one-step creation makes schema {made and made.version}, the latest migration is {steps.latest}: new "
        "stores replay every step again. Make store/migrations/postgres.py's latest_schema give the schema the new "
        "step leaves (this file's catalog test says where they differ) and number it as the step")
    replayed = Replayed(pg_server.url())
    made = PostgresStore(pg_server.url())
    yield replayed, made
    replayed.close()
    made.close()


@pytest.mark.parametrize("part", [*CATALOG, "migrations", "version"])
def test_the_one_step_schema_is_the_replayed_one(both, part):
    replayed, made = both
    want, got = catalog(replayed)[part], catalog(made)[part]
    assert want, f"the catalog query for {part} read nothing: it checks nothing"
    assert got == want


def test_the_comparison_sees_a_difference(both):
    """The catalog read tells apart what the creation could get wrong: an ANALYZE left out (the planner's estimate
    of an empty table), a constraint validated, a column's default."""
    replayed, made = both
    tuples = {row[0]: row[11] for row in catalog(made)["relations"]}
    assert tuples["nodes"] == tuples["vectors"] == 0 and tuples["edges"] == -1  # analyzed / never analyzed
    assert ("vectors", "vectors_one_state", "c", "CHECK ((NOT (searched AND pending))) NOT VALID", False, False,
            False, True, 0, False, None) in catalog(made)["constraints"]


def test_a_new_store_is_made_in_one_step_and_no_table_of_it_was_rewritten(both):
    """The replay rewrote tables (ALTER ... TYPE, a new primary key, TRUNCATE): each got a new file. A table made in
    one step keeps the file it was created with (relfilenode = its oid)."""
    replayed, made = both
    rewritten = ("SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' "
                 "AND relfilenode <> oid ORDER BY 1")
    assert made._read(rewritten) == []
    assert {"nodes", "vectors"} <= {name for (name,) in replayed._read(rewritten)}  # what the replay does
    assert made.schema_version() == PostgresStore.MIGRATIONS.latest == PostgresStore.MIGRATIONS.creation.version


def test_only_an_empty_schema_is_made_in_one_step_and_an_old_one_upgrades_by_the_steps(pg_server):
    """A store at an older version (here one step short of the latest) takes the remaining step, not the creation;
    a list that is not the shipped one (fewer or more steps) carries no creation."""
    steps = list(PostgresStore.MIGRATIONS)

    class Older(PostgresStore):
        MIGRATIONS = Migrations("postgresql", steps[:-1])

    url = pg_server.url()
    old = Older(url)
    old.close()
    assert Older.MIGRATIONS.creation is None and PostgresStore.MIGRATIONS.plus().creation is None
    store = PostgresStore(url)
    try:
        assert store.schema_version() == PostgresStore.MIGRATIONS.latest
        assert [(row["version"], row["name"]) for row in applied(store)] == [(s.version, s.name) for s in steps]
        assert store._read("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                           "table_name = 'nodes' AND column_name = 'pair_hash'")  # the last step's column
    finally:
        store.close()


def test_stores_opening_one_new_schema_at_once_make_it_once(pg_server):
    """Four threads open the same new schema together: one makes it (under the schema's writer lock), the others find
    it made; one row a step in the bookkeeping."""
    import threading

    url, opened, errors = pg_server.url(), [], []
    start = threading.Barrier(4)

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PostgresStore(url))
        except Exception as exc:  # reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        assert errors == [] and len(opened) == 4
        assert [row["version"] for row in applied(opened[0])] == [s.version for s in PostgresStore.MIGRATIONS]
    finally:
        for store in opened:
            store.close()
