"""The precedent index and the pack vectors persisted beside the store (engine/persist.py): a new process's first
find_precedents and search_knowledge map the files instead of rebuilding; a stale file is caught up, a file that
is damaged, foreign or another namespace's is never trusted; a principal gets nothing more through a mapped file."""
from __future__ import annotations

import contextlib

import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from agentcontext import access
from agentcontext.decisions.index import index_for
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.engine import persist
from agentcontext.engine.snapshot import MAGIC, IndexFiles
from agentcontext.errors import AccessDeniedError
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge import packs
from agentcontext.knowledge.search import pack_vectors, search_knowledge
from agentcontext.workspace import Workspace

from .indexfiles import DAMAGES, damage

N = 24
TOPICS = ["refund for a late laptop", "cloud region outage", "hiring a data engineer", "pricing change for teams"]
DEFAULT, HR, PACK = "graph:default", "graph:hr", "lib:kb"
KINDS = {"decisions": (f"decisions:{DEFAULT}", "category"), "pack": (f"pack:{PACK}:vectors", "alive")}


def decisions(n: int, start: int = 0, prefix: str = "d") -> list[dict]:
    return [{"decision_id": f"{prefix}{i}", "category": ["finance", "ops"][i % 2],
             "scenario": f"{TOPICS[i % 4].capitalize()} (case {i})", "reasoning": f"Reason number {i}",
             "outcome": "approved", "confidence": 0.8} for i in range(start, start + n)]


