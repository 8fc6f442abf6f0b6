"""export_rows() and import_rows(): a whole store copied row by row, into and out of this backend (the other side
is an SQLite store in memory), with every value as it was."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Edge, content_hash
from agentcontext.store import COPY_TABLES, SQLiteStore

from .data import held, node


def _fill(store) -> None:
    store.put_nodes([node(1, embed_text="alpha", tags=["x", "y"]), node(2, embed_text="beta"), node(3)])
    store.put_nodes([node(1, content="body 1, second version", tags=["x"])])  # a second version
    store.put_edges([Edge(src="n1", dst="n2", type="links", namespace="ns:a")])
    store.put_vectors({content_hash("alpha"): np.arange(4, dtype=np.float32) / 3,
                       content_hash("beta"): np.ones(4, dtype=np.float32)}, "m")
    store.retract_nodes(["n2"])
    store.purge_nodes(["n3"], reason="spec")
    store.put_record("grant", "alice", {"level": "read"})
    store.append_audit("owner", "spec.copy", "n1", "ok", {"why": "copy"})


def _everything(store, limit: int = 2) -> dict:
    """Every table in pages of ``limit`` rows (so the cursor is exercised), vectors as lists."""
    out = {}
    for table in COPY_TABLES:
        rows, after = store.export_rows(table, None, limit)
        while after is not None:
            more, after = store.export_rows(table, after, limit)
            rows += more
        out[table] = [{k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in r.items()} for r in rows]
    return out


def _copy(src, dst) -> None:
    with dst.transaction():
        for table in COPY_TABLES:
            dst.import_rows(table, [src.export_rows(table, None, 100_000)[0]])


def test_copy_rows_out_of_and_into_this_backend(store):
    _fill(store)
    mine = _everything(store)
    assert all(mine[t] for t in COPY_TABLES), "the spec data holds some of every table"
    assert [r["version"] for r in mine["node_versions"] if r["id"] == "n1"] == [1, 2]  # every version
    assert {tuple(r["tags"]) for r in mine["nodes"] if r["id"] == "n1"} == {("x",)}  # tags come out as a list
    other = SQLiteStore(":memory:")
    try:
        _copy(store, other)
        assert _everything(other) == mine
    finally:
        other.close()


def test_import_rows_into_this_backend_and_unknown_tables(store):
    source = SQLiteStore(":memory:")
    try:
        _fill(source)
        _copy(source, store)  # this store is fresh: it takes the copy
        theirs = _everything(source)
        theirs["vectors"] = [{**r, "vector": held(store, r["vector"]).tolist()} for r in theirs["vectors"]]
        assert _everything(store) == theirs
        assert store.text_search("second", namespace="ns:a") and store.check_integrity() == "ok"
        got = store.get_vectors([content_hash("alpha")], "m")[content_hash("alpha")]
        assert np.array_equal(got, held(store, np.arange(4, dtype=np.float32) / 3))  # bits as held
        with pytest.raises(ValidationError, match="unknown table"):
            store.export_rows("sqlite_master")
    finally:
        source.close()
