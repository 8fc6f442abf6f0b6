"""The SQLite store's bytes after a purge: no term left in the text index, no old page left in the WAL."""
from __future__ import annotations

from agentcontext.model import Node
from agentcontext.store import SQLiteStore
from agentcontext.store.migrations import Migrations
from agentcontext.store.migrations.sqlite import MIGRATIONS

from .bytescan import hits, new_secret, store_files


def _node(i: int, text: str) -> Node:
    return Node(id=f"n{i}", kind="memory", namespace="memory:default", key=f"k{i}", content=text)


def _fill(store, secret: str) -> None:
    store.put_nodes([_node(i, f"filler words number {i} about nothing") for i in range(50)])
    store.put_nodes([_node(99, f"the card is {secret} keep it safe")])
    store.put_nodes([_node(99, f"the card is now {secret}x and {secret}")])  # a second version
    store.put_nodes([_node(i, f"more filler {i}") for i in range(100, 130)])


def test_a_purge_then_scrub_leaves_no_byte_of_the_text(tmp_path):
    secret = new_secret()
    db = tmp_path / "store.db"
    store = SQLiteStore(db)
    _fill(store, secret)
    store.purge_nodes(["n99"])
    assert hits(store_files(db), secret), "before scrub() the WAL still holds the old pages"
    out = store.scrub()
    assert out["status"] == "clean" and out["checkpoint"]["wal_bytes"] == 0 and out["fts_secure_delete"]
    assert hits(store_files(db), secret) == {}
    assert store.text_search("filler")  # the index still works
    store.close()
    assert hits(store_files(db), secret) == {}


class StepTwo(SQLiteStore):
    """A store as the schema stood before FTS5 secure-delete (migration 3)."""

    MIGRATIONS = Migrations("sqlite", list(MIGRATIONS)[:2])

    def _unindex(self, rids, purge):  # as the code of that schema did it (the index held its own copy then)
        for rid in rids:
            self._db.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
            if purge:
                self._db.execute("DELETE FROM node_tags WHERE rid = ?", (rid,))


def test_migration_three_removes_the_terms_earlier_deletes_left_in_the_index(tmp_path):
    secret = new_secret()
    db = tmp_path / "store.db"
    old = StepTwo(db)
    _fill(old, secret)
    old.retract_nodes(["n99"])  # leaves the text index, without secure-delete: delete markers only
    old._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    left = hits(store_files(db), secret)
    assert left and set(left) == {str(db)}
    old.close()
    store = SQLiteStore(db)  # upgrades: secure-delete on, the index merged once
    assert store.schema_version() == MIGRATIONS.latest
    store.purge_nodes(["n99"])  # the rows; the index no longer holds the retracted node's terms
    store.scrub()
    assert hits(store_files(db), secret) == {}
    store.put_nodes([_node(200, f"another {secret}y word")])
    store.purge_nodes(["n200"])
    store.scrub()
    assert hits(store_files(db), secret + "y") == {}
    store.close()


def test_a_retracted_or_expired_node_purged_leaves_no_byte(tmp_path):
    secret = new_secret()
    db = tmp_path / "store.db"
    store = SQLiteStore(db)
    _fill(store, secret)
    store.put_nodes([Node(id="n98", kind="event", namespace="graph:default", key="k98", content=f"visit {secret}",
                          valid_until="2020-01-01T00:00:00.000000+00:00")])  # expired in the world
    store.retract_nodes(["n99"])  # withdrawn: its row and versions still hold the text
    assert store.nodes_holding([secret]) == ["n99", "n98"]
    store.purge_nodes(["n99", "n98"])
    store.scrub()
    assert hits(store_files(db), secret) == {} and store.nodes_holding([secret]) == []
    store.close()
