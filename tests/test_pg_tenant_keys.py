"""The tenant key in the PostgreSQL schema (issue 24 s2, for Citus): migration 7 puts the namespace in the primary
key of every tenant table; a store at schema 4 holding data migrates in place and reads back equal; a SIGKILL in the
middle of the migration leaves schema 4 whole and usable; tombstones are keyed by (id, namespace)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from agentcontext.migrate import content_digest
from agentcontext.model import Edge, Node
from agentcontext.store import open_store
from agentcontext.store.migrations import Migrations
from agentcontext.store.migrations.postgres import TENANT_KEYS, tenant_keys
from agentcontext.store.postgres import PostgresStore

from .conftest import ROOT

pytestmark = pytest.mark.postgres
TENANT_TABLES = ("nodes", "node_versions", "edges", "tombstones")
# the step that puts the tenant in the keys (number 5 when written; whatever number the list gives it)
STEP = next(m.version for m in PostgresStore.MIGRATIONS if m.apply is tenant_keys)
BEFORE = STEP - 1


class Step4(PostgresStore):
    """The store as the code before the step wrote it (tombstones keyed by id alone, a NULL namespace allowed)."""

    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:BEFORE])
    TOMBSTONE_KEY = "id"
    NO_NAMESPACE = None


def primary_keys(store) -> dict[str, list[str]]:
    """table -> its primary key's columns in order, read from the catalog."""
    rows = store._read(
        "SELECT c.relname, a.attname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
        "JOIN pg_namespace s ON s.oid = c.relnamespace CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY u(n, i) "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = u.n "
        "WHERE k.contype = 'p' AND s.nspname = current_schema() ORDER BY c.relname, u.i")
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def fill(store) -> None:
    """Nodes with versions, a retracted one, edges (one replaced, one retracted), vectors, tombstones (one of a purge,
    one restored naming no namespace), records and audit."""
    rng = np.random.default_rng(24)
    vecs = rng.standard_normal((6, 8)).astype(np.float32)
    nodes = [Node(id=f"n{i}", kind="doc", namespace=f"t{i % 3}", key=f"k{i}", content=f"text {i} about tenants",
                  embed_text=f"text {i}", tags=["x", f"t{i}"]) for i in range(6)]
    store.put_nodes(nodes)
    store.put_vectors({n.embed_hash: vecs[i] for i, n in enumerate(store.get_nodes([n.id for n in nodes]).values())
                       if n.embed_hash}, "m")
    store.put_nodes([Node(id="n1", kind="doc", namespace="t1", key="k1", content="text 1 again")])
    store.retract_nodes(["n2"])
    store.put_edges([Edge(src="n0", type="cites", dst="n1", namespace="t0"),
                     Edge(src="n3", type="cites", dst="n4", namespace="t0", weight=0.5)])
    store.put_edges([Edge(src="n3", type="cites", dst="n4", namespace="t0", weight=0.7)])
    store.retract_edges([Edge(src="n0", type="cites", dst="n1", namespace="t0").id])
    store.purge_nodes(["n5"], reason="test", erasure="e1")
    store.put_tombstones([{"id": "old-one", "kind": "doc", "purged_at": "2024-01-01T00:00:00+00:00"}])
    store.put_record("setting", "a", {"v": 1})
    store.append_audit("alice", "read", "t0", "ok")


def reads(store) -> dict:
    """What the protocol reads back of ``fill``'s data."""
    return {
        "nodes": {ns: [(n.id, n.version, n.content, n.tags) for n in store.find_nodes(ns)]
                  for ns in ("t0", "t1", "t2")},
        "versions": {i: [(n.version, n.content, n.retracted_at) for n in store.node_versions(i)]
                     for i in ("n1", "n2", "n5")},
        "retracted": store.get_node("n2", include_retracted=True).retracted_at is not None,
        "edges": [(e.src, e.dst, e.weight, e.retracted_at is not None)
                  for e in store.edges(namespace="t0", include_retracted=True)],
        "text": store.text_search("tenants", limit=10),
        "erased": sorted(store.erased(["n5", "n1"])),
        "record": store.get_record("setting", "a"),
        "audit": [(a["principal"], a["target"]) for a in store.audit()],
    }


