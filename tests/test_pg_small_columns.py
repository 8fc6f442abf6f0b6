"""Small columns on PostgreSQL (migration 18, issue 23 s2): the change log's operation held as a one-character code
(``changes.op``: the names the store logs, ``pg_changes.OPS``, as the control character numbering them; any other
name as it is, behind an escape where it would read as a code) and a node's recorded time as a timestamp
(``nodes.recorded_at`` a ``timestamptz``, ``nodes.recorded_text`` the text only where a timestamp would not give it
back: store/pg_recorded.py), so the API is unchanged: an upgrade from the step before keeps every change's name and
every node's time (``changes_since``, reads, listings in recorded order, ``as_of``, versions, export), a crash
mid-upgrade leaves the step before whole, every write path lands them in their new forms, and ``migrate``'s digests
still hold between a store at 18 and one copied from it."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.model import Node
from agentcontext.store import open_store
from agentcontext.store.pg_changes import CODES, ESCAPE, OP_HOLD_SQL, OP_READ, OPS, canonical, hold_op

from .test_pg_change_times import GOOD, ODD, log, odd_rows, write_everything
from .copy_round_trip import copies_keep
from .upgrade_crash import crash_keeps_the_step_before, step_number, store_before

pytestmark = pytest.mark.postgres
# names a copy may bring (another store's log, an old export): each must come back byte for byte
ODD_OPS = ["", "node.put ", "NODE.PUT", "node.put\n", "x" * 300, "nöde.put", "node", "\x01", "\x01x", "\x7f",
           "\x7fnode.put", "\x1f", " ", "\tnode.put", "~", "\x7f\x01"]


def mine() -> int:
    """This step's number (18 when it was written)."""
    return step_number("small_columns")


def before_store(url):
    """A store pinned to the step before this one (17 when it was written)."""
    return store_before(url, "small_columns")


def odd_ops(store) -> None:
    """Change rows whose operation is no name the store logs, and one row of each name it does."""
    names = [*ODD_OPS, *OPS]
    with store.transaction():
        store._insert_changes([(store._now(), "x", op, f"o{i}", "", "{}") for i, op in enumerate(names)])


def held(store) -> dict:
    """How each row holds its operation (the column's text)."""
    return dict(store._read("SELECT target, op FROM changes"))


def test_the_client_and_the_migration_agree_on_each_names_code(pg_url):
    store = open_store(pg_url)
    for name in [*ODD_OPS, *OPS]:
        code, back = store._read(f"SELECT {OP_HOLD_SQL.format(col='%(n)s::text')}, (SELECT {OP_READ} FROM (SELECT "
                                 f"{OP_HOLD_SQL.format(col='%(n)s::text')} AS op) c)", {"n": name})[0]
        assert code == hold_op(name) and back == name, name
        assert (code == CODES.get(name)) if name in OPS else (code in (name, ESCAPE + name)), name
    assert OPS[0] == "node.put" and len(set(OPS)) == len(OPS)  # the codes are the schema's: never reordered
    store.close()


def test_an_upgrade_from_the_step_before_keeps_every_change(pg_url):
    old = before_store(pg_url)
    assert old.schema_version() == mine() - 1 and old._ct and not old._co
    write_everything(old, np.random.default_rng(41))
    odd_rows(old)
    odd_ops(old)
    before = log(old)
    assert {c.op for c in before["since"]} >= {*ODD_OPS, *OPS, "odd", "good"}
    old.close()

    store = open_store(pg_url)
    assert store.schema_version() >= mine() and store._co
    assert log(store) == before
    kept = held(store)
    assert all(kept[f"o{i}"] == hold_op(op) for i, op in enumerate(ODD_OPS))
    assert all(kept[f"o{len(ODD_OPS) + i}"] == chr(i + 1) for i in range(len(OPS)))
    assert kept["n0"] == CODES["node.put"] == "\x01" and kept["n3"] == CODES["node.purge"]
    store.put_nodes([Node(id="after", kind="memory", namespace="ns", content="written at 18")])
    last = store.changes_since(0)[-1]
    assert (last.target, last.op) == ("after", "node.put") and held(store)["after"] == "\x01"
    store.close()


def test_a_crash_mid_upgrade_leaves_the_step_before(pg_url, tmp_path):
    def fill(store) -> None:
        write_everything(store, np.random.default_rng(42))
        odd_ops(store)

    def every_name_as_written(store) -> None:
        raw = held(store)  # none coded
        assert all(raw[f"o{i}"] == op for i, op in enumerate([*ODD_OPS, *OPS]))

    crash_keeps_the_step_before(pg_url, tmp_path, "small_columns", fill, log, ("nodes", "recorded_at"), "_co",
                                every_name_as_written)


