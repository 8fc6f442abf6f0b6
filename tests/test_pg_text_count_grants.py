"""A PostgreSQL role granted write on some of a store's tables only: BM25's counts (``text_counts``, ``text_totals``;
store/pg_text_counts.py) are kept by triggers on ``nodes`` that run with the writer's rights (not SECURITY DEFINER:
the store grants nothing the DBA did not), so a role that may write ``nodes`` and not the counts gets our StoreError
naming the grant to give, nothing is written, and once it is given the same write lands with its counts."""
from __future__ import annotations

import psycopg
import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node
from agentcontext.store.postgres import PostgresStore, split_url

pytestmark = pytest.mark.postgres
ROLE = "actx_partial_writer"


def test_a_role_that_may_not_write_the_counts_is_told_the_grant_to_give(pg_url):
    owner = PostgresStore(pg_url, prewarm=False)
    owner.put_nodes([Node(id="a", kind="note", namespace="ns", content="apples and pears")])
    conninfo, schema = split_url(pg_url)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f"DROP OWNED BY {ROLE}" if admin.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone() else "SELECT 1")
        admin.execute(f"DROP ROLE IF EXISTS {ROLE}")
        admin.execute(f"CREATE ROLE {ROLE} LOGIN")
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {ROLE}')
        admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {ROLE}')
        admin.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {ROLE}')
        tables = [r[0] for r in admin.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s "
                                              "AND tablename NOT IN ('text_counts', 'text_totals')", (schema,))]
        admin.execute(f"GRANT INSERT, UPDATE, DELETE ON {', '.join(f'{schema}.{t}' for t in tables)} TO {ROLE}")
    url = pg_url.replace("postgresql://postgres@", f"postgresql://{ROLE}@")
    writer = PostgresStore(url, prewarm=False)
    try:
        with pytest.raises(StoreError) as caught:
            writer.put_nodes([Node(id="b", kind="note", namespace="ns", content="pears and plums")])
        message = str(caught.value)
        assert f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.text_counts, {schema}.text_totals TO {ROLE}" \
            in message, message
        assert writer.get_node("b") is None and writer.count_nodes(namespace="ns") == 1  # nothing written
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.text_counts, {schema}.text_totals "
                          f"TO {ROLE}")
        writer.put_nodes([Node(id="b", kind="note", namespace="ns", content="pears and plums")])
        counts = dict(owner._read("SELECT lexeme, rows FROM text_counts WHERE namespace = 'ns'"))
        assert counts["pear"] == 2 and counts["plum"] == 1 and counts["appl"] == 1
    finally:
        writer.close()
        owner.close()
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {ROLE}")
            admin.execute(f"DROP ROLE {ROLE}")
