"""The planner's statistics after an erasure on PostgreSQL (store/pg_statistics.py): ANALYZE samples column values
into ``pg_statistic``, in the database's files, and a table's VACUUM FULL leaves them there. After ``forget``, no
file of the database holds a byte of the erased text, its conversation id or an emptied table's values; a role
that may not rewrite ``pg_statistic`` is told what remains."""
from __future__ import annotations

import psycopg
import pytest

from agentcontext.model import Edge, Node
from agentcontext.store import pg_statistics
from agentcontext.store.postgres import PostgresStore, split_url
from agentcontext.store.scrub import CONTENT_TABLES

from .bytescan import folder_files, hits, new_secret

pytestmark = pytest.mark.postgres
ROLE = "actx_schema_owner"
WRITER = "actx_writer_only"


def fill(store, secret: str) -> None:
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", content=f"words {i}",
                          props={"conversation_id": f"c{i}"}) for i in range(20)])
    store.put_nodes([Node(id="x", kind="memory", namespace="ns", content=f"card {secret}",
                          props={"conversation_id": f"joe-{secret}"})])
    store.put_edges([Edge(src="x", type="about", dst="n1", namespace="ns", props={"note": secret})])


def test_an_erased_value_sampled_by_analyze_leaves_the_files_after_forget(pg_url, pg_server):
    store = PostgresStore(pg_url, prewarm=False)
    try:
        secret = new_secret()
        fill(store, secret)
        store._db.execute("ANALYZE")  # what autovacuum does as the tables grow
        store._db.execute("CHECKPOINT")
        base = pg_server.data / "base"
        store.purge_nodes(["x"], reason="erasure")  # its edge too: the edges table is left empty
        store.scrub(CONTENT_TABLES)
        store._db.execute("CHECKPOINT")
        catalog = hits(folder_files(base), secret)
        assert catalog and all(p.endswith(f"/{_filenode(store)}") for p in catalog), catalog  # only pg_statistic
        done = pg_statistics.forget(store, [*CONTENT_TABLES, "no_such_table"])  # (a table an older schema lacks)
        assert done == {"statistics": "analyzed; pg_statistic rewritten", "may_remain": [], "held": False}
        store._db.execute("CHECKPOINT")
        assert hits(folder_files(base), secret) == {}
        assert store.count_nodes(namespace="ns") == 20
    finally:
        store.close()


def _filenode(store) -> int:
    return store._db.execute("SELECT pg_relation_filenode('pg_catalog.pg_statistic')").fetchone()[0]


def test_a_role_that_may_not_rewrite_the_catalog_is_told_what_remains(pg_url):
    conninfo, schema = split_url(pg_url)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone():
            admin.execute(f"DROP OWNED BY {ROLE}")
            admin.execute(f"DROP ROLE {ROLE}")
        admin.execute(f"CREATE ROLE {ROLE} LOGIN")
        admin.execute(f"GRANT CREATE ON DATABASE postgres TO {ROLE}")
    store = PostgresStore(pg_url.replace("postgresql://postgres@", f"postgresql://{ROLE}@"), prewarm=False)
    try:
        fill(store, new_secret())
        store.purge_nodes(["x"], reason="erasure")
        done = pg_statistics.forget(store, ["nodes", "edges"])
        assert done["statistics"] == "analyzed; pg_statistic not rewritten (the role may not vacuum it)"
        assert any("VACUUM FULL pg_catalog.pg_statistic" in line for line in done["may_remain"]), done
    finally:
        store.close()
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
            admin.execute(f"DROP OWNED BY {ROLE}")
            admin.execute(f"DROP ROLE {ROLE}")


def test_a_reader_older_than_the_analyze_keeps_the_old_samples_and_is_named(pg_url, pg_server):
    """VACUUM FULL keeps a dead row some transaction may still see, pg_statistic's as any table's: a reader whose
    snapshot predates the ANALYZE is waited for, then named in what may remain; once it ends, forget again clears
    them."""
    conninfo, schema = split_url(pg_url)
    store = PostgresStore(pg_url, prewarm=False)
    reader = psycopg.connect(conninfo)
    try:
        secret = new_secret()
        fill(store, secret)
        store._db.execute("ANALYZE")
        store.purge_nodes(["x"], reason="erasure")
        store.scrub(CONTENT_TABLES)
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute(f'SELECT count(*) FROM "{schema}".nodes').fetchone()  # its snapshot, before the ANALYZE
        done = pg_statistics.forget(store, CONTENT_TABLES, wait_s=0.3)
        assert done["statistics"] == "analyzed; pg_statistic rewritten while 1 older reader(s) ran", done
        assert any("older than its ANALYZE" in line for line in done["may_remain"]), done
        assert done["held"] is True  # the erasure's receipt says held (not clean), as for a scrub's reader
        store._db.execute("CHECKPOINT")
        assert hits(folder_files(pg_server.data / "base"), secret)  # kept for the reader
        reader.rollback()
        again = pg_statistics.forget(store, CONTENT_TABLES, wait_s=0.3)
        assert again["may_remain"] == [] and again["held"] is False
        store._db.execute("CHECKPOINT")
        assert hits(folder_files(pg_server.data / "base"), secret) == {}
    finally:
        reader.close()
        store.close()


def test_a_role_that_may_not_analyze_a_table_is_told_what_remains(pg_url):
    """A role that writes every table but owns none: PostgreSQL would skip its ANALYZE with a warning and keep the
    old samples live; the step says so instead of claiming them analyzed."""
    owner = PostgresStore(pg_url, prewarm=False)
    conninfo, schema = split_url(pg_url)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (WRITER,)).fetchone():
            admin.execute(f"DROP OWNED BY {WRITER}")
            admin.execute(f"DROP ROLE {WRITER}")
        admin.execute(f"CREATE ROLE {WRITER} LOGIN")
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {WRITER}')
        admin.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {WRITER}')
        admin.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {WRITER}')
    writer = PostgresStore(pg_url.replace("postgresql://postgres@", f"postgresql://{WRITER}@"), prewarm=False)
    try:
        fill(writer, new_secret())
        writer.purge_nodes(["x"], reason="erasure")
        done = pg_statistics.forget(writer, ["nodes", "edges"])
        assert any(line.startswith("planner statistics of nodes, edges") and "may not ANALYZE" in line
                   for line in done["may_remain"]), done
    finally:
        writer.close()
        owner.close()
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {WRITER}")
            admin.execute(f"DROP ROLE {WRITER}")
