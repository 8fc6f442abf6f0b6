"""SQLite migration 6 (a node's current version held once): node_versions keeps only superseded versions and the
live row is the current one, yet every version read answers exactly as the schema-5 store that wrote each version
twice: node_versions, node_version, the graph as it stood (as_of), info counts, the integrity check, export pages
and imports, purge and purge_history totals (the vectors they collect included); and the text is in the file once
fewer."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Node
from agentcontext.store import SQLiteStore
from agentcontext.store.migrations import Migrations
from agentcontext.store.migrations.sqlite import MIGRATIONS
from agentcontext.store.transfer import pages

from .bytescan import new_secret


class StepFive(SQLiteStore):
    """The schema and version writes as they were before migration 6 (every version a row of node_versions)."""

    MIGRATIONS = Migrations("sqlite", list(MIGRATIONS)[:5])
    VERSIONS, CURRENT_IN_VERSIONS, COPY_ARMS = "node_versions", True, {}


def _node(i: int, text: str, tags=(), ns="memory:default") -> Node:
    return Node(id=f"n{i}", kind="memory", namespace=ns, key=f"k{i:03d}", content=text, tags=list(tags),
                embed_text=text)


def _play(store) -> list[str]:
    """Versions of every sort; returns the moments between the writes (for as_of reads)."""
    moments = []
    store.put_nodes([_node(i, f"note {i} about kettles", tags=[f"conversation:c{i % 3}"]) for i in range(12)])
    store.put_vectors({store.get_node(f"n{i}").embed_hash: np.full(4, i, dtype=np.float32) for i in range(12)}, "m")
    moments.append(store._read("SELECT max(recorded_at) FROM nodes")[0][0])
    store.put_nodes([_node(1, "note 1 rewritten"), _node(2, "note 2 rewritten", tags=["user:ann"])])
    store.put_nodes([_node(3, "note 3 about kettles", tags=["conversation:c0"])])  # unchanged: no new version
    store.put_nodes([_node(4, "note 0 about kettles")])  # the same text as n0: shares its vector
    moments.append(store._read("SELECT max(recorded_at) FROM nodes")[0][0])
    store.retract_nodes(["n5", "n6"])
    store.put_nodes([_node(5, "note 5 revived")])  # a retracted node comes back
    store.put_nodes([_node(1, "note 1 rewritten twice")])
    moments.append(store._read("SELECT max(recorded_at) FROM nodes")[0][0])
    return moments


def _versions(store) -> dict:
    ids = store.node_ids(include_retracted=True)
    return {i: [v.to_dict() for v in store.node_versions(i)] for i in ids}


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()} for r in rows]


def test_every_version_reads_as_the_schema_5_store_did(tmp_path):
    old, new = StepFive(tmp_path / "old.db"), SQLiteStore(tmp_path / "new.db")
    held = {}
    for name, store in (("old", old), ("new", new)):
        moments = _play(store)
        held[name] = {
            "versions": _versions(store),
            "version": [store.node_version(f"n{i}", v) for i in range(8) for v in range(1, 5)],
            "as_of": [{k: n.to_dict() for k, n in store.get_nodes([f"n{i}" for i in range(12)], as_of=t).items()}
                      for t in moments],
            "find_as_of": [[n.id for n in store.find_nodes(namespace="memory:default", as_of=t)] for t in moments],
            "tags_as_of": [[n.id for n in store.find_nodes(tags=["conversation:c0"], as_of=t)] for t in moments],
            "index_as_of": [store.node_index("memory:default", as_of=t) for t in moments],
            "contents_as_of": [store.get_contents(["n1", "n2", "n5"], as_of=t) for t in moments],
            "counts": store.info()["counts"],
            "export": _strip([r for page in pages(store, "node_versions", limit=5) for r in page]),
        }
        assert store.check_integrity() == "ok"
    for key in held["old"]:
        assert _normal(held["new"][key]) == _normal(held["old"][key]), key
    # what the file holds: no version row for a current version
    assert new._read("SELECT count(*) FROM node_versions")[0][0] == held["new"]["counts"]["node_versions"] - 12
    assert old._read("SELECT count(*) FROM node_versions")[0][0] == held["old"]["counts"]["node_versions"]
    # purges count and collect the same
    for store in (old, new):
        assert store.purge_history(["n1", "n0"]) == {"versions": 2, "vectors": 1}  # n1's two old texts had one
    assert _normal(_versions(new)) == _normal(_versions(old))
    for ids in (["n0"], ["n4"], ["n2", "n6"]):  # n0 and n4 share a vector: it goes with the second
        assert new.purge_nodes(ids) == old.purge_nodes(ids), ids
        assert new._read("SELECT count(*) FROM vectors")[0][0] == old._read("SELECT count(*) FROM vectors")[0][0]
    assert _normal(_versions(new)) == _normal(_versions(old))
    assert new.info()["counts"] == old.info()["counts"]
    assert new.check_integrity() == old.check_integrity() == "ok"
    old.close()
    new.close()


def _normal(value):
    """Versions compare without recorded_at (each store wrote at its own moments)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k not in ("recorded_at", "retracted_at", "content_hash")}
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, Node):
        return _normal(value.to_dict())
    if isinstance(value, str) and value.startswith("20"):
        return "<time>"
    return value


