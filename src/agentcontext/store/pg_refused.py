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

A sequence (the change log's and the audit's numbers) asks ``GRANT USAGE``, as does the schema itself. Any other
error is not ours to explain here (None).
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
        grant = f'GRANT USAGE ON SCHEMA "{name}" TO {role}'
        return StoreError(f"the role {role} may not use schema {name} of the store at {url}; nothing was "
                          f"{'read' if reading else 'written'}. Have the schema's owner run: {grant}", url=url,
                          schema=name, role=role, grant=grant, refused="schema")
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
