"""SQLStore is composed of role parts (store/sql_part.py): each part reaches the store's connection and dialect under
the store's own names, looked up at each use, so a reconnection, a backend's override or a test's spy is seen."""
from __future__ import annotations

import inspect

import sqlean as sqlite3

from agentcontext.store import SQLiteStore
from agentcontext.store.sql_base import SQLStore
from agentcontext.store.sql_dialect import SQLDialect
from agentcontext.store.sql_part import Part

from .conformance.data import node


def _parts(store: SQLStore) -> list[Part]:
    return [value for value in vars(store).values() if isinstance(value, Part)]


def test_every_name_a_part_forwards_is_the_stores():
    forwarded = [name for name, _ in inspect.getmembers(Part) if not name.startswith("__") and name != "store"]
    assert forwarded
    declared = set(SQLDialect.__annotations__)  # the connection ``_db``: set by each backend
    assert [name for name in forwarded if not hasattr(SQLStore, name) and name not in declared] == []


def test_the_store_is_composed_of_its_role_parts(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    try:
        parts = _parts(store)
        assert {type(p).__name__ for p in parts} == {"Nodes", "Edges", "Vectors", "Records", "Erasure", "SQLiteText"}
        assert all(p.store is store for p in parts)
    finally:
        store.close()


def test_a_part_writes_through_the_connection_the_store_holds_now(tmp_path):
    """A reconnection (PostgresStore._guard) replaces ``_db``: the parts follow it."""
    store = SQLiteStore(tmp_path / "s.db")
    try:
        store.put_nodes([node(1)])
        old = store._db
        store._db = sqlite3.connect(str(store.path), isolation_level=None, check_same_thread=False)
        old.close()
        store.put_nodes([node(2)])
        store.put_record("k", "a", {"v": 1})
        assert sorted(store.node_ids()) == [node(1).id, node(2).id]
        assert store.get_record("k", "a") == {"v": 1}
    finally:
        store.close()


def test_a_spy_on_the_store_sees_a_parts_statements(tmp_path, monkeypatch):
    store = SQLiteStore(tmp_path / "s.db")
    seen: list[str] = []
    read = store._read

    def spy(sql, params=()):
        seen.append(sql)
        return read(sql, params)

    try:
        monkeypatch.setattr(store, "_read", spy)
        store.get_record("k", "missing")
        store.node_versions("nope")
        assert any("FROM records" in s for s in seen) and any("WHERE id = ? ORDER BY version" in s for s in seen)
    finally:
        store.close()


def test_a_method_built_on_another_public_method_calls_the_stores(tmp_path, monkeypatch):
    """``tombstone`` reads through ``tombstones`` and ``put_record`` writes through ``put_records``: a backend that
    overrides those (ReplicatedPostgresStore reads tombstones on the primary) must see the call."""
    store = SQLiteStore(tmp_path / "s.db")
    calls: list[str] = []
    tombstones, put_records = store.tombstones, store.put_records
    try:
        monkeypatch.setattr(store, "tombstones", lambda *a, **k: calls.append("tombstones") or tombstones(*a, **k))
        monkeypatch.setattr(store, "put_records", lambda *a, **k: calls.append("put_records") or put_records(*a, **k))
        store.tombstone("gone")
        store.put_record("k", "a", {"v": 1})
        assert calls == ["tombstones", "put_records"]
    finally:
        store.close()


def test_sqlite_seeks_rows_read_before_by_their_ids_not_by_their_namespace(tmp_path):
    """Statements that follow a read by id (retract, purge, edge updates) name the tenant too on PostgreSQL (Citus);
    on SQLite naming ``namespace = ?`` beside ``id IN (10 ids)`` made the planner walk the namespace's index (a
    retraction of 10 ids in a 20,000-node store took 8.6 ms instead of 0.9)."""
    store = SQLiteStore(str(tmp_path / "s.db"))
    store.put_nodes([node(i, ns="ns") for i in range(200)])
    live, params = store._tenant_rows([f"n{i}" for i in range(10)], ["ns"] * 10)
    plan = " ".join(row[3] for row in store._db.execute(f"EXPLAIN QUERY PLAN SELECT * FROM nodes WHERE {live}", params))
    assert "(id=?)" in plan, plan
    store.close()
