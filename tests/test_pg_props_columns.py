"""The props a ranking reads held as columns of ``nodes`` on PostgreSQL (migration 16, store/pg_props.py, issue 23
s2/s3): ``conversation_id``, ``created_at``, ``pair_hash`` (bytes), ``prev`` and ``user_id`` leave the props text when
their value is a string, and every read gives them back, so the API is unchanged: an upgrade from the step before keeps
every node's fields through every read path (get_nodes, versions, export, filters, the ranking's linked read), every
write path lands them in the columns (rows, the staged update, batch_store's bulk path, an import, a tenant moved
between shards), a crash mid-upgrade leaves the step before whole, filters on a moved key still match, and a strict
erasure leaves no byte of a moved value in the heap."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import open_store
from agentcontext.store.migrations import Migrations
from agentcontext.store.pg_props import MOVED

from .test_pg_node_hash_bytes import DIM, dump, fill, unit
from .upgrade_crash import kill_mid_step

pytestmark = pytest.mark.postgres
FIELDS = ("prev", "pair_hash", "created_at", "conversation_id", "user_id")  # memory/server_search.py FIELDS
DIGEST = "ab" * 32


def mine() -> int:
    """This step's number (the lead renumbers steps at a merge)."""
    from agentcontext.store.postgres import PostgresStore

    return next(m.version for m in PostgresStore.MIGRATIONS if m.apply.__name__ == "props_columns")


def before_store(url):
    """A store pinned to the step before this one (15 when it was written)."""
    from agentcontext.store.postgres import PostgresStore

    class Before(PostgresStore):
        MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:mine() - 1])

    return Before(url)


def turns(i: int) -> dict:
    """A conversation turn's props as AgentMemory writes them, and the odd ones a store must give back as they were."""
    props = {"conversation_id": f"c{i % 3}", "created_at": f"2024-03-0{i % 9 + 1}T10:00:0{i % 10}+00:00",
             "updated_at": f"2024-03-0{i % 9 + 1}T10:00:0{i % 10}+00:00", "metadata": {"n": i, "speaker": "Ann"},
             "user_id": None}
    if i:
        props["prev"], props["pair_hash"] = f"m{i - 1}", content_hash(f"pair {i}")
    extra = {
        3: {"user_id": "u\u00e9 \"q\"\t\\", "conversation_id": "caf\u00e9"},  # escapes, non-ASCII
        4: {"pair_hash": "legacy-hash"},  # no digest: any text
        5: {"pair_hash": 5, "prev": None},  # not strings: kept in the text
        6: {"metadata": {"prev": "m5", "n": 6}},  # the same text nested (the SQL cut gives up: kept whole)
        7: {"updated_at": "2025-01-01T00:00:00+00:00"},  # rewritten later: no mark
        8: {"prev": ""},  # an empty string
    }.get(i, {})
    props.update(extra)
    if i == 9:  # nothing but moved props
        props = {"conversation_id": "c0", "created_at": "2024-03-01T10:00:00+00:00", "prev": "m8"}
    if i == 10:
        props = {"created_at": "2024", "updated_at": "2024"}  # only a stamp: the text left is "{ }"
    return props


def fill_turns(store, rng, n: int = 12) -> None:
    store.put_nodes([Node(id=f"m{i}", kind="memory", namespace="ns", title="Ann", content=f"said {i}",
                          props=turns(i), embed_text=f"Ann: said {i}") for i in range(n)])
    store.put_nodes([Node(id="m2", kind="memory", namespace="ns", title="Ann", content="said 2 again",
                          props={**turns(2), "prev": "m0"}, embed_text="Ann: said 2 again")])  # a version row
    store.retract_nodes(["m11"])
    texts = [f"Ann: said {i}" for i in range(n)] + ["Ann: said 2 again"]
    store.put_vectors({content_hash(t): v for t, v in zip(texts, unit(rng, len(texts)))}, "m")


