"""What a caller gets when PostgreSQL refuses the store's role (``InsufficientPrivilege``): our ``StoreError``
naming what was refused and the statement that gives it, never psycopg's error.

Three places meet a refusal, and each asks here:

- a read (``PostgresStore._guard``, every ``_read`` and the vector reads, on either connection of the store, in a
  transaction or not): "may not read table X", ``GRANT SELECT`` on it (a role that reads the store needs SELECT on
  every table of the schema: a search reads ``nodes``, ``vectors``, ``text_counts`` and ``text_totals``);
- a write inside a transaction (``SQLStore.transaction``, after the rollback): "may not write table X", ``GRANT
  SELECT, INSERT, UPDATE, DELETE``; a write to ``nodes`` keeps BM25's counts by triggers that run with the writer's
  rights (not SECURITY DEFINER: the store takes no right the DBA did not give), so the grant names both count tables;
- the commit's own steps (``SQLStore.transaction``: the vector loader's ``finish`` builds the HNSW index of a large
  load after its rows) and a load's index drop: only a table's owner may create, drop or rebuild its indexes, so
  the message names the owner and ``GRANT <owner> TO <role>``.

A sequence (the change log's and the audit's numbers) asks ``GRANT USAGE``; a schema ``GRANT USAGE`` and, for the
role that creates or upgrades the store's tables, ``CREATE``. Any other error is not ours to explain here (None).
At the connection (``open_schema``): the store's schema (``?schema=``) is made when missing (a role that may not:
our error, with the statement an administrator runs) and a role that may not use it is told so before any read
(PostgreSQL would otherwise skip the schema on the search path and look for the tables in ``public``).
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import StoreError

COUNT_TABLES = ("text_counts", "text_totals")
_DENIED = re.compile(r"permission denied for (table|relation|sequence|schema) (\w+)")
_OWNER = re.compile(r"must be owner of (?:table|index|relation|materialized view) (\w+)")
_WHY_COUNTS = {True: " (a text search reads BM25's counts there)",
               False: " (a write to nodes keeps BM25's counts there in the same transaction, by triggers that run "
                      "with the writer's rights)"}


def refused(exc: BaseException, store: Any, reading: bool) -> StoreError | None:
    """Our error for ``exc`` if the server refused ``store``'s role (``reading``: a read, else a write or the
    commit's index build); None for any other error."""
    import psycopg

    if not isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return None
    role, url, schema = store._db.info.user or "<role>", store.url, store.schema
    text = str(exc)
    denied, owned = _DENIED.search(text), _OWNER.search(text)
    if owned is not None:
        return _not_owner(store, owned.group(1), role, url)
    if denied is None:
        return None
    kind, name = denied.groups()
    if kind == "schema":
        return _schema_refused(name, role, url, reading)
    if kind == "sequence":
        grant = f"GRANT USAGE ON SEQUENCE {_named(schema, (name,))} TO {role}"
        return StoreError(f"the role {role} may not use sequence {name} of the store at {url} (it numbers the change "
                          f"log or the audit); nothing was written. Have the schema's owner run: {grant}", url=url,
                          sequence=name, role=role, grant=grant, refused="write")
    tables = COUNT_TABLES if name in COUNT_TABLES else (name,)
    why = _WHY_COUNTS[reading] if name in COUNT_TABLES else ""
    if reading:
        grant = f"GRANT SELECT ON {_named(schema, tables)} TO {role}"
        every = f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}' if schema else ""
        return StoreError(f"the role {role} may not read table {name} of the store at {url}{why}. Have the schema's "
                          f"owner run: {grant}" + (f" (a reader needs SELECT on every table of the store: {every})"
                                                   if every else ""),
                          url=url, table=name, role=role, grant=grant, refused="read")
    grant = f"GRANT SELECT, INSERT, UPDATE, DELETE ON {_named(schema, tables)} TO {role}"
    return StoreError(f"the role {role} may not write table {name} of the store at {url}{why}; nothing was "
                      f"written. Have the schema's owner run: {grant}", url=url, table=name, role=role, grant=grant,
                      refused="write")


def raise_read(exc: BaseException, store: Any) -> None:
    """Raise ours (from ``exc``) if ``exc`` is the server refusing ``store``'s role a read; else return."""
    error = refused(exc, store, reading=True)
    if error is not None:
        raise error from exc


def _schema_refused(name: str, role: str, url: str, reading: bool) -> StoreError:
    grant = f'GRANT USAGE ON SCHEMA "{name}" TO {role}'
    create = f'GRANT CREATE ON SCHEMA "{name}" TO {role}'
    return StoreError(f"the role {role} may not use schema {name} of the store at {url}; nothing was "
                      f"{'read' if reading else 'written'}. Have the schema's owner run: {grant}; and {create} for "
                      "a role that creates the store's tables or upgrades them (or open the store once as the "
                      "schema's owner)", url=url, schema=name, role=role, grant=grant, refused="schema")


def open_schema(db: Any, schema: str, url: str, lock_class: int) -> None:
    """``schema`` made when missing (concurrent ``CREATE SCHEMA IF NOT EXISTS`` can collide: serialised by an
    advisory lock), the role's use of it checked, and it first on the search path; on a refusal the connection is
    closed and ours raised."""
    import psycopg
    from psycopg import sql as pgsql

    role, database = db.info.user or "<role>", db.info.dbname
    try:
        if not db.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
            with db.transaction():  # (a role without CREATE opens a schema that exists)
                db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (lock_class,))
                db.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pgsql.Identifier(schema)))
        if not db.execute("SELECT has_schema_privilege(%s, 'USAGE')", (schema,)).fetchone()[0]:
            raise _schema_refused(schema, role, url, reading=True)
        db.execute(pgsql.SQL("SET search_path TO {}, public").format(pgsql.Identifier(schema)))
    except psycopg.errors.InsufficientPrivilege as exc:
        db.close()
        grant = f'GRANT CREATE ON DATABASE "{database}" TO {role}'
        raise StoreError(f"the store at {url} names schema {schema}, which does not exist, and the role {role} may "
                         f"not create it in database {database}. Have an administrator run: CREATE SCHEMA "
                         f'"{schema}" AUTHORIZATION {role} (or {grant}), or name a schema that exists', url=url,
                         schema=schema, role=role, grant=grant, refused="create schema") from exc
    except StoreError:
        db.close()
        raise


def _named(schema: str | None, tables: tuple[str, ...]) -> str:
    return ", ".join(f"{schema}.{t}" if schema else t for t in tables)


def _not_owner(store: Any, name: str, role: str, url: str) -> StoreError:
    """Only the owner of ``name`` (a table or an index) may drop, create or rebuild its indexes: who owns it, asked
    after the rollback (the connection answers again; '<owner>' if it cannot)."""
    import psycopg

    owner = "<owner>"
    db = store._db
    if not (db.broken or db.closed) and not store._depth:
        try:
            found = db.execute("SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.relname = %s AND "
                               "c.relnamespace = current_schema()::regnamespace", (name,)).fetchone()
            owner = found[0] if found else owner
        except psycopg.Error:  # the owner's name is a courtesy: the refusal is reported either way
            owner = "<owner>"
    grant = f"GRANT {owner} TO {role}"
    return StoreError(f"the role {role} may not change the indexes of {name} in the store at {url}: only its owner "
                      f"({owner}) may, and a large vector load drops the HNSW index of its model and builds it again "
                      f"after its rows, at the commit; nothing was written. Write as {owner}, or have it run: {grant}",
                      url=url, table=name, role=role, owner=owner, grant=grant, refused="owner")
