"""A PostgreSQL role granted write on some of a store's tables only: BM25's counts (``text_counts``, ``text_totals``;
store/pg_text_counts.py) are kept by triggers on ``nodes`` that run with the writer's rights (not SECURITY DEFINER:
the store grants nothing the DBA did not), so a role that may write ``nodes`` and not the counts gets our StoreError
(store/pg_refused.py) naming the grant to give, nothing is written, and once it is given the same write lands with
its counts."""
from __future__ import annotations

import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node
from agentcontext.store.postgres import PostgresStore, split_url

from .pg_roles import limited_role, tables

pytestmark = pytest.mark.postgres
ROLE = "actx_partial_writer"


def test_a_role_that_may_not_write_the_counts_is_told_the_grant_to_give(pg_url):
    owner = PostgresStore(pg_url, prewarm=False)
    owner.put_nodes([Node(id="a", kind="note", namespace="ns", content="apples and pears")])
    schema = split_url(pg_url)[1]
    try:
        with limited_role(pg_url, ROLE, ["GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
                                         "GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"]) as (url, admin):
            written = tables(admin, schema, but=["text_counts", "text_totals"])
            admin.execute(f"GRANT INSERT, UPDATE, DELETE ON {', '.join(written)} TO {ROLE}")
            writer = PostgresStore(url, prewarm=False)
            try:
                with pytest.raises(StoreError) as caught:
                    writer.put_nodes([Node(id="b", kind="note", namespace="ns", content="pears and plums")])
                message = str(caught.value)
                assert f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.text_counts, {schema}.text_totals TO " \
                    f"{ROLE}" in message, message
                assert writer.get_node("b") is None and writer.count_nodes(namespace="ns") == 1  # nothing written
                admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.text_counts, {schema}.text_totals "
                              f"TO {ROLE}")
                writer.put_nodes([Node(id="b", kind="note", namespace="ns", content="pears and plums")])
                counts = dict(owner._read("SELECT lexeme, rows FROM text_counts WHERE namespace = 'ns'"))
                assert counts["pear"] == 2 and counts["plum"] == 1 and counts["appl"] == 1
            finally:
                writer.close()
    finally:
        owner.close()
