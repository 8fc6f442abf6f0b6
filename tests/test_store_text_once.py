"""SQLite migration 5 (the text held once): the contentless text index answers exactly as the index that kept its own
copy did, through every write that changes what is indexed; embed_text equal to the content is not stored twice but
reads back the same; and a memory's text is in the file fewer times."""
from __future__ import annotations

import numpy as np

from agentcontext.model import Node
from agentcontext.store import SQLiteStore
from agentcontext.store.migrations import Migrations
from agentcontext.store.migrations.sqlite import MIGRATIONS

from .bytescan import new_secret


class StepFour(SQLiteStore):
    """The schema and the text-index writes as they were before migration 5 (the index kept its own copy)."""

    MIGRATIONS = Migrations("sqlite", list(MIGRATIONS)[:4])

    def _unindex(self, rids, purge):
        for rid in rids:
            self._db.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
            if purge:
                self._db.execute("DELETE FROM node_tags WHERE rid = ?", (rid,))


def _node(i: int, text: str, tags=(), title="") -> Node:
    return Node(id=f"n{i}", kind="memory", namespace="memory:default", key=f"k{i:03d}", title=title, content=text,
                tags=list(tags), embed_text=text)


QUERIES = ["kettle", "boiling kettle water", "Zoë café", "naïve", "quote", "conversation", "renamed", "gone",
           "revived text", "filler"]


def _play(store) -> None:
    """Writes that change what the index holds: inserts, rewrites (text and tags), retract, revive, purge."""
    store.put_nodes([_node(i, f"filler words number {i} about the kettle", tags=[f"conversation:c{i % 3}"])
                     for i in range(40)])
    store.put_nodes([_node(50, "Zoë boils water in the café kettle", tags=["user:zoë", 'type:"quote"'], title="Zoë"),
                     _node(51, "a naïve note that gets renamed", tags=["conversation:c9"]),
                     _node(52, "a note that is gone soon"), _node(53, "a note retracted then revived")])
    store.put_nodes([_node(51, "the renamed note", tags=["conversation:c10", "user:ann"])])  # text and tags change
    store.put_nodes([_node(5, "filler words number 5 about the kettle", tags=["conversation:c2"])])  # unchanged
    store.retract_nodes(["n53", "n7"])
    store.put_nodes([_node(53, "revived text of the note")])  # a retracted node comes back
    store.purge_nodes(["n52", "n7", "n8"])  # a live one, a retracted one, another live one
    store.retract_nodes(["n51"])
    store.purge_nodes(["n51"])


def test_the_contentless_index_answers_as_the_old_one_did(tmp_path):
    old, new = StepFour(tmp_path / "old.db"), SQLiteStore(tmp_path / "new.db")
    for store in (old, new):
        _play(store)
    for q in QUERIES:
        assert new.text_search(q, limit=100) == old.text_search(q, limit=100), q
    for phrase in ["the café kettle", "renamed note", "revived text"]:
        assert new.phrase_search(phrase) == old.phrase_search(phrase)
    assert new.text_search("revived")[0][0] == "n53" and not new.text_search("gone") and not new.text_search("naïve")
    assert new._read("SELECT count(*) FROM fts_docsize") == old._read("SELECT count(*) FROM fts_docsize")
    new._db.execute("INSERT INTO fts(fts) VALUES ('integrity-check')")  # raises on a damaged index
    assert not new._read("SELECT 1 FROM sqlite_master WHERE name IN ('fts_content', 'nodes_embed')")
    assert new.check_integrity() == "ok"
    old.close()
    new.close()


def test_an_embed_text_equal_to_the_content_is_held_once_and_reads_back(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    same = _node(1, "the same text")
    other = _node(2, "the text")
    other.embed_text = "Ann: the text"
    store.put_nodes([same, other, Node(id="n3", kind="doc", namespace="memory:default", content="not embedded")])
    raw = dict(store._read("SELECT id, embed_text FROM nodes"))
    assert raw == {"n1": None, "n2": "Ann: the text", "n3": None}
    assert sorted(t for _, t in store.missing_vectors("m", "memory:default")) == ["Ann: the text", "the same text"]
    rows, _ = store.export_rows("nodes")
    assert {r["id"]: r["embed_text"] for r in rows} == {"n1": "the same text", "n2": "Ann: the text", "n3": None}
    copy = SQLiteStore(tmp_path / "copy.db")
    copy.import_rows("nodes", [rows])
    assert dict(copy._read("SELECT id, embed_text FROM nodes")) == raw
    assert copy.export_rows("nodes")[0] == rows and copy.text_search("same")[0][0] == "n1"
    store.put_vectors({store.get_node("n1").embed_hash: np.ones(3, dtype=np.float32)}, "m")
    assert [t for _, t in store.missing_vectors("m", "memory:default")] == ["Ann: the text"]
    store.close()
    copy.close()


def test_a_memory_text_is_in_the_file_fewer_times(tmp_path):
    counts = {}
    for name, cls in (("old", StepFour), ("new", SQLiteStore)):
        secret = new_secret()
        db = tmp_path / f"{name}.db"
        store = cls(db)
        store.put_nodes([_node(1, f"the code is {secret} today")])
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts[name] = db.read_bytes().count(secret.encode())
        store.close()
    # StepFour writes nodes as today (embed_text equal to the content already NULL: the test above), so what differs is
    # the text index's own copy: nodes.content, node_versions.content, fts_content and the index's term before; now
    # the copy is gone
    assert counts == {"old": 4, "new": 3}, counts
