"""The memory index persisted beside the store (engine/snapshot.py): a new process maps it instead of rebuilding,
and a file that is stale, truncated, foreign, from a store restored from a backup, or damaged is never trusted."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.engine.snapshot import MAGIC, PAGE, IndexFiles
from agentcontext.memory import index as memory_index
from agentcontext.workspace import Workspace

from .indexfiles import DAMAGES, damage

N = 120


def unit(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def items(n: int, seed: int, start: int = 0) -> list[dict]:
    vecs = unit(n, seed)
    return [{"content": f"note {start + i} about the {['red', 'blue', 'green'][i % 3]} kite",
             "vector": vecs[i], "conversation_id": f"c{(start + i) % 4}", "metadata": {"colour": i % 3}}
            for i in range(n)]


def memory(home) -> AgentMemory:
    return AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**6)


@pytest.fixture(scope="module")
def built_home(tmp_path_factory):
    """A workspace of N memories in conversations whose index was built once (and so saved), made once a module."""
    folder = tmp_path_factory.mktemp("index-files") / "ws"
    mem = memory(folder)
    mem.batch_store(items(N, 1))
    mem._index()
    mem.workspace.close()
    return folder


@pytest.fixture
def home(built_home, tmp_path):
    """A copy of that workspace (its store file and its index file) for each test, which may change or damage it."""
    return shutil.copytree(built_home, tmp_path / "ws")


def index_file(home):
    files = sorted((home / "indexes").glob("*.idx"))
    assert len(files) == 1, files
    return files[0]


def opened(home):
    """(the memory, its index) as a new process would get them, once any save it started is written."""
    mem = memory(home)
    index = mem._index()
    mem.workspace.index_files.wait()
    return mem, index


def same_rows(a, b) -> None:
    assert a.ids == b.ids
    for name in ("vectors", "pair", "dense", "alive", "prev", "next", "title", "conversation", "user"):
        assert np.array_equal(a.rows.column(name), b.rows.column(name)), name
    assert a.rows.labels == b.rows.labels and a.df == b.df and list(a.props) == list(b.props)


def rebuilt(home):
    mem = memory(home)
    mem.workspace.index_files = IndexFiles(None, mem.workspace.store)
    return mem._index()


def test_a_new_process_maps_the_file_and_finds_what_a_rebuild_finds(home):
    mem, index = opened(home)
    assert index.source is not None and index.source.path == index_file(home)
    same_rows(index, rebuilt(home))
    hits = mem.retrieve("the green kite", max_results=5, filters={"colour": 2})
    assert hits and all(h["metadata"]["colour"] == 2 for h in hits)
    again = rebuilt(home)
    assert [h["id"] for h in hits] == [h["id"] for h in memory(home).retrieve(
        "the green kite", max_results=5, filters={"colour": 2})]
    assert len(again) == N
    # in a real new process too
    code = (f"from agentcontext import AgentMemory, VectorStore\n"
            f"m = AgentMemory(vector_store=VectorStore(home={str(home)!r}))\n"
            f"i = m._index()\nprint(i.source is not None, len(i))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", str(N)]


def test_a_stale_file_is_caught_up_from_the_change_log_and_saved_again_once_far_behind(home, monkeypatch):
    mem = memory(home)
    mem.batch_store(items(30, 2, start=N))  # this process never builds: the file lags 30 memories
    mem.workspace.close()
    mem, index = opened(home)
    assert index.source is not None and len(index) == N + 30 and index.saved < index.counter
    same_rows(index, rebuilt(home))
    monkeypatch.setattr(memory_index, "SAVE_LAG", 5)
    mem.batch_store(items(10, 3, start=N + 30))
    index = mem._index()
    mem.workspace.index_files.wait()  # saved on its thread
    assert index.saved == index.counter  # caught up past SAVE_LAG: written again
    mem.workspace.close()
    assert len(opened(home)[1]) == N + 40


def test_a_purge_the_file_does_not_know_rebuilds_never_serving_the_purged_row(home):
    mem = memory(home)
    gone = mem.list_memories()[0]["id"]
    mem.workspace.index_files = IndexFiles(None, mem.workspace.store)  # this process keeps the file as it was
    assert mem.delete_memory(gone)
    mem.workspace.close()
    mem, index = opened(home)
    assert index.source is None and gone not in index.row and len(index) == N - 1
    assert opened(home)[1].source is not None  # the rebuild was saved


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_file_is_ignored_and_rebuilt(home, how):
    damage(index_file(home), how, small_section="prev")
    mem, index = opened(home)
    assert index.source is None and len(index) == N
    same_rows(index, rebuilt(home))
    assert opened(home)[1].source is not None  # the rebuild replaced the damaged file


def test_a_file_from_another_workspace_is_foreign(home, tmp_path):
    other = tmp_path / "other"
    mem = memory(other)
    mem.batch_store(items(N, 9))  # the same count, another store
    mem.workspace.close()
    shutil.copy(index_file(home), index_file_path_in(other, home))
    mem, index = opened(other)
    assert index.source is None and len(index) == N
    assert not set(index.ids) & set(rebuilt(home).ids)


def index_file_path_in(folder, home):
    target = folder / "indexes"
    target.mkdir(exist_ok=True)
    return target / index_file(home).name


def test_a_store_restored_from_a_backup_does_not_trust_a_newer_file(home, tmp_path, monkeypatch):
    monkeypatch.setattr(memory_index, "SAVE_LAG", 1)
    backup = tmp_path / "backup.db"
    shutil.copy(home / "store.db", backup)
    mem = memory(home)
    mem.batch_store(items(5, 4, start=N))
    mem._index()
    mem.workspace.close()
    newer = index_file(home).read_bytes()
    shutil.copy(backup, home / "store.db")  # the counter went back
    mem, index = opened(home)
    assert index.source is None and len(index) == N
    mem.batch_store(items(7, 5, start=N))  # and forward again, past the file's counter, with other changes
    mem.workspace.close()
    index_file(home).write_bytes(newer)
    mem, index = opened(home)
    assert index.source is None and len(index) == N + 7
    same_rows(index, rebuilt(home))


def test_drop_caches_zeroes_the_file_and_a_process_mapping_it_lets_go(home):
    first, mapped = opened(home)
    assert mapped.source is not None
    path = index_file(home)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(PAGE)
        assert fh.read(4096).strip(b"\0")
    eraser = Workspace.open(home=home)
    zeroed = []
    real_unlink = type(path).unlink

    def unlink(self, missing_ok=False):
        zeroed.append(self.read_bytes() == bytes(size))
        real_unlink(self, missing_ok=missing_ok)

    type(path).unlink = unlink
    try:
        eraser.drop_caches()
    finally:
        type(path).unlink = real_unlink
    assert zeroed == [True] and not path.exists()
    assert mapped.source.intact() is False and mapped.source.header["counter"] > 0
    assert bytes(mapped.source._map[: len(MAGIC)]) == bytes(len(MAGIC))
    again = first._index()  # the holder sees its file scrubbed and builds anew
    assert again is not mapped and again.source is None and len(again) == N
    eraser.close()


@pytest.mark.parametrize("derived", [None, {"time_bits": 1}])
def test_a_file_whose_time_bits_old_code_derived_is_rebuilt_not_read(tmp_path, monkeypatch, derived):
    """The time columns (memory/dates.py) are derived, not stored: a file written by code that derived them
    otherwise (no version: before it existed; or another one) is rebuilt from the store, never mapped."""
    home = tmp_path / "ws"
    mem = memory(home)
    notes = items(40, 6)
    for i, item in enumerate(notes):
        item["content"] += [" yesterday", " last month", " for three years", ""][i % 4]
    mem.batch_store(notes)
    index = mem._index()
    mem.workspace.index_files.wait()
    fresh = index.refs.copy()
    assert fresh.any()
    files, name, model = mem.workspace.index_files, f"memory:{mem.namespace}", mem.workspace.model_name
    index.rows.column("refs")[:] = 0  # what old code derived: other bits
    if derived is None:  # the old code's save: no "derived" section at all
        old = memory_index.persist.save_job(files, memory_index.FILE_KIND, name, model, index.rows, lambda: {
            "props": json.dumps(list(index.props)).encode(), "df": json.dumps(dict(index.df)).encode()})
    else:
        monkeypatch.setattr(memory_index, "DERIVED", derived)
        old = memory_index.save_job(files, name, model, index)
    assert old()
    monkeypatch.undo()
    assert files.load(memory_index.FILE_KIND, name, model) is not None  # a sound file, of other code
    mem.workspace.close()
    mem, again = opened(home)
    assert again.source is None and np.array_equal(again.refs, fresh)  # rebuilt, not read
    mem.workspace.close()
    mem, mapped = opened(home)  # and the rebuild saved a file of this code's version
    assert mapped.source is not None and mapped.source.json("derived") == memory_index.DERIVED
    assert np.array_equal(mapped.refs, fresh)


def read_safetensors(path) -> tuple[dict, dict]:
    """The file read by the safetensors specification alone (huggingface/safetensors' format: a little-endian
    uint64 header length, the JSON header, then a byte buffer every entry indexes without a hole or an overlap):
    (metadata, name -> array)."""
    import struct

    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8: 8 + length])
    body = data[8 + length:]
    dtypes = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1",
              "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?", "F16": "<f2"}
    metadata = header.pop("__metadata__")
    assert all(isinstance(v, str) for v in metadata.values())  # the format's metadata: string to string
    spans = sorted(tuple(e["data_offsets"]) for e in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(body)  # the whole buffer, ...
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # ... no hole, no overlap
    arrays = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        arrays[name] = np.frombuffer(body[begin:end], dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return metadata, arrays


def test_the_file_is_a_safetensors_file_with_the_staleness_header_in_its_metadata(home):
    mem, index = opened(home)
    metadata, arrays = read_safetensors(index_file(home))
    header = json.loads(metadata["agentcontext"])
    assert header["counter"] == index.source.counter and header["kind"] and header["store"] and header["mark"]
    assert np.array_equal(arrays["vectors"], index.rows.column("vectors")[: len(arrays["vectors"])])
    assert json.loads(arrays["meta"].tobytes()) == index.source.json("meta")  # blobs are U8 sections
    for name in index.source.header["sections"]:  # every section starts at a 64-byte boundary of the file
        assert (PAGE + index.source.header["sections"][name]["data_offsets"][0]) % 64 == 0
    try:
        from safetensors.numpy import load_file  # the reference reader, where it is installed
    except ImportError:
        return
    assert np.array_equal(load_file(str(index_file(home)))["vectors"], arrays["vectors"])


def test_a_file_of_the_earlier_format_is_ignored_and_rebuilt(home):
    path = index_file(home)
    data = bytearray(path.read_bytes())
    data[:8] = b"ACIDX\x00\x01\x00"  # the magic of format 1 (before issue 27)
    path.write_bytes(bytes(data))
    mem, index = opened(home)
    assert index.source is None and len(index) == N
    assert index_file(home).read_bytes()[:8] == MAGIC  # saved again in the safetensors layout