def test_copies_between_the_two_schemas_keep_every_version(tmp_path):
    old, new = StepFive(tmp_path / "old.db"), SQLiteStore(tmp_path / "new.db")
    _play(old)
    for table in ("nodes", "node_versions", "vectors"):
        new.import_rows(table, pages(old, table))
    assert _normal(_versions(new)) == _normal(_versions(old))
    assert new.info()["counts"]["node_versions"] == old.info()["counts"]["node_versions"]
    assert new.check_integrity() == "ok"
    back = StepFive(tmp_path / "back.db")
    for table in ("node_versions", "nodes"):  # versions first this time: the live ones give way to the nodes
        back.import_rows(table, pages(new, table))
    again = SQLiteStore(tmp_path / "again.db")
    for table in ("node_versions", "nodes"):
        again.import_rows(table, pages(new, table))
    assert _versions(back) == _versions(again) == _versions(old)
    assert again.check_integrity() == "ok"
    for store in (old, new, back, again):
        store.close()


def test_a_current_version_is_in_the_file_once_fewer(tmp_path):
    counts = {}
    secret = new_secret()
    for name, cls in (("old", StepFive), ("new", SQLiteStore)):
        db = tmp_path / f"{name}.db"
        store = cls(db)
        store.put_nodes([_node(1, f"the code is {secret} today")])
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts[name] = db.read_bytes().count(secret.encode())
        counts[name + "_rows"] = store._read("SELECT count(*) FROM node_versions WHERE content LIKE ?",
                                             (f"%{secret}%",))[0][0]
        store.close()
    # the text index's term may or may not hold the word whole (prefix compression, stemming): at least one fewer
    assert counts["old_rows"] == 1 and counts["new_rows"] == 0 and counts["old"] > counts["new"] >= 1, counts


def test_the_integrity_check_finds_a_current_version_written_twice(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    store.put_nodes([_node(1, "one"), _node(2, "two")])
    store._db.execute("INSERT INTO node_versions SELECT id, kind, namespace, key, title, summary, content, props, "
                      "tags, valid_from, valid_until, recorded_at, retracted_at, version, content_hash, created_by, "
                      "embed_hash, tokens, NULL FROM nodes WHERE id = 'n1'")
    assert store.check_integrity() == "1 version rows are not older than their node's live row"
    store.close()


def test_version_reads_use_the_indexes(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    store.put_nodes([_node(i, f"text {i}") for i in range(20)])
    plans = {
        "versions of one node": ("SELECT * FROM versions WHERE id = ? ORDER BY version", ("n1",)),
        "vector still used": (f"SELECT 1 FROM vectors WHERE {store._vectors_unused()}", ()),
    }
    for what, (sql, params) in plans.items():
        plan = " ".join(r[3] for r in store._read(f"EXPLAIN QUERY PLAN {sql}", params))
        assert "SCAN node_versions" not in plan and "SCAN nodes" not in plan.replace("SCAN nodes USING", ""), (
            what, plan)
    store.close()