def test_every_write_path_lands_the_names_in_the_new_columns(pg_url, pg_server, tmp_path):
    from agentcontext import AgentMemory
    from agentcontext.workspace import Workspace

    from .test_pg_node_hash_bytes import unit

    rng = np.random.default_rng(43)
    store = open_store(pg_url)
    assert store._co
    write_everything(store, rng)  # rows (COPY), the row-at-a-time log, records, vectors, a purge
    ws = Workspace(store)
    AgentMemory(workspace=ws, max_memory_size=None).batch_store(
        [{"id": f"b{i}", "content": f"fact {i}", "vector": unit(rng, 1, 384)[0]} for i in range(4)])
    assert {c.op for c in store.changes_since(0)} >= {"node.put", "node.retract", "record.put", "vectors.put"}
    assert store._read("SELECT count(*) FROM changes WHERE length(op) > 1") == [(0,)]  # every name a code
    odd_ops(store)
    # export and import (COPY into the new columns), then out to SQLite, where the name stays text
    copies_keep(pg_url, store, pg_server.url(), tmp_path / "copy.db", log, held)
    ws.close()


def odd_times(store) -> None:
    """Nodes written at times of every form (a copy from elsewhere may bring any text), some changed and retracted
    later, so versions, retractions and live rows each hold odd and canonical times."""
    for i, at in enumerate([*ODD, *GOOD]):
        store.put_nodes([Node(id=f"t{i}", kind="memory", namespace="ns", key=f"k{i % 3}", content=f"v1 {i}")], at=at)
    for i, at in enumerate([*GOOD, *ODD][:8]):
        store.put_nodes([Node(id=f"t{i}", kind="memory", namespace="ns", key=f"k{i % 3}", content=f"v2 {i}")], at=at)
    store.retract_nodes(["t1", "t12"], at="2025-01-01T00:00:00Z")
    store.retract_nodes(["t2", "t13"])


def nodes_read(store) -> dict:
    """A node's time as every read gives it: by id (live, as of several times, retracted), listings in recorded
    order (whole and light), versions, and the export's pages of nodes and their versions."""
    from agentcontext.store import transfer

    ids = [f"t{i}" for i in range(len(ODD) + len(GOOD))]
    return {"get": store.get_nodes(ids, include_retracted=True),
            "as_of": {t: store.get_nodes(ids, as_of=t) for t in [*GOOD, *ODD, "2024-12-31", "9", "0", "z"] if t},
            "listed as_of": {t: store.find_nodes(namespace="ns", as_of=t, order="recorded")
                             for t in GOOD[:2] + ODD[:2]},
            "recorded": store.find_nodes(namespace="ns", order="recorded"),
            "recorded_desc": store.find_nodes(namespace="ns", order="recorded_desc", with_content=False),
            "versions": {i: store.node_versions(i) for i in ids},
            "export": {t: [r for page in transfer.pages(store, t, 7) for r in page]
                       for t in ("nodes", "node_versions")}}


def test_an_upgrade_keeps_every_nodes_time(pg_url):
    old = before_store(pg_url)
    odd_times(old)
    before = nodes_read(old)
    assert len({n.recorded_at for n in before["get"].values()} & set(ODD)) >= 4 and before["recorded"]
    old.close()

    store = open_store(pg_url)
    assert store._rt
    assert nodes_read(store) == before
    store._db.execute("SET TimeZone = 'Asia/Kolkata'")  # a session's time zone plays no part (renders in UTC)
    assert nodes_read(store) == before
    kept = {r[0]: (r[1], r[2]) for r in store._read("SELECT id, recorded_at IS NOT NULL, recorded_text FROM nodes")}
    for node in before["get"].values():
        assert kept[node.id] == ((True, None) if canonical(node.recorded_at) else (False, node.recorded_at)), node
    assert store._read("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                       "'nodes'::regclass AND attname = 'recorded_at'") == [("timestamp with time zone",)]
    store.close()


def test_every_write_path_lands_the_time_in_the_new_columns(pg_url, pg_server, tmp_path):
    from agentcontext.migrate import migrate

    store = open_store(pg_url)
    assert store._rt
    odd_times(store)  # new rows (COPY), changed ones (staged), retractions (UPDATE)
    store.put_nodes([Node(id="now", kind="memory", namespace="ns", content="written now")])
    held = {r[0]: (r[1], r[2]) for r in store._read("SELECT id, recorded_at, recorded_text FROM nodes")}
    assert held["now"][0] is not None and held["now"][1] is None and held["t2"][1] is None
    assert held["t1"] == (None, "2025-01-01T00:00:00Z") and held["t8"] == (None, ODD[8])  # retracted, inserted
    assert held["t5"] == (None, ODD[0]) and held["t0"][0] is not None and held["t0"][1] is None  # changed (staged)
    before = nodes_read(store)
    copy_url = pg_server.url()  # export and import: a whole-store copy (import_rows, COPY into the two columns)
    assert migrate(pg_url, copy_url)["digests_equal"]
    target = open_store(copy_url)
    assert nodes_read(target) == before
    assert target._read("SELECT id, recorded_at, recorded_text FROM nodes ORDER BY id") == store._read(
        "SELECT id, recorded_at, recorded_text FROM nodes ORDER BY id")
    target.close()
    sqlite = tmp_path / "copy.db"  # and out to SQLite, where the time stays text: the same texts
    assert migrate(copy_url, str(sqlite))["digests_equal"]
    lite = open_store(str(sqlite))
    assert nodes_read(lite) == before
    lite.close()
    store.close()
