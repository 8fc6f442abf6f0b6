"""The nodes' hashes held as bytes on PostgreSQL, and a memory's updated_at held once (migration 13, store/pg_hash.py,
store/pg_props.py, issue 23 s2): ``content_hash`` and ``embed_hash`` of ``nodes`` and ``node_versions`` are ``bytea``
(a digest's 32 bytes), and every path keeps text hashes and whole props at the API: row writes and updates, the bulk
path (batch_store, a whole-store copy through import_rows), export and import, a tenant moved between shards,
erasure. An upgrade from the step before keeps every node's fields (a dump before and after compared), a crash
mid-upgrade leaves the step before, and the byte scan finds a node's hash bytes in the heap before a strict erasure
and none after."""
from __future__ import annotations


import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import open_store, transfer
from agentcontext.store.migrations import Migrations

from .upgrade_crash import kill_mid_step

pytestmark = pytest.mark.postgres
DIM = 16


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def mine() -> int:
    """This step's number (the lead renumbers steps at a merge)."""
    from agentcontext.store.postgres import PostgresStore

    return next(m.version for m in PostgresStore.MIGRATIONS if m.apply.__name__ == "node_hash_bytes")


def step11_store(url):
    """A store pinned to the step before this one (11 when it was written)."""
    from agentcontext.store.postgres import PostgresStore

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:mine() - 1])

    return Before(url)


def fill(store, rng) -> None:
    """Nodes written by rows (30 with vectors, a title that is part of the text embedded, one without a text to
    embed), updated (node_versions), retracted, and a second namespace; their vectors."""
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", title="Ann" if i % 2 else "",
                          content=f"turn {i}", props={"i": i, "prev": f"n{i - 1}" if i else None},
                          embed_text=f"Ann: turn {i}" if i % 2 else f"turn {i}") for i in range(30)])
    store.put_nodes([Node(id="plain", kind="entity", namespace="ns", content="no text to embed")])
    store.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns", title="Ann" if i % 2 else "",
                          content=f"turn {i} again", embed_text=f"turn {i} again") for i in range(5)])
    store.retract_nodes(["n7"])
    store.put_nodes([Node(id="o1", kind="memory", namespace="other", content="elsewhere", embed_text="elsewhere")])
    store.put_nodes([Node(id=f"t{i}", kind="memory", namespace="ns", content=f"stamped {i}", props=stamps(i),
                          embed_text=f"stamped {i}") for i in range(6)])
    store.put_nodes([Node(id="t0", kind="memory", namespace="ns", content="stamped 0, again", props=stamps(0, 1),
                          embed_text="stamped 0")])
    texts = [f"Ann: turn {i}" if i % 2 else f"turn {i}" for i in range(30)] + [f"turn {i} again" for i in range(5)]
    texts += [f"stamped {i}" for i in range(6)]
    store.put_vectors({content_hash(t): v for t, v in zip(texts + ["elsewhere"], unit(rng, len(texts) + 1))}, "m")


def stamps(i: int, later: int = 0) -> dict:
    """A memory's props: updated_at equal to created_at (i even) or later; nested stamps and odd text around them."""
    created = f"2024-01-0{i + 1}T10:00:00.000000+00:00"
    updated = created if not (i % 2 or later) else f"2024-02-0{i + 1}T10:00:00.000000+00:00"
    props = {"created_at": created, "updated_at": updated, "conversation_id": None, "user_id": f"u{i}",
             "metadata": {"updated_at": "2023", "note": "caf\u00e9 \"q\""}}
    if i == 4:
        props["zz"] = {"a": 1, "updated_at": updated}  # the same text further on: not cut, the row kept whole
    if i == 5:
        props["updated_at"] = 5  # not a string: kept
    return props


def dump(store) -> dict:
    """Every node's fields as the API gives them, through each read path."""
    ids = store.node_ids(include_retracted=True)
    nodes = {i: store.get_node(i, include_retracted=True).to_dict() for i in ids}
    pages = {t: sorted((r for page in transfer.pages(store, t, 7) for r in page), key=lambda r: (r["id"], r["version"]))
             for t in ("nodes", "node_versions")}  # export, 7 rows a page
    history = {i: [n.to_dict() for n in store.node_versions(i)] for i in ("n0", "n1", "n3", "n7")}
    q = np.ones(DIM, dtype=np.float32) / 4
    filters = {"by": [sorted(store.find_by_props(["updated_at"], stamps(i)["updated_at"], "ns")) for i in (0, 1, 2)],
               "held": sorted(store.find_by_props(["metadata", "updated_at"], "2023", "ns")),
               "near": [store.nearest(q, "m", 50, namespace="ns", props={"updated_at": stamps(i)["updated_at"]})
                        for i in (0, 2, 3)]}
    named, followers = store.nodes_linked([f"t{i}" for i in range(6)] + ["n3"], "prev", "ns", "memory",
                                          ["updated_at", "created_at"])  # the ranking's read of a few props
    linked = {i: (n.props, n.embed_hash) for i, n in named.items()} | {f.id: (f.props, f.embed_hash) for f in followers}
    return {"nodes": nodes, "pages": pages, "history": history, "filters": filters, "linked": linked,
            "index": store.node_index("ns"), "missing": sorted(store.missing_vectors("m")),
            "count": store.count_vectors("m", "ns"), "found": store.find_nodes(namespace="ns", kind="memory")}


