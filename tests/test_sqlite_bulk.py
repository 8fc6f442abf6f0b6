"""SQLite's bulk path (``AgentMemory.batch_store``, issue 23 s1) on a real store file: one bad item refuses the batch
with a ValidationError naming it, and nothing of the batch is written; a vector holding NaN or infinity is refused as
PostgreSQL refuses it; a process killed mid-load (SIGKILL) leaves each batch whole or absent."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import ValidationError
from agentcontext.model import content_hash
from agentcontext.store import SQLiteStore

from .conftest import ROOT

DIM = 384


def unit(rng, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def items(rng, n: int, conv_every: int = 10) -> list[dict]:
    vectors, contexts = unit(rng, n), unit(rng, n)
    return [{"id": f"m{i:06d}", "content": f"turn {i} on topic {i % 7}", "conversation_id": f"c{i // conv_every}",
             "created_at": "2024-01-01T00:00:00+00:00", "vector": vectors[i], "context_vector": contexts[i]}
            for i in range(n)]


@pytest.fixture
def memory(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"), max_memory_size=None)
    yield mem
    mem.workspace.close()


def _counts(store) -> tuple[int, int, int]:
    return (store.count_nodes(kind="memory"), store._read("SELECT count(*) FROM vectors")[0][0],
            store._read("SELECT count(*) FROM changes WHERE op = 'node.put'")[0][0])


@pytest.mark.parametrize("field, bad, named", [
    ("content", "   ", "memory 137 \\(id 'm000137'\\)"),
    ("vector", np.full(DIM, np.nan, dtype=np.float32), "memory 137 \\(id 'm000137'\\): vector holds NaN"),
    ("context_vector", np.full(DIM, np.inf, dtype=np.float32), "memory 137 \\(id 'm000137'\\): context_vector"),
    ("metadata", {"entities": "not-a-list"}, "memory 137 \\(id 'm000137'\\)"),
    ("id", "m000012", "'m000012' twice"),
])
def test_one_bad_memory_refuses_the_batch_naming_it(memory, field, bad, named):
    rng = np.random.default_rng(2)
    batch = items(rng, 300)
    batch[137][field] = bad
    with pytest.raises(ValidationError, match=named) as caught:
        memory.batch_store(batch)
    if field != "id":
        assert caught.value.data["index"] == 137
    assert _counts(memory.db) == (0, 0, 0)  # nothing of the batch: no memory, no vector, no change row
    batch[137] = items(rng, 300)[137]
    assert len(memory.batch_store(batch)) == 300
    assert _counts(memory.db) == (300, 300 + 270, 300)  # each conversation's first turn has no pair vector


def test_a_vector_holding_nan_or_infinity_is_refused_naming_it(tmp_path):
    store = SQLiteStore(tmp_path / "store.db")
    rng = np.random.default_rng(1)
    good = {content_hash(f"t{i}"): v for i, v in enumerate(unit(rng, 50, 8))}
    for name, value in (("nan", np.nan), ("inf", np.inf)):
        bad = {**good, content_hash(name): np.full(8, value, dtype=np.float32)}
        with pytest.raises(ValidationError, match=content_hash(name)):
            store.put_vectors(bad, "m")
    assert store._read("SELECT count(*) FROM vectors")[0][0] == 0
    assert store.put_vectors(good, "m") == 50
    store.close()


KILLED = """
import sys
import numpy as np
from agentcontext import AgentMemory, VectorStore
mem = AgentMemory(vector_store=VectorStore(home=sys.argv[1]), max_memory_size=None)
size = int(sys.argv[2])
rng = np.random.default_rng(4)
for b in range(100):
    v, c = rng.standard_normal((size, 384)).astype(np.float32), rng.standard_normal((size, 384)).astype(np.float32)
    mem.batch_store([{"id": f"b{b:03d}-{i:05d}", "content": f"batch {b} turn {i}", "conversation_id": f"b{b}c{i // 20}",
                      "vector": v[i], "context_vector": c[i]} for i in range(size)])
    print(b, flush=True)