def turns_dump(store) -> dict:
    """What the ranking and the filters read of the turns."""
    q = np.ones(DIM, dtype=np.float32) / 4
    named, followers = store.nodes_linked(["m1", "m4", "m5", "m9"], "prev", "ns", "memory", FIELDS)
    keep, more = store.nodes_linked(["m3", "m6"], "prev", "ns", "memory", (*FIELDS, "metadata"))
    whole, rest = store.nodes_linked(["m2", "m7"], "prev", "ns", "memory")
    return {
        "linked": [{i: n.props for i, n in part.items()} for part in (named, keep, whole)],
        "followers": [[(f.id, f.props) for f in part] for part in (followers, more, rest)],
        "naming": [n.id for n in store.nodes_naming("prev", ["m0", "m5", ""], namespace="ns", kind="memory")],
        "by": {k: sorted(store.find_by_props([k], v, "ns")) for k, v in
               (("conversation_id", "c1"), ("conversation_id", "caf\u00e9"), ("prev", "m3"), ("pair_hash", DIGEST),
                ("pair_hash", "legacy-hash"), ("created_at", turns(2)["created_at"]), ("updated_at", "2024"))},
        "near": [[i for i, _ in store.nearest(q, "m", 50, namespace="ns", props=p)] for p in
                 ({"conversation_id": "c2"}, {"user_id": None}, {"prev": "m0", "conversation_id": "c2"},
                  {"metadata": {"n": 6}}, {"pair_hash": 5})],
        "briefs": store.node_briefs([f"m{i}" for i in range(12)]),
    }


def moved_columns(store) -> dict:
    return {r[0]: r[1:] for r in store._read(f"SELECT id, props, {', '.join(MOVED)} FROM nodes ORDER BY id")}


def test_an_upgrade_from_the_step_before_keeps_every_node_field(pg_url):
    rng = np.random.default_rng(21)
    old = before_store(pg_url)
    assert old.schema_version() == mine() - 1 and not old._pc
    fill(old, rng)
    fill_turns(old, rng)
    old.fold()
    before, ranked = dump(old), turns_dump(old)
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= mine() and store._pc
    assert dump(store) == before
    assert turns_dump(store) == ranked
    held = moved_columns(store)
    assert held["m1"][0] == '{ "metadata": {"n": 1, "speaker": "Ann"}, "user_id": null}\t'  # ~250 bytes gone
    assert held["m1"][1:] == ("c1", turns(1)["created_at"], bytes.fromhex(content_hash("pair 1")), "m0", None)
    assert held["m3"][5] == turns(3)["user_id"] and held["m4"][3] == b"\x00legacy-hash"
    assert '"pair_hash": 5' in held["m5"][0] and held["m5"][3] is None  # not a string: kept in the text
    # the cut would not give the same props back (the same text nested; a non-ASCII value, which JSON writes
    # otherwise than json.dumps): the text kept whole, the columns filled all the same
    assert held["m6"][0].count('"prev": "m5"') == 2 and held["m6"][4] == "m5"
    assert held["m3"][0].startswith('{ "conversation_id": "caf\\u00e9"') and held["m3"][1] == "caf\u00e9"
    assert held["m9"][0] == "{}\t" and held["m10"][0] == "{ }\t"
    assert all('"pair_hash"' in t for (t,) in store._read("SELECT props FROM node_versions WHERE id LIKE 'm%%'"))
    store.close()


def test_a_crash_mid_upgrade_leaves_the_step_before(pg_url, tmp_path):
    rng = np.random.default_rng(22)
    old = before_store(pg_url)
    fill_turns(old, rng)
    before, texts = turns_dump(old), old._read("SELECT id, props FROM nodes ORDER BY id")
    old.close()
    kill_mid_step(pg_url, "props_columns", tmp_path)
    held = before_store(pg_url)
    assert held.schema_version() == mine() - 1 and not held._pc
    assert held._read("SELECT id, props FROM nodes ORDER BY id") == texts
    assert held._read("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = "
                      "'nodes_prev'")[0][0].endswith("WHERE (((props)::jsonb ->> 'prev'::text) IS NOT NULL)")
    assert turns_dump(held) == before
    held.close()
    store = open_store(pg_url)  # the next open upgrades it whole
    assert store._pc and turns_dump(store) == before
    store.close()


