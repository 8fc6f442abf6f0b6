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
    VERSIONS, CURRENT_IN_VERSIONS, COPY_ARMS = "node_versions", True, {}  # before migration 6 too

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
    secret = new_secret()  # the same word in both (whether the stemmed term holds it whole depends on its letters)
    for name, cls in (("old", StepFour), ("new", SQLiteStore)):
        db = tmp_path / f"{name}.db"
        store = cls(db)
        store.put_nodes([_node(1, f"the code is {secret} today")])
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts[name] = db.read_bytes().count(secret.encode())
        store.close()
    # StepFour writes nodes as today (embed_text equal to the content already NULL: the test above), so what differs is
    # the text index's own copy: nodes.content, node_versions.content and fts_content before (and the index's term,
    # when stemming leaves the word whole); now the copy is gone, and since migration 6 the version row's copy too
    assert counts["old"] - counts["new"] >= 1 and counts["new"] in (1, 2), counts


def test_vectors_are_found_through_the_hash_prefix_and_stay_unique_per_model(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    store.put_nodes([_node(i, f"text number {i}") for i in range(30)])
    hashes = [store.get_node(f"n{i}").embed_hash for i in range(30)]
    twin = hashes[0][:16] + "0" * 48  # the same 16-character prefix as a held hash, another hash
    store.put_vectors({h: np.ones(3, dtype=np.float32) for h in hashes[:20]} | {twin: np.zeros(3)}, "m")
    store.put_vectors({h: np.full(3, 2.0, dtype=np.float32) for h in hashes[:5]}, "m")  # replaced, not added
    store.put_vectors({hashes[0]: np.full(3, 7.0, dtype=np.float32)}, "other")  # another model: its own row
    assert store._read("SELECT count(*) FROM vectors")[0][0] == 22
    got = store.get_vectors([hashes[0], hashes[7], twin, "f" * 64], "m")
    assert set(got) == {hashes[0], hashes[7], twin} and got[hashes[0]][0] == 2.0 and got[twin][0] == 0.0
    assert store.get_vectors([hashes[0]], "other")[hashes[0]][0] == 7.0
    assert store.count_vectors("m") == 20 and len(store.missing_vectors("m")) == 10
    ids, matrix = store.load_vectors("m")
    assert ids == [f"n{i}" for i in range(20)] and matrix[0, 0] == 2.0 and matrix[9, 0] == 1.0
    pages, after = [], None
    while True:  # export pages in (hash, model) order, through the prefix index
        rows, after = store.export_rows("vectors", after, limit=4)
        pages += [(r["hash"], r["model"]) for r in rows]
        if after is None:
            break
    assert pages == sorted(pages) and len(pages) == 22
    store.purge_nodes(["n0"])  # n0's vector goes for both models; the twin with its prefix stays
    assert set(store.get_vectors([hashes[0], twin], "m")) == {twin} and not store.get_vectors([hashes[0]], "other")
    assert store.delete_vectors([twin]) == 1
    names = {r[0] for r in store._read("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert not names & {"vectors_key", "versions_embed"}
    # migration 6 keeps 8 characters of each hash; the live rows' (their versions are no version rows) are indexed
    assert "versions_hash8" in names and not names & {"vectors_hash16", "versions_hash16"}
    assert "vectors_hash8" not in names  # migration 8: vectors keyed by their row, found through vector_keys
    assert "nodes_hash2" in names and "nodes_hash8" not in names  # migration 7: the live rows' hashes by bucket
    store.close()