"""


@pytest.mark.slow
def test_a_process_killed_mid_load_leaves_each_batch_whole_or_absent(tmp_path):
    size = 3000
    home = tmp_path / ".agentcontext"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(home), str(size)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    assert proc.stdout.readline().strip() == "0"  # one batch committed
    time.sleep(0.3)  # inside the next one
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    store = SQLiteStore(home / "store.db")
    assert store.check_integrity() == "ok"
    per_batch = dict(store._read("SELECT substr(id, 1, 4), count(*) FROM nodes GROUP BY 1"))
    vectors = store._read("SELECT count(*) FROM vectors")[0][0]
    assert per_batch and all(n == size for n in per_batch.values()), per_batch
    assert vectors == (2 * size - size // 20) * len(per_batch)  # each batch's vectors with it (a first turn: no pair)
    assert store._read("SELECT count(*) FROM changes WHERE op = 'node.put'")[0][0] == size * len(per_batch)
    store.close()


def test_a_batch_with_every_vector_supplied_does_not_load_the_model(memory):
    rng = np.random.default_rng(3)
    memory.batch_store(items(rng, 100))
    memory.batch_store([{**x, "id": f"n{i}"} for i, x in enumerate(items(rng, 100))])  # conversations that go on
    assert memory.workspace._embedder is None  # the model (about a second to load) was never needed


def test_one_batch_stores_what_small_batches_and_single_stores_store(tmp_path):
    """The same memories through one batch_store, batches of 7 and one call each (heads carried between calls): the
    same rows, vectors, conversation links and answers (keys, which hold the place in a batch, left out)."""
    rng = np.random.default_rng(5)
    batch = items(rng, 120, conv_every=25)
    stores = {}
    for name, step in (("one", len(batch)), ("sevens", 7), ("singles", 1)):
        mem = AgentMemory(vector_store=VectorStore(home=tmp_path / name), max_memory_size=None)
        for start in range(0, len(batch), step):
            mem.batch_store(batch[start: start + step])
        stores[name] = mem
    keep = "id, kind, namespace, title, summary, content, props, tags, version, embed_hash, tokens"
    rows = {name: m.db._read(f"SELECT {keep} FROM nodes ORDER BY id") for name, m in stores.items()}
    vectors = {name: m.db._read("SELECT hash, model, dim, vector FROM vectors ORDER BY hash")
               for name, m in stores.items()}
    heads = {name: m.db.list_records("memory.chain_head") for name, m in stores.items()}
    answers = {name: [r["id"] for r in m.retrieve("turn 17 on topic 3", max_results=10)] for name, m in stores.items()}
    # The other tables a memory writes, by node id: its change row, its tag rows, its versions and what the text index
    # holds of it (the tokens of each column, and the rows a term finds)
    tables = {name: (
        m.db._read("SELECT op, target, namespace, detail FROM changes WHERE op LIKE 'node.%' ORDER BY target"),
        m.db._read("SELECT n.id, t.tag FROM node_tags t JOIN nodes n ON n.rid = t.rid ORDER BY 1, 2"),
        m.db._read("SELECT count(*) FROM node_versions"),
        m.db._read("SELECT n.id, d.sz FROM fts_docsize d JOIN nodes n ON n.rid = d.id ORDER BY 1"),
        [m.db._read("SELECT n.id FROM fts f JOIN nodes n ON n.rid = f.rowid WHERE fts MATCH ? ORDER BY 1", (term,))
         for term in ("turn", "topic 3", "tags:conversation", "c2")])
        for name, m in stores.items()}
    for name in ("sevens", "singles"):
        assert rows[name] == rows["one"] and vectors[name] == vectors["one"], name
        assert heads[name] == heads["one"] and answers[name] == answers["one"], name
        assert tables[name] == tables["one"], name
    assert len(tables["one"][0]) == 120 and len(tables["one"][1]) == 120 and len(tables["one"][3]) == 120
    assert all(tables["one"][4]) and tables["one"][2] == [(0,)]
    assert len(rows["one"]) == 120 and len(vectors["one"]) == 120 + 120 - 5  # a first turn has no pair vector
    for m in stores.values():
        m.workspace.close()


def test_null_and_bytes_bind_through_a_registered_adapter_and_read_back_the_same(tmp_path):
    """The driver offers a None or bytes value to the adapter protocol before binding it, about 2 microseconds a
    value when no adapter is registered (a memory's row binds several NULLs and its vector's bytes): the store
    registers each as itself, so the value binds as before (NULL, BLOB) after one dictionary lookup."""
    import sqlean

    store = SQLiteStore(tmp_path / "store.db")
    for kind in (type(None), bytes):
        assert (kind, sqlean.PrepareProtocol) in sqlean.adapters, kind
    vec = np.arange(4, dtype=np.float32)
    store._db.execute("CREATE TEMP TABLE t(a, b)")
    store._db.executemany("INSERT INTO t VALUES (?, ?)", [(None, vec.tobytes()), (b"", None)])
    assert store._db.execute("SELECT typeof(a), typeof(b) FROM t ORDER BY rowid").fetchall() == [
        ("null", "blob"), ("blob", "null")]
    assert np.array_equal(np.frombuffer(store._db.execute("SELECT b FROM t LIMIT 1").fetchone()[0], np.float32), vec)
    store.close()


def test_a_large_batch_is_written_without_collections_and_the_collector_is_left_as_it_was(memory):
    """The cycle collector is paused while a batch of 1,000 or more is planned and written (tens of objects a memory,
    none in a cycle, set off collections, one a full pass over the process's objects); it runs again after, and a
    collector the caller had turned off stays off."""
    import gc

    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    rng = np.random.default_rng(6)
    first, second = items(rng, 3000, conv_every=30), [{**x, "id": f"n{i}"} for i, x in enumerate(items(rng, 1000))]
    gc.collect()
    gc.callbacks.append(seen)
    try:
        memory.batch_store(first)
        during = list(collections)
        assert gc.isenabled()
        gc.disable()
        memory.batch_store(second)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(seen)
    assert len(during) <= 3 and memory.count() == 4000  # before: about 50 (the caller's work around the write remains)


def test_rows_land_in_order_through_whole_multi_row_statements_and_the_rest(tmp_path):
    store = SQLiteStore(tmp_path / "store.db")
    store._db.execute("CREATE TABLE t(seq INTEGER PRIMARY KEY AUTOINCREMENT, a, b, c)")
    per = store.MULTI_ROW_PARAMS // 3
    rows = [(i, None if i % 3 else f"x{i}", bytes([i % 256]) * 3) for i in range(2 * per + 7)]
    with store.transaction():
        store._insert_rows("INSERT INTO t(a, b, c)", rows)
        store._bulk_insert("t", "a, b, c", iter(rows[:5]))
    got = store._db.execute("SELECT seq, a, b, c FROM t ORDER BY seq").fetchall()
    assert got == [(i + 1, *r) for i, r in enumerate(rows + rows[:5])]
    store.close()


def test_json_text_makes_its_encoder_once_a_thread_and_writes_what_json_dumps_writes(monkeypatch):
    """A node's props and hash head are encoded by one C encoder a thread (making one per call cost a quarter of
    encoding a memory's props): the same text as json.dumps, and a circular value fails as json.dumps fails, every
    time (the encoder's markers are emptied after a failed call)."""
    import datetime
    import json
    import threading
    from json import encoder

    from agentcontext.model import json_text

    values = [{"b": 1, "a": [1, {"z": None, "y": 1.5}], "d": datetime.date(2020, 1, 1), "u": "é\u2028"}, [], "x", 3]
    dumped = [json.dumps(v, sort_keys=True, default=str) for v in values]
    made = []
    make = encoder.c_make_encoder

    def counted(*args):
        made.append(args)
        return make(*args)

    monkeypatch.setattr(encoder, "c_make_encoder", counted)
    encode = json_text(sort_keys=True)
    circular: dict = {}
    circular["self"] = circular
    for _ in range(2):
        assert [encode(v) for v in values] == dumped
        with pytest.raises(ValueError, match="Circular"):
            encode({"ok": 1, "x": circular})
    assert len(made) == 1
    other = threading.Thread(target=encode, args=({"a": 1},))
    other.start()
    other.join()
    assert len(made) == 2



def test_the_text_index_read_back_from_new_rows_holds_what_a_row_at_a_time_gives_it(tmp_path):
    """A batch of new nodes reaches the text index in one statement that reads their rows back (the tags cut from
    their JSON); a batch with a tag whose JSON holds an escape (a quote, a backslash, a non-ASCII or control character)
    or with a rewritten node gives its rows one at a time, as before. Either way the index is the same, segment for
    segment, as the rows given one at a time, and every term and tag finds its rows."""
    import json

    from agentcontext.model import Node
    from agentcontext.store import sqlite_nodes

    plain = [[], ["conversation:c1"], ["conversation:c1", "user:u 2", "type:fact"], [""], ["[]"], ["a, b"], ["x y"]]
    escaped = [['q"uote'], ["back\\slash"], ["caf\u00e9"], ["tab\tinside"]]

    def nodes(start, labels):
        return [Node(id=f"n{start + i}", kind="note", namespace="ns", key=f"k{start + i:04d}", title=f"title {i}",
                     summary="s", content=f"content word{i % 5} {i}", tags=list(labels[i % len(labels)]))
                for i in range(40)]

    batches = [nodes(0, plain), nodes(100, plain + escaped[:1]), nodes(200, escaped), nodes(300, plain),
               nodes(10, plain)[:3] + nodes(400, plain)]  # the last rewrites three nodes beside new ones
    stores, statements = {}, {}
    for name, from_rows in (("statement", True), ("rows", False)):
        store = SQLiteStore(tmp_path / f"{name}.db")
        store.FTS_FROM_ROWS = from_rows
        seen = []
        store._db.set_trace_callback(lambda sql, seen=seen: seen.append(sql.startswith("INSERT INTO fts(rowid") and
                                                                        " SELECT rid, " in sql))
        for batch in batches:
            store.put_nodes(batch)
        store._db.set_trace_callback(None)
        stores[name], statements[name] = store, sum(seen)
    assert statements == {"statement": 2, "rows": 0}  # the all-plain, all-new batches (the first and the fourth)
    index = {name: (s._read("SELECT id, block FROM fts_data ORDER BY id"), s._read("SELECT * FROM fts_idx"),
                    s._read("SELECT * FROM fts_docsize ORDER BY id")) for name, s in stores.items()}
    assert index["statement"] == index["rows"]
    live = {n.id: n for batch in batches for n in batch}  # the rewritten ones hold the same text
    store = stores["statement"]
    cut = dict(store._read(f"SELECT id, {sqlite_nodes.FTS_TAGS} FROM nodes"))  # the text the statement gives
    assert all(cut[i] == " ".join(n.tags) for i, n in live.items() if "\\" not in json.dumps(n.tags))
    for term in ("conversation", "c1", "user", "u", "2", "fact", "a", "b", "x", "y", "q", "uote", "back", "slash",
                 "café", "tab", "inside"):
        want = sum(any(term in re.split(r"[^\w]+", t.lower()) for t in n.tags) for n in live.values())
        got = store._read("SELECT count(*) FROM fts WHERE fts MATCH ?", (f'tags:"{term}"',))[0][0]
        assert got == want > 0, term
    assert store._read("SELECT count(*) FROM fts WHERE fts MATCH 'content'")[0][0] == len(live)
    for s in stores.values():
        s.close()