def test_every_write_path_lands_the_columns_and_reads_back_the_same_props(pg_url, pg_server):
    from agentcontext import AgentMemory
    from agentcontext.migrate import migrate
    from agentcontext.store import transfer
    from agentcontext.workspace import Workspace

    rng = np.random.default_rng(23)
    store = open_store(pg_url)
    assert store._pc
    fill_turns(store, rng)  # rows (COPY), the staged update, a retraction
    for i in range(11):
        assert store.get_node(f"m{i}", include_retracted=True).props == (turns(i) if i != 2 else
                                                                       {**turns(2), "prev": "m0"})
    assert store.node_versions("m2")[0].props == turns(2)
    held = moved_columns(store)
    assert held["m1"][1:] == ("c1", turns(1)["created_at"], bytes.fromhex(content_hash("pair 1")), "m0", None)
    assert held["m6"][4] == "m5" and '"prev"' in held["m6"][0]  # Python cuts the top-level key only
    ws = Workspace(store)
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    vectors = unit(rng, 6, 384)
    ids = memory.batch_store([{"id": f"b{i}", "content": f"fact {i}", "conversation_id": "c9", "vector": vectors[i]}
                              for i in range(6)])  # the bulk path
    made = {i: store.get_node(i).props for i in ids}
    assert all(p["conversation_id"] == "c9" and p["created_at"] for p in made.values())
    assert store._read("SELECT count(*) FROM nodes WHERE conversation_id = 'c9' AND props NOT LIKE "
                       "'%%conversation_id%%'") == [(6,)]
    exported_memories = memory.export(conversation_id="c9")  # the memory API's read
    assert all(i in str(exported_memories) for i in ids)
    before, ranked = dump(store), turns_dump(store)
    exported = [r for page in transfer.pages(store, "nodes") for r in page]
    assert {r["id"]: r["props"] for r in exported}["m1"] == '{"conversation_id": "c1", ' + \
        f'"created_at": "{turns(1)["created_at"]}", "metadata": {{"n": 1, "speaker": "Ann"}}, "pair_hash": ' + \
        f'"{content_hash("pair 1")}", "prev": "m0", "updated_at": "{turns(1)["created_at"]}", "user_id": null}}'
    copy_url = pg_server.url()  # export and import: a whole-store copy (import_rows, the bulk path)
    assert migrate(pg_url, copy_url)["digests_equal"]
    target = open_store(copy_url)
    assert dump(target) == before and turns_dump(target) == ranked
    assert moved_columns(target) == moved_columns(store)
    target.close()
    ws.close()


def test_a_tenant_moved_between_shards_keeps_its_props(pg_server):
    from agentcontext.store.pg_shard_move import move_tenant
    from agentcontext.store.pg_shards import ShardedStore

    import psycopg

    schema = pg_server.url().split("=")[-1]
    with psycopg.connect(pg_server.url(None), autocommit=True) as db:
        db.execute(f"CREATE DATABASE shard_{schema}")
    a = pg_server.url(schema)
    b = a.replace("/postgres?", f"/shard_{schema}?")
    store = ShardedStore(f"a={a},b={b}")
    fill_turns(store, np.random.default_rng(24))
    before = {i: store.get_node(i, include_retracted=True).to_dict() for i in store.node_ids(include_retracted=True)}
    history = store.node_versions("m2")
    target = "a" if store.shard_for("ns") == "b" else "b"
    move_tenant(store, "ns", target)
    assert {i: store.get_node(i, include_retracted=True).to_dict()
            for i in store.node_ids(include_retracted=True)} == before
    assert store.node_versions("m2") == history
    shard = open_store(a if target == "a" else b)
    assert moved_columns(shard)["m1"][4] == "m0"
    shard.close()
    store.close()


