"""A PostgreSQL role with some of a test store's rights only (``limited_role``): created fresh on the tests' server,
given the schema's use and the grants asked, and dropped with whatever it owns afterwards."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import psycopg

from agentcontext.store.postgres import split_url


def tables(admin: psycopg.Connection, schema: str, but: Sequence[str] = ()) -> list[str]:
    """The schema's tables, ``but`` these, each as ``schema.table``."""
    return [f"{schema}.{r[0]}" for r in admin.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY "
                                                      "tablename", (schema,)) if r[0] not in but]


@contextmanager
def limited_role(pg_url: str, role: str, grants: Sequence[str] = ()) -> Iterator[tuple[str, psycopg.Connection]]:
    """(the store's URL as ``role``, an admin connection): ``role`` made afresh (LOGIN, USAGE on the URL's schema),
    each of ``grants`` run as the server's superuser (``{schema}`` and ``{role}`` filled in); dropped afterwards."""
    conninfo, schema = split_url(pg_url)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        _drop(admin, role)
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        for grant in grants:
            admin.execute(grant.format(schema=schema, role=role))
        try:
            yield pg_url.replace("postgresql://postgres@", f"postgresql://{role}@"), admin
        finally:
            _drop(admin, role)


def _drop(admin: psycopg.Connection, role: str) -> None:
    if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        admin.execute(f"DROP OWNED BY {role}")
        admin.execute(f"DROP ROLE {role}")