def test_every_tenant_table_has_the_tenant_in_its_primary_key(pg_url):
    store = open_store(pg_url)
    keys = primary_keys(store)
    for table in TENANT_TABLES:
        assert "namespace" in keys[table], (table, keys[table])
        assert tuple(keys[table]) == TENANT_KEYS[table]
    # the single server's extra unique ids across namespaces (the Citus profile drops them: docs/SHARDING.md)
    unique = dict(store._read("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND "
                              "indexdef LIKE 'CREATE UNIQUE%%'"))
    assert "(id)" in unique["nodes_id_key"] and "(eid)" in unique["edges_live"]
    assert not any(name.startswith("tombstones") and "namespace" not in d for name, d in unique.items())
    store.close()


def test_a_schema_4_store_with_data_migrates_in_place_and_reads_back_equal(pg_url):
    old = Step4(pg_url)
    assert old.schema_version() == BEFORE
    fill(old)
    assert primary_keys(old)["nodes"] == ["rid"] and primary_keys(old)["tombstones"] == ["id"]
    before, digest = reads(old), content_digest(old)
    stones = old.tombstones()
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() == PostgresStore.MIGRATIONS.latest >= STEP
    assert all("namespace" in primary_keys(store)[t] for t in TENANT_TABLES)
    assert reads(store) == before
    after = content_digest(store)
    assert {t: d for t, d in after.items() if t != "tombstones"} == {t: d for t, d in digest.items()
                                                                       if t != "tombstones"}
    # a tombstone that named no namespace has '' (the namespace is part of its key now); the rest are unchanged
    assert store.tombstones() == [{**t, "namespace": t["namespace"] or ""} for t in stones]
    assert store.check_integrity() == "ok"
    # and the migrated store writes on: a purge, an update, a second namespace's tombstone for a purged id
    store.put_nodes([Node(id="n0", kind="doc", namespace="t0", key="k0", content="text 0 changed")])
    assert [n.version for n in store.node_versions("n0")] == [1, 2]
    store.purge_nodes(["n3"], reason="again")
    store.put_tombstones([{"id": "n3", "namespace": "elsewhere", "kind": "doc", "purged_at": "2030-01-01"}])
    assert {t["namespace"] for t in store.tombstones(ids=["n3"])} == {"t0", "elsewhere"}
    assert store.tombstone("n3")["namespace"] == "elsewhere"  # the latest
    store.close()


KILLED = """
import os, sys, time
from agentcontext.store.migrations import Migration, Migrations
from agentcontext.store.postgres import PostgresStore
steps = list(PostgresStore.MIGRATIONS)
before = int(sys.argv[2])
def step_then_wait(db):
    steps[before].apply(db)  # the whole step ran, inside the upgrade's transaction, which has not committed
    print("applied", flush=True)
    time.sleep(60)
class Killed(PostgresStore):
    MIGRATIONS = Migrations("postgresql", [*steps[:before], Migration(before + 1, steps[before].name, step_then_wait)])
Killed(sys.argv[1])
"""


def test_a_sigkill_mid_migration_leaves_schema_4_whole_and_usable(pg_url):
    old = Step4(pg_url)
    fill(old)
    before = reads(old)
    old.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, pg_url, str(BEFORE)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    try:
        assert proc.stdout.readline().strip() == "applied"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    again = Step4(pg_url)  # the code before the step opens it as it was, its writes included
    assert again.schema_version() == BEFORE and primary_keys(again)["nodes"] == ["rid"]
    assert reads(again) == before
    again.put_tombstones([{"id": "after-kill", "kind": "doc"}])
    again.close()
    store = open_store(pg_url)  # and today's code migrates it
    assert store.schema_version() == PostgresStore.MIGRATIONS.latest and primary_keys(store)["tombstones"] == [
        "id", "namespace"]
    assert reads(store) == before and store.tombstone("after-kill")["namespace"] == ""
    store.close()