def test_the_byte_scan_finds_no_byte_of_a_moved_pair_hash_after_a_strict_erasure(pg_url, pg_server):
    from agentcontext import AgentMemory, ContextGraph, VectorStore
    from agentcontext.erasure import erase_workspace_entity
    from agentcontext.workspace import Workspace

    from .bytescan import folder_files, new_secret

    ws = Workspace.open(url=pg_url)
    secret = new_secret()
    graph = ContextGraph(workspace=ws)
    graph.add_node("customer-9", "customer", content=f"Jane, card {secret}")
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    memory.store("Jane called about her card", conversation_id="cv1")
    second = memory.store(f"Jane asked about card {secret}", metadata={"entities": ["customer-9"]},
                          conversation_id="cv1")  # its pair (the turn before and it) has a vector: pair_hash
    memory.store("an unrelated note")
    pair = ws.store.get_node(second).props["pair_hash"]
    needle = bytes.fromhex(pair)
    assert ws.store._read("SELECT id FROM nodes WHERE pair_hash = %s", [needle]) == [(second,)]
    assert pair not in ws.store._read("SELECT props FROM nodes WHERE id = %s", [second])[0][0]
    base = pg_server.data / "base"
    ws.store._db.execute("CHECKPOINT")

    def found() -> bool:
        return any(needle in f.read_bytes() for f in folder_files(base) if f.is_file())

    def where() -> list[str]:
        nodes = [int(f.name) for f in folder_files(base) if f.is_file() and f.name.isdigit()
                 and needle in f.read_bytes()]
        return ws.store._read("SELECT relname FROM pg_class WHERE relfilenode = ANY(%s)", [nodes])

    assert found(), "the pair hash's bytes are in the heap before the erasure"
    receipt = erase_workspace_entity(ws, "customer-9", reason="GDPR", erase_mentions=True).to_dict()
    assert receipt["complete"] is True and receipt["physical"]["vacuum"] == "full"
    ws.store._db.execute("CHECKPOINT")
    assert not found(), where()
    ws.close()


def test_the_mcp_read_path_gives_the_same_memories_after_the_upgrade(pg_url):
    from agentcontext.mcp_server import build_server
    from agentcontext.memory import AgentMemory
    from agentcontext.workspace import Workspace

    from .test_mcp import call, run

    def reads(ws, ids):
        async def script(client):
            return [await call(client, "get_memory", {"memory_id": ids[0]}),
                    await call(client, "conversation_history", {"conversation_id": "ops", "max_items": 10}),
                    await call(client, "memory_versions", {"memory_id": ids[1]}),
                    await call(client, "retrieve_memories", {"query": "where is the staging database",
                                                             "max_results": 3, "min_score": 0.0})]
        return run(build_server(ws), script)

    ws = Workspace(before_store(pg_url))
    assert not ws.store._pc
    mem = AgentMemory(workspace=ws, namespace="default", max_memory_size=None, retention_policy="unlimited")
    ids = [mem.store("The staging database lives on host db-stage-2.", conversation_id="ops", user_id="kim",
                     metadata={"type": "fact", "prev": "not a link"}),
           mem.store("Kim rotates the staging credentials every Friday.", conversation_id="ops", user_id="kim"),
           mem.store("Lunch is at noon.", user_id="lee")]
    mem.update(ids[1], content="Kim rotates the staging credentials every Monday.")
    before = reads(ws, ids)
    ws.close()
    ws = Workspace.open(url=pg_url)  # the upgrade
    assert ws.store._pc and reads(ws, ids) == before
    assert ws.store._read("SELECT count(*) FROM nodes WHERE conversation_id = 'ops' AND user_id = 'kim'") == [(2,)]
    ws.close()


@pytest.mark.parametrize("i", range(12))
def test_an_imports_props_split_in_one_pass_equals_the_two_steps(i):
    """``held_split_text`` (the import's one parse: pg_bulk.hashes_held) makes what the two steps made, for the turns'
    props and odd texts (not what ``json.dumps`` makes, marked, cut, not an object, empty)."""
    from agentcontext.model import json_text
    from agentcontext.store import pg_props

    text = json_text(sort_keys=True)(turns(i))
    odd = [text, text.replace(": ", ":"), "{ " + text[1:], text[:-1] + "\t}", "[1, 2]", '"x"', "", None, "{}",
           '{"a": 1}', text.replace('"created_at"', '"created_at" ')]
    for t in odd:
        assert pg_props.held_split_text(t) == pg_props.split_text(pg_props.held_text(t)), t
