"""VectorStore's indexes persisted beside the store (engine/persist.py, kind vector-store): a new process's first
search maps the file instead of loading every vector; a stale file is caught up, a deletion it does not know is
never served and leaves the file, a damaged, foreign or other namespace's file is never trusted, and drop_caches
(what an erasure calls) zeroes the file."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.engine import persist
from agentcontext.engine.snapshot import MAGIC, IndexFiles
from agentcontext.workspace import Workspace

from .indexfiles import DAMAGES, damage

N = 20
DIM = 384
MINE, OTHER = "memory:default", "memory:other"


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def put(ws: Workspace, namespace: str, n: int, start: int = 0) -> list[str]:
    mem = AgentMemory(vector_store=VectorStore(workspace=ws), namespace=namespace.split(":", 1)[1])
    items = [{"content": f"note {i} of {namespace}", "vector": unit(i)} for i in range(start, start + n)]
    return mem.batch_store(items)


def index(ws: Workspace, namespace: str = MINE):
    """The index, once any save its refresh started (on its thread) is written."""
    rows = VectorStore(workspace=ws).index(namespace)
    ws.index_files.wait()
    return rows


def search(ws: Workspace, namespace: str = MINE) -> list[tuple[str, float]]:
    return [(h["id"], round(h["score"], 6)) for h in VectorStore(workspace=ws).search(unit(3), 5, namespace=namespace)]


def file_of(ws: Workspace, namespace: str = MINE):
    return ws.index_files.path(f"vectors:{namespace!r}:None", ws.model_name)


def rebuilt(home, namespace: str = MINE):
    ws = Workspace.open(home=home)
    ws.index_files = IndexFiles(None, ws.store)
    return ws, index(ws, namespace)


def same(a, b) -> None:
    assert sorted(a.ids) == sorted(b.ids)
    order = [a.row[i] for i in b.ids]
    assert np.array_equal(a.vectors[order], b.vectors) and np.array_equal(a.alive[order], b.alive)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    home = tmp_path_factory.mktemp("vstore") / "ws"
    ws = Workspace.open(home=home, create=True)
    put(ws, MINE, N)
    put(ws, OTHER, 6, start=100)
    index(ws), index(ws, OTHER)
    ws.close()
    return home


@pytest.fixture
def home(template, tmp_path):
    folder = tmp_path / "ws"
    shutil.copytree(template, folder)
    return folder


def test_a_new_process_maps_the_file_and_searches_as_a_rebuild(home):
    ws = Workspace.open(home=home)
    rows = index(ws)
    assert rows.source is not None and rows.source.path == file_of(ws) and len(rows) == N
    cold, again = rebuilt(home)
    same(rows, again)
    assert search(ws) == search(cold) and search(ws)
    code = (f"from agentcontext import VectorStore\nvs = VectorStore(home={str(home)!r})\n"
            f"rows = vs.index({MINE!r})\nprint(rows.source is not None, len(rows))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", str(N)]


def test_a_stale_file_is_caught_up_and_saved_again_once_far_behind(home, monkeypatch):
    ws = Workspace.open(home=home)
    put(ws, MINE, 3, start=N)
    ws.close()
    ws = Workspace.open(home=home)
    rows = index(ws)
    assert rows.source is not None and len(rows) == N + 3 and rows.saved < rows.counter
    same(rows, rebuilt(home)[1])
    monkeypatch.setattr(persist, "SAVE_LAG", 1)
    put(ws, MINE, 1, start=N + 3)
    rows = index(ws)
    assert rows.saved == rows.counter and len(index(Workspace.open(home=home))) == N + 4


def test_a_purge_the_file_does_not_know_is_never_served_and_leaves_the_file(home):
    ws = Workspace.open(home=home)
    gone = search(ws)[0][0]
    node = ws.store.get_node(gone)
    vector = ws.store.get_vectors([node.embed_hash], ws.model_name)[node.embed_hash].astype("<f4").tobytes()
    assert vector in file_of(ws).read_bytes()
    ws.store.purge_nodes([gone], reason="test")
    ws.close()
    ws = Workspace.open(home=home)
    rows = index(ws)
    assert rows.source is not None and gone not in [i for i, _ in search(ws)]
    assert vector not in file_of(ws).read_bytes()  # saved again without the row


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_file_is_ignored_and_rebuilt(home, how):
    ws = Workspace.open(home=home)
    path = file_of(ws)
    ws.close()
    damage(path, how, small_section="alive")
    rows = index(Workspace.open(home=home))
    assert rows.source is None and len(rows) == N
    same(rows, rebuilt(home)[1])
    assert index(Workspace.open(home=home)).source is not None  # the rebuild replaced the damaged file


def test_a_file_from_another_workspace_or_namespace_is_refused(home, tmp_path):
    ws = Workspace.open(home=home)
    shutil.copy(file_of(ws, OTHER), file_of(ws))  # memory:other's rows at memory:default's path
    rows = index(ws)
    assert rows.source is None and len(rows) == N and not any("other" in i for i in rows.ids)
    ws.close()
    other = Workspace.open(home=tmp_path / "other", create=True)
    mine = put(other, MINE, 4, start=500)
    target = file_of(other)
    target.parent.mkdir(exist_ok=True)
    shutil.copy(file_of(Workspace.open(home=home)), target)  # the same index name, another store
    rows = index(other)
    assert rows.source is None and sorted(rows.ids) == sorted(mine)


def test_drop_caches_zeroes_the_file_and_a_holder_builds_anew(home):
    holder = Workspace.open(home=home)
    mapped = index(holder)
    path = file_of(holder)
    Workspace.open(home=home).drop_caches()
    assert not path.exists() and not mapped.intact()
    assert bytes(mapped.source._map[: len(MAGIC)]) == bytes(len(MAGIC))
    again = index(holder)
    assert again is not mapped and again.source is None and len(again) == N