def widths(store, table: str = "nodes") -> set[int]:
    return {w for (w,) in store._read(f"SELECT DISTINCT octet_length(content_hash) FROM {table}")}


def test_an_upgrade_from_the_step_before_keeps_every_node_field(pg_url):
    rng = np.random.default_rng(12)
    old = step11_store(pg_url)
    assert old.schema_version() == mine() - 1 and not old._nb
    fill(old, rng)
    old.put_nodes([Node(id="late", kind="memory", namespace="ns", content="late turn", embed_text="late turn")])
    old.fold()
    before = dump(old)
    queries = unit(rng, 4)
    near = [old.nearest(q, "m", 5, namespace="ns") for q in queries]
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= mine() and store._nb
    assert widths(store) == {32} and widths(store, "node_versions") == {32}
    assert store._read("SELECT id FROM nodes WHERE embed_hash IS NULL") == [("plain",)]  # NULL kept
    assert dump(store) == before
    assert [store.nearest(q, "m", 5, namespace="ns") for q in queries] == near
    held = dict(store._read("SELECT id, props FROM nodes WHERE id LIKE 't%%'"))  # updated_at held once (pg_props)
    assert {i for i, t in held.items() if t.startswith("{ ")} == {"t2"}  # t0 was updated later; t4, t5 kept whole
    assert held["t2"].count('"updated_at"') == 1  # the nested one
    assert store._read("SELECT props FROM node_versions WHERE id = 't0'")[0][0].startswith("{ ")
    assert [[i for i, _ in near] for near in before["filters"]["near"]] == [[], ["t2"], ["t3"]]
    assert before["filters"]["by"] == [[], ["t1"], ["t2"]]  # (t0 updated later; t1's stamp differs)
    # a node put again unchanged keeps its version (its hashes compared with the bytes held), a changed one moves on
    again = store.get_node("n3")
    store.put_nodes([Node(id="n3", kind="memory", namespace="ns", title="Ann", content="turn 3 again",
                          embed_text="turn 3 again")])
    assert store.get_node("n3").version == again.version
    store.put_nodes([Node(id="n3", kind="memory", namespace="ns", title="Ann", content="turn 3, third")])
    assert store.get_node("n3").version == again.version + 1
    assert [n.to_dict() for n in store.node_versions("n3")][:-1] == before["history"].get("n3", [])
    store.close()


def test_a_crash_mid_upgrade_leaves_the_step_before(pg_url, tmp_path):
    rng = np.random.default_rng(13)
    old = step11_store(pg_url)
    fill(old, rng)
    before = dump(old)
    old.close()
    kill_mid_step(pg_url, "node_hash_bytes", tmp_path)
    held = step11_store(pg_url)
    assert held.schema_version() == mine() - 1 and not held._nb
    assert held._read("SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'nodes' AND column_name = 'content_hash'") == [("text",)]
    assert dump(held) == before
    held.close()
    store = open_store(pg_url)  # the next open upgrades it whole
    assert store._nb and dump(store) == before
    store.close()


