"""What a caller meets when PostgreSQL refuses the store's role (store/pg_refused.py), on a real server: a role
granted some tables and not others reads (``AgentMemory.retrieve``, the store's reads, ``agentcontext memory
retrieve`` with and without ``--json``, the MCP tool) and gets our StoreError naming the table and the grant, never
psycopg's error; a role that may write every table but owns none loads many vectors (the HNSW index is built at the
commit, which only the owner may) and is told whose role to use; a server that is not there, or that refuses the
role at the connection, is our StoreError saying what to check."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import psycopg
import pytest

from agentcontext.errors import StoreError
from agentcontext.mcp_server import build_server
from agentcontext.memory import AgentMemory
from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.store.postgres import split_url
from agentcontext.workspace import Workspace

from .pg_roles import limited_role, tables
from .test_mcp import call, run

pytestmark = pytest.mark.postgres
ROLE = "actx_partial_reader"


@pytest.fixture
def owned(pg_url):
    """(the owner's workspace, its memory): two memories stored by the schema's owner."""
    ws = Workspace(open_store(pg_url))
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    memory.batch_store([{"content": "I moved to Lisbon last spring"}, {"content": "apples and pears from the market"}])
    yield ws, memory
    ws.close()


def cli(url: str, home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENTCONTEXT_URL": url, "AGENTCONTEXT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "agentcontext.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def test_a_role_that_may_not_read_the_counts_is_told_the_grant_everywhere(pg_url, owned, tmp_path):
    ws, _ = owned
    schema = split_url(pg_url)[1]
    grant = f"GRANT SELECT ON {schema}.text_counts, {schema}.text_totals TO {ROLE}"
    with limited_role(pg_url, ROLE) as (url, admin):
        admin.execute(f"GRANT SELECT ON {', '.join(tables(admin, schema, but=['text_counts']))} TO {ROLE}")
        reader = Workspace(open_store(url), embedder=ws.embedder)
        try:
            memory = AgentMemory(workspace=reader, max_memory_size=None)
            for read in (lambda: memory.retrieve("Lisbon"), lambda: reader.store.text_search("Lisbon")):
                with pytest.raises(StoreError) as caught:
                    read()
                assert caught.value.data["table"] == "text_counts" and caught.value.data["grant"] == grant
                assert "may not read table text_counts" in str(caught.value) and grant in str(caught.value)
                assert isinstance(caught.value.__cause__, psycopg.errors.InsufficientPrivilege)
            assert memory.count() == 2  # what the role may read it still reads

            as_json = cli(url, tmp_path, "memory", "retrieve", "Lisbon", "--json")
            assert as_json.returncode == 1 and "Traceback" not in as_json.stderr, as_json.stderr
            error = json.loads(as_json.stdout)["error"]
            assert error["type"] == "StoreError" and error["grant"] == grant and grant in error["message"]
            plain = cli(url, tmp_path, "memory", "retrieve", "Lisbon")
            assert plain.returncode == 1 and "Traceback" not in plain.stderr and "psycopg" not in plain.stderr
            assert "error: StoreError: the role actx_partial_reader may not read table text_counts" in \
                " ".join(plain.stderr.split()), plain.stderr

            is_error, data = run(build_server(reader), lambda c: call(c, "retrieve_memories", {"query": "Lisbon"}))
            assert is_error and data["error"]["type"] == "StoreError" and data["error"]["grant"] == grant

            admin.execute(grant)
            found = memory.retrieve("Lisbon")
            assert found and "Lisbon" in found[0]["content"]
        finally:
            reader.close()


def test_a_role_that_may_not_read_nodes_is_told_so_by_the_store(pg_url, owned):
    schema = split_url(pg_url)[1]
    with limited_role(pg_url, ROLE) as (url, admin):
        admin.execute(f"GRANT SELECT ON {', '.join(tables(admin, schema, but=['nodes']))} TO {ROLE}")
        store = open_store(url)
        try:
            for read in (lambda: store.get_node("a"), lambda: store.find_nodes(kind="memory"),
                         lambda: store.count_nodes()):
                with pytest.raises(StoreError) as caught:
                    read()
                assert caught.value.data["table"] == "nodes"
                assert f"GRANT SELECT ON {schema}.nodes TO {ROLE}" in str(caught.value)
                assert f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {ROLE}' in str(caught.value)
        finally:
            store.close()


def test_a_load_whose_index_only_the_owner_may_build_is_refused_at_the_commit(pg_url):
    """1,000 vectors of a new model: the loader builds its HNSW index after the rows, at the commit
    (``pg_bulk.VectorLoader.finish``); a role that writes every table but owns none gets our error, nothing lands."""
    owner = open_store(pg_url)
    try:
        with limited_role(pg_url, ROLE, ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO "
                                         "{role}", "GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"]
                          ) as (url, _):
            writer = open_store(url)
            try:
                rng = np.random.default_rng(7)
                vectors = {f"{i:064x}": rng.standard_normal(8).astype(np.float32) for i in range(1000)}
                with pytest.raises(StoreError) as caught:
                    writer.put_vectors(vectors, "probe-model")
                assert caught.value.data["owner"] == "postgres" and caught.value.data["grant"] == f"GRANT postgres " \
                    f"TO {ROLE}" and "only its owner (postgres) may" in str(caught.value)
                assert writer.get_vectors(list(vectors)[:5], "probe-model") == {}  # nothing was written
                writer.put_nodes([Node(id="n1", kind="note", namespace="ns", content="still writes")])
                assert owner.get_node("n1") is not None  # the role's connection goes on
            finally:
                writer.close()
    finally:
        owner.close()


def test_a_server_that_is_not_there_or_refuses_the_role_at_the_connection(pg_url, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nowhere = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    stranger = pg_url.replace("postgresql://postgres@", "postgresql://actx_nobody@")
    for url in (nowhere, stranger):
        with pytest.raises(StoreError) as caught:
            open_store(url)
        assert "cannot connect to the PostgreSQL store" in str(caught.value)
        assert "check that the server runs and the URL (user, host, port, database) is right" in str(caught.value)
        assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        as_json = cli(url, tmp_path, "memory", "retrieve", "Lisbon", "--json")
        assert as_json.returncode == 1 and "Traceback" not in as_json.stderr, as_json.stderr
        assert json.loads(as_json.stdout)["error"]["type"] == "StoreError"


def test_a_role_that_may_not_use_or_create_the_schema_is_told_so_at_the_open(pg_url, owned, tmp_path):
    """Without USAGE on the store's schema PostgreSQL skips it on the search path (the tables would be looked for in
    ``public``): the open says so; a schema that does not exist and that the role may not create, likewise."""
    schema = split_url(pg_url)[1]
    conninfo = split_url(pg_url)[0]
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {ROLE}")
        admin.execute(f"CREATE ROLE {ROLE} LOGIN")
    try:
        url = pg_url.replace("postgresql://postgres@", f"postgresql://{ROLE}@")
        with pytest.raises(StoreError) as caught:
            open_store(url)
        assert caught.value.data["grant"] == f'GRANT USAGE ON SCHEMA "{schema}" TO {ROLE}'
        assert f"may not use schema {schema} of the store" in str(caught.value)
        elsewhere = url.replace(f"schema={schema}", "schema=actx_not_made")
        with pytest.raises(StoreError) as caught:
            open_store(elsewhere)
        assert f'CREATE SCHEMA "actx_not_made" AUTHORIZATION {ROLE}' in str(caught.value)
        assert caught.value.data["grant"] == f'GRANT CREATE ON DATABASE "postgres" TO {ROLE}'
        as_json = cli(elsewhere, tmp_path, "memory", "retrieve", "Lisbon", "--json")
        assert as_json.returncode == 1 and "Traceback" not in as_json.stderr, as_json.stderr
        assert json.loads(as_json.stdout)["error"]["refused"] == "create schema"
    finally:
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f"DROP ROLE {ROLE}")


def test_a_scrub_by_a_role_that_may_not_vacuum_says_what_remains(pg_url):
    """PostgreSQL skips a VACUUM FULL of a table its role may not maintain with a warning only: the scrub asks first,
    rewrites none of those, and says so (status ``refused``: the receipt is incomplete) with the grant to give; once
    given (MAINTAIN, PostgreSQL 17+), the next scrub rewrites them and is clean."""
    owner = open_store(pg_url)
    schema = split_url(pg_url)[1]
    owner.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", content=f"secret zebra {i}") for i in range(5)])
    filenode = "SELECT relfilenode FROM pg_class WHERE oid = 'nodes'::regclass"
    try:
        with limited_role(pg_url, ROLE, ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO "
                                         "{role}", "GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"]
                          ) as (url, admin):
            writer = open_store(url)
            try:
                writer.purge_nodes(["n1"], reason="test")
                before = owner._read(filenode)
                done = writer.scrub(["nodes", "vectors"])
                assert done["status"] == "refused" and done["refused"] == ["nodes", "vectors"]
                assert f"GRANT MAINTAIN ON nodes, vectors TO {ROLE}" in done["may_remain"][0]
                assert owner._read(filenode) == before  # not rewritten: the erased row's bytes are still there
                admin.execute(f"GRANT MAINTAIN ON {schema}.nodes, {schema}.vectors TO {ROLE}")
                again = writer.scrub(["nodes", "vectors"])
                assert again["status"] == "clean" and "refused" not in again and owner._read(filenode) != before
            finally:
                writer.close()
    finally:
        owner.close()