def put_docs(ws: Workspace, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        section = "public" if i % 3 == 0 else "private"  # both in every topic
        packs.put_doc(ws, PACK, f"{section}.doc{i}", title=f"Doc {i}", content=f"About {TOPICS[i % 4]}, part {i}.")


def rows_of(ws: Workspace, which: str):
    """The index, once any save its refresh started (on its thread) is written."""
    rows = index_for(ws, DEFAULT).rows if which == "decisions" else pack_vectors(ws, PACK)
    ws.index_files.wait()
    return rows


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A workspace with decisions in two graphs and a pack, whose indexes were built once (and so saved)."""
    home = tmp_path_factory.mktemp("vectors") / "ws"
    ws = Workspace.open(home=home, create=True)
    DecisionRecorder(ContextGraph(workspace=ws)).record_decisions(decisions(N))
    DecisionRecorder(ContextGraph(workspace=ws, name="hr")).record_decisions(decisions(6, prefix="hr"))
    packs.create_pack(ws, "kb")
    put_docs(ws, N)
    access.grant(ws, "reader", DEFAULT, "read")
    access.grant(ws, "reader", f"{PACK}/public.*", "read")
    for which in KINDS:
        rows_of(ws, which)
    index_for(ws, HR)
    ws.close()
    return home


@pytest.fixture
def home(template, tmp_path):
    folder = tmp_path / "ws"
    shutil.copytree(template, folder)
    return folder


def file_of(home, which: str):
    ws = Workspace.open(home=home)
    path = ws.index_files.path(KINDS[which][0], ws.model_name)
    ws.close()
    return path


def rebuilt(home, which: str):
    ws = Workspace.open(home=home)
    ws.index_files = IndexFiles(None, ws.store)
    return rows_of(ws, which)


def same_rows(a, b) -> None:
    """The same rows by id (a caught-up index appends in log order, a rebuild in the store's)."""
    assert sorted(a.ids) == sorted(b.ids) and a.dead == b.dead
    order = [a.row[i] for i in b.ids]
    for name in ("vectors", "alive", "vfrom", "vuntil"):
        if a.has(name):
            assert np.array_equal(a.column(name)[order], b.column(name)), name
    if a.has("category"):
        assert [a.labels["category"][c] for c in a.column("category")[order]] == [
            b.labels["category"][c] for c in b.column("category")]


def precedents(ws: Workspace, principal=None, graph="default") -> list[str]:
    rec = DecisionRecorder(ContextGraph(workspace=ws, name=graph, principal=principal))
    return [d.decision_id for d in rec.find_precedents("a laptop refund that came late", limit=8)]


def found_docs(ws: Workspace, principal=None) -> list[str]:
    return [h.selector for h in search_knowledge(ws, PACK, "an outage in a cloud region", limit=10,
                                                 principal=principal)]


def test_a_new_process_maps_both_files_and_ranks_as_a_rebuild(home):
    ws = Workspace.open(home=home)
    first = precedents(ws), found_docs(ws)
    for which in KINDS:
        rows = rows_of(ws, which)
        assert rows.source is not None and rows.source.path == file_of(home, which) and len(rows) == N
        same_rows(rows, rebuilt(home, which))
    cold = Workspace.open(home=home)
    cold.index_files = IndexFiles(None, cold.store)
    assert first == (precedents(cold), found_docs(cold)) and first[0] and first[1]
    code = (f"from agentcontext.workspace import Workspace\nfrom agentcontext.decisions.index import index_for\n"
            f"from agentcontext.knowledge.search import pack_vectors\nws = Workspace.open(home={str(home)!r})\n"
            f"a, b = index_for(ws, {DEFAULT!r}).rows, pack_vectors(ws, {PACK!r})\n"
            f"print(a.source is not None, len(a), b.source is not None, len(b))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", str(N), "True", str(N)]


def test_a_stale_file_is_caught_up_and_saved_again_once_far_behind(home, monkeypatch):
    ws = Workspace.open(home=home)  # this process writes but never uses the indexes: the files lag
    DecisionRecorder(ContextGraph(workspace=ws)).record_decisions(decisions(4, start=N))
    put_docs(ws, 3, start=N)
    ws.close()
    ws = Workspace.open(home=home)
    for which, extra in (("decisions", 4), ("pack", 3)):
        rows = rows_of(ws, which)
        assert rows.source is not None and len(rows) == N + extra and rows.saved < rows.counter
        same_rows(rows, rebuilt(home, which))
    monkeypatch.setattr(persist, "SAVE_LAG", 1)
    packs.put_doc(ws, PACK, "public.late", content="A late doc about a cloud region outage.")
    rows = rows_of(ws, "pack")
    assert rows.saved == rows.counter  # past SAVE_LAG: written again
    assert len(pack_vectors(Workspace.open(home=home), PACK)) == N + 4


@pytest.mark.parametrize("which", KINDS)
def test_a_deletion_the_file_does_not_know_is_never_served_and_leaves_the_file(home, which):
    ws = Workspace.open(home=home)
    ws.index_files = IndexFiles(None, ws.store)  # this process leaves the file as it was
    gone = "d0" if which == "decisions" else f"{PACK}/private.doc1"
    node = ws.store.get_node(gone)
    vector = ws.store.get_vectors([node.embed_hash], ws.model_name)[node.embed_hash].astype("<f4").tobytes()
    assert vector in file_of(home, which).read_bytes()
    if which == "decisions":
        ws.store.purge_nodes([gone], reason="test")
    else:
        packs.delete_doc(ws, PACK, "private.doc1")
    ws.close()
    ws = Workspace.open(home=home)
    rows = rows_of(ws, which)
    assert rows.source is not None and not rows.alive[rows.row[gone]]  # mapped, the row dropped on catching up
    assert gone not in (precedents(ws) if which == "decisions" else [f"{PACK}/{s}" for s in found_docs(ws)])
    ws.index_files.wait()
    assert vector not in file_of(home, which).read_bytes()  # saved again without the row


@pytest.mark.parametrize("which", KINDS)
@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_file_is_ignored_and_rebuilt(home, which, how):
    damage(file_of(home, which), how, small_section=KINDS[which][1])
    rows = rows_of(Workspace.open(home=home), which)
    assert rows.source is None and len(rows) == N
    same_rows(rows, rebuilt(home, which))
    assert rows_of(Workspace.open(home=home), which).source is not None  # the rebuild replaced the damaged file


def test_a_file_from_another_workspace_or_namespace_is_refused(home, tmp_path):
    other = tmp_path / "other"
    ws = Workspace.open(home=other, create=True)
    DecisionRecorder(ContextGraph(workspace=ws)).record_decisions(decisions(N, prefix="x"))
    ws.close()
    target = file_of(other, "decisions")
    target.parent.mkdir(exist_ok=True)
    shutil.copy(file_of(home, "decisions"), target)  # the same index name, another store
    rows = rows_of(Workspace.open(home=other), "decisions")
    assert rows.source is None and rows.ids == [f"x{i}" for i in range(N)]
    ws = Workspace.open(home=home)
    shutil.copy(ws.index_files.path(f"decisions:{HR}", ws.model_name), file_of(home, "decisions"))
    rows = rows_of(ws, "decisions")  # graph:hr's rows under graph:default's name: refused
    assert rows.source is None and not any(i.startswith("hr") for i in rows.ids) and len(rows) == N


def test_a_principal_gets_no_more_through_the_mapped_files(home):
    ws = Workspace.open(home=home)
    hr_file = ws.index_files.path(f"decisions:{HR}", ws.model_name)
    assert hr_file.exists()
    with pytest.raises(AccessDeniedError):
        precedents(ws, principal="reader", graph="hr")
    seen = precedents(ws, principal="reader")
    assert seen and not any(i.startswith("hr") for i in seen)
    docs = found_docs(ws, principal="reader")
    assert pack_vectors(ws, PACK).source is not None  # the file was mapped for this search
    assert docs and all(s.startswith("public.") for s in docs)
    assert any(s.startswith("private.") for s in found_docs(ws))  # the owner sees both


def test_drop_caches_zeroes_both_files_and_a_holder_builds_anew(home):
    holder = Workspace.open(home=home)
    mapped = {which: rows_of(holder, which) for which in KINDS}
    assert all(r.source is not None for r in mapped.values())
    paths = {which: file_of(home, which) for which in KINDS}
    Workspace.open(home=home).drop_caches()
    for which, rows in mapped.items():
        assert not paths[which].exists() and not rows.intact()
        assert bytes(rows.source._map[: len(MAGIC)]) == bytes(len(MAGIC))
        again = rows_of(holder, which)
        assert again is not rows and again.source is None and len(again) == N


def test_a_save_runs_off_the_query_path_and_a_scrub_meanwhile_abandons_it(home, monkeypatch):
    file_of(home, "pack").unlink()  # the next use rebuilds, then saves
    ws = Workspace.open(home=home)
    writing, release, seen = threading.Event(), threading.Event(), {}
    real_locked = IndexFiles.locked

    @contextlib.contextmanager
    def held_locked(self):  # the write done, the save waits before it takes the folder's lock to rename
        if threading.current_thread().name.startswith("index-save"):
            seen["thread"] = threading.current_thread()
            writing.set()
            assert release.wait(10)
        with real_locked(self):
            yield

    monkeypatch.setattr(IndexFiles, "locked", held_locked)
    rows = pack_vectors(ws, PACK)  # returns while its save still waits: the save is not on this path
    assert writing.wait(10) and seen["thread"] is not threading.current_thread() and rows.saved == -1
    assert found_docs(ws)  # queries go on meanwhile
    temporary = list((home / "indexes").glob("pack_*.tmp"))
    assert len(temporary) == 1
    ws.drop_caches()  # an erasure: the file being written is zeroed and removed, the save abandoned
    release.set()
    ws.index_files.wait()
    assert not list((home / "indexes").glob("pack_*")) and rows.saved == -1
    rows = pack_vectors(ws, PACK)  # built anew; this save is let through
    release.set()
    ws.index_files.wait()
    assert rows.saved == rows.counter and rows_of(Workspace.open(home=home), "pack").source is not None