def test_every_write_path_lands_bytes_and_reads_back_the_same_text(pg_url, pg_server):
    from agentcontext import AgentMemory
    from agentcontext.migrate import migrate
    from agentcontext.workspace import Workspace

    rng = np.random.default_rng(14)
    store = open_store(pg_url)
    assert store._nb
    fill(store, rng)  # rows: put_nodes (COPY), an update (the staged update), a retraction
    assert widths(store) == {32} and widths(store, "node_versions") == {32}
    marked = "SELECT id FROM nodes WHERE props LIKE '{ %%' ORDER BY id"  # updated_at held once (pg_props)
    assert store._read(marked) == [("t2",), ("t4",)]  # (t4's nested stamp is no top-level key: Python cuts it)
    assert store.get_node("t2").props == stamps(2) and store.get_node("t4").props == stamps(4)
    n0 = store.get_node("n0")
    assert n0.content_hash == n0.compute_hash() and n0.embed_hash == content_hash("turn 0 again")
    assert store._read("SELECT count(*) FROM nodes WHERE embed_hash = %s", [bytes.fromhex(n0.embed_hash)]) == [(1,)]
    assert store._read("SELECT count(*) FROM vectors WHERE pending")[0][0] >= 30  # found by the nodes' bytes
    store.fold()
    # batch_store's bulk path (vectors supplied)
    ws = Workspace(store)
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    vectors = unit(rng, 12, 384)
    ids = memory.batch_store([{"id": f"b{i}", "content": f"fact {i}", "conversation_id": "c1", "vector": vectors[i]}
                              for i in range(12)])
    made = [store.get_node(i) for i in ids]
    assert all(n.embed_hash and len(n.embed_hash) == 64 for n in made)
    missing = {h for h, _ in store.missing_vectors(ws.model_name)}  # (fill's nodes have vectors of model "m" only)
    assert missing.isdisjoint(n.embed_hash for n in made)  # every memory's vector found through its node's bytes
    got = store.get_vectors([n.embed_hash for n in made], ws.model_name)
    assert all(np.allclose(got[n.embed_hash], v, atol=1e-3) for n, v in zip(made, vectors))
    assert widths(store) == {32}
    before = dump(store)
    # export and import: a whole-store copy into an empty schema (Store.import_rows, the bulk path), and back out
    copy_url = pg_server.url()
    assert migrate(pg_url, copy_url)["digests_equal"]
    target = open_store(copy_url)
    assert widths(target) == {32} and widths(target, "node_versions") == {32}
    assert dump(target) == before
    assert target._read(marked) == store._read(marked)  # an import holds them once too
    q = unit(rng, 1)[0]
    assert target.nearest(q, "m", 5, namespace="ns") == store.nearest(q, "m", 5, namespace="ns")
    exported = [r for page in transfer.pages(target, "nodes") for r in page]
    assert all(isinstance(r["content_hash"], str) and len(r["content_hash"]) == 64 for r in exported)
    target.close()
    # a row of another store holding a hash that is no digest (any text) round-trips through an import
    odd_url = pg_server.url()
    odd = open_store(odd_url)
    row = {**next(r for r in exported if r["id"] == "plain"), "content_hash": "legacy-hash"}
    odd.import_rows("nodes", [[row]])
    assert odd.get_node("plain").content_hash == "legacy-hash"
    assert odd._read("SELECT octet_length(content_hash) FROM nodes")[0][0] == len("legacy-hash") + 1
    odd.close()
    ws.close()


def test_a_tenant_moved_between_shards_keeps_its_hashes(pg_server):
    from agentcontext.store.pg_shard_move import move_tenant
    from agentcontext.store.pg_shards import ShardedStore

    import psycopg

    schema = pg_server.url().split("=")[-1]  # one schema on both shards, each shard a database of the server
    with psycopg.connect(pg_server.url(None), autocommit=True) as db:
        db.execute(f"CREATE DATABASE shard_{schema}")
    a = pg_server.url(schema)
    b = a.replace("/postgres?", f"/shard_{schema}?")
    store = ShardedStore(f"a={a},b={b}")
    rng = np.random.default_rng(15)
    fill(store, rng)
    before = {i: store.get_node(i, include_retracted=True).to_dict() for i in store.node_ids(include_retracted=True)}
    target = "a" if store.shard_for("ns") == "b" else "b"
    move_tenant(store, "ns", target)
    after = {i: store.get_node(i, include_retracted=True).to_dict() for i in store.node_ids(include_retracted=True)}
    assert after == before
    for url in (a, b):
        shard = open_store(url)
        assert widths(shard) <= {32}
        shard.close()
    store.close()


def test_the_byte_scan_finds_a_nodes_hash_bytes_before_a_strict_erasure_and_none_after(pg_url, pg_server):
    from agentcontext import AgentMemory, ContextGraph, VectorStore
    from agentcontext.erasure import erase_workspace_entity
    from agentcontext.workspace import Workspace

    from .bytescan import folder_files, new_secret

    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node("customer-9", "customer", content=f"Jane, card {secret}")
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    first = memory.store(f"Jane asked about card {secret}", metadata={"entities": ["customer-9"]})
    memory.update(first, content=f"Jane asked twice about card {secret}")  # a version row holds hashes too
    memory.store("an unrelated note")
    node = ws.store.get_node(first)
    old = ws.store.node_versions(first)[0]
    needles = {bytes.fromhex(h) for h in (node.content_hash, node.embed_hash, old.content_hash, old.embed_hash)}
    base = pg_server.data / "base"
    ws.store._db.execute("CHECKPOINT")

    def found() -> set[bytes]:
        files = [f.read_bytes() for f in folder_files(base) if f.is_file()]
        return {n for n in needles if any(n in data for data in files)}

    assert found() == needles, "each hash's 32 bytes are in the heap before the erasure"
    receipt = erase_workspace_entity(ws, "customer-9", reason="GDPR", erase_mentions=True).to_dict()
    assert receipt["complete"] is True and receipt["physical"]["vacuum"] == "full"
    ws.store._db.execute("CHECKPOINT")
    assert found() == set()
    ws.close()
