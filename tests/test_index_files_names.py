"""The node-name index persisted beside the store (engine/name_index.py): a new process's first find_precedents
maps the names file instead of reading every node; a stale file is caught up (a rename, a retraction, a purge the
file does not know), a file that is damaged, foreign or another namespace's is never trusted, a principal finds no
more names through a mapped file, and an erasure leaves no name of what it erased in any index file."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from agentcontext import access
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.engine import name_index, persist, proximity
from agentcontext.engine.snapshot import MAGIC, IndexFiles
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.model import Change
from agentcontext.workspace import Workspace

from .indexfiles import DAMAGES, damage

DEFAULT, HR = "graph:default", "graph:hr"
SCENARIO = "Should Acme Corp get a refund under the Refund Policy"


def decisions(n: int, start: int = 0, prefix: str = "d") -> list[dict]:
    return [{"decision_id": f"{prefix}{i}", "category": "finance", "scenario": f"Refund for Acme Corp (case {i})",
             "reasoning": f"Reason number {i}", "outcome": "approved", "confidence": 0.8,
             "entities": ["acme"] if i % 2 else []} for i in range(start, start + n)]


def graph(ws: Workspace, name: str = "default", principal: str | None = None) -> ContextGraph:
    return ContextGraph(workspace=ws, name=name, principal=principal)


def names(ws: Workspace, namespace: str = DEFAULT) -> name_index.NodeNames:
    """The names, once any save their refresh started (on its thread) is written."""
    found = name_index.node_names(ws, namespace)
    ws.index_files.wait()
    return found


def rebuilt(ws: Workspace, namespace: str = DEFAULT) -> dict[str, list[str]]:
    return name_index.build(ws.store, namespace).as_dict()


def path_of(ws: Workspace, namespace: str = DEFAULT):
    return ws.index_files.path(name_index.file_name(namespace), name_index.MODEL)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Entities and decisions in two graphs, a grant; the name indexes built once (and so saved)."""
    home = tmp_path_factory.mktemp("names") / "ws"
    ws = Workspace.open(home=home, create=True)
    g = graph(ws)
    g.add_node("acme", "entity", properties={"name": "Acme Corp"})
    g.add_node("globex", "entity", properties={"name": "Globex"})
    DecisionRecorder(g).record_decisions(decisions(12))
    hr = graph(ws, "hr")
    hr.add_node("initech", "entity", properties={"name": "Initech Payroll"})
    DecisionRecorder(hr).record_decisions(decisions(4, prefix="hr"))
    access.grant(ws, "reader", DEFAULT, "read")
    names(ws), names(ws, HR)
    ws.close()
    return home


@pytest.fixture
def home(template, tmp_path):
    folder = tmp_path / "ws"
    shutil.copytree(template, folder)
    return folder


def precedents(ws: Workspace) -> list[tuple[str, float]]:
    found = DecisionRecorder(graph(ws)).find_precedents(SCENARIO, limit=6)
    return [(d.decision_id, d.metadata["similarity"]) for d in found]


def test_a_new_process_maps_the_names_and_finds_the_same_precedents(home):
    ws = Workspace.open(home=home)
    mapped = names(ws)
    assert mapped.source is not None and mapped.source.path == path_of(ws)
    assert mapped.as_dict() == rebuilt(ws) and mapped.get("acme") == ["graph:default/acme"]
    assert not mapped.get("initech")  # another namespace's node
    first = precedents(ws)
    cold = Workspace.open(home=home)
    cold.index_files = IndexFiles(None, cold.store)
    assert first == precedents(cold) and first
    assert proximity.mentioned_nodes(graph(ws), "Acme Corp and globex met") == ["acme", "globex"]
    code = (f"from agentcontext.workspace import Workspace\nfrom agentcontext.engine.name_index import node_names\n"
            f"ws = Workspace.open(home={str(home)!r})\nn = node_names(ws, {DEFAULT!r})\n"
            f"print(n.source is not None, n.get('acme corp'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "['graph:default/acme']"]


def test_a_stale_file_is_caught_up_renamed_and_saved_again_once_far_behind(home, monkeypatch):
    ws = Workspace.open(home=home)  # this process writes but never asks for names: the file lags
    graph(ws).add_node("umbrella", "entity", properties={"name": "Umbrella Health"})
    ws.close()
    ws = Workspace.open(home=home)
    caught = names(ws)
    assert caught.source is not None and caught.saved < caught.counter  # one new name: no save yet
    assert caught.as_dict() == rebuilt(ws) and caught.get("umbrella health") == ["graph:default/umbrella"]
    graph(ws).add_node("acme", "entity", properties={"name": "Acme Holdings"})  # a new version renames it
    renamed = names(ws)
    assert renamed is caught and renamed.as_dict() == rebuilt(ws)
    assert renamed.get("acme holdings") == ["graph:default/acme"] and not renamed.get("acme corp")
    assert renamed.saved < renamed.counter  # a rename is saved like an addition (SAVE_LAG), not at once
    assert proximity.mentioned_nodes(graph(ws), "Umbrella Health and Acme Holdings") == ["umbrella", "acme"]
    monkeypatch.setattr(persist, "SAVE_LAG", 1)
    graph(ws).add_node("hooli", "entity")
    assert names(ws).saved == names(ws).counter  # past SAVE_LAG: written again
    saved = name_index.load(ws.index_files, DEFAULT)
    assert saved.get("acme holdings") == ["graph:default/acme"] and not saved.get("acme corp")
    ws.close()
    again = Workspace.open(home=home)
    assert names(again).get("hooli") == ["graph:default/hooli"] and names(again).as_dict() == rebuilt(again)


@pytest.mark.parametrize("how", ["retract", "purge"])
def test_a_deletion_the_file_does_not_know_is_never_served_and_leaves_the_file(home, how):
    ws = Workspace.open(home=home)
    sid = "graph:default/globex"
    assert b"globex" in path_of(ws).read_bytes()
    if how == "retract":
        ws.store.retract_nodes([sid])
    else:
        ws.store.purge_nodes([sid])
    ws.close()
    ws = Workspace.open(home=home)
    found = names(ws)
    assert not found.get("globex") and found.as_dict() == rebuilt(ws)
    assert proximity.mentioned_nodes(graph(ws), "globex") == []
    assert b"globex" not in path_of(ws).read_bytes()  # rewritten without the name
    assert name_index.load(ws.index_files, DEFAULT).as_dict() == found.as_dict()


def test_a_save_waits_while_a_purge_it_has_not_seen_is_in_the_log(home):
    ws = Workspace.open(home=home)
    held = names(ws)
    job = name_index.save_job(ws.index_files, DEFAULT, held)  # prepared before the purge
    ws.store.purge_nodes(["graph:default/globex"])
    before = path_of(ws).read_bytes()
    assert job() is False and path_of(ws).read_bytes() == before


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_file_is_ignored_and_rebuilt(home, how):
    ws = Workspace.open(home=home)
    path = path_of(ws)
    ws.close()
    damage(path, how, "name_bytes")
    ws = Workspace.open(home=home)
    found = names(ws)
    assert found.source is None and found.as_dict() == rebuilt(ws) and found.get("acme")
    assert name_index.load(ws.index_files, DEFAULT) is not None  # saved again, whole


def test_name_sections_that_do_not_fit_are_refused(home):
    ws = Workspace.open(home=home)
    arrays = name_index.Packed.pack({"acme": ["graph:default/acme"]})
    for broken in ({k: v for k, v in arrays.items() if k != "owned"},  # a section missing
                   {**arrays, "postings_at": arrays["postings_at"][:1]}):  # lengths that disagree
        ws.index_files.save(name_index.KIND, name_index.file_name(DEFAULT), name_index.MODEL,
                            ws.store.change_counter(), broken, {})
        assert name_index.load(ws.index_files, DEFAULT) is None
    assert names(ws).source is None and names(ws).as_dict() == rebuilt(ws)


def test_a_file_from_another_workspace_or_namespace_is_refused(home, tmp_path):
    ws = Workspace.open(home=home)
    mine, hr = path_of(ws), path_of(ws, HR)
    ws.close()
    shutil.copy(hr, mine)  # graph:hr's names at graph:default's path
    ws = Workspace.open(home=home)
    assert name_index.load(ws.index_files, DEFAULT) is None
    found = names(ws)
    assert found.source is None and not found.get("initech payroll") and found.get("acme")
    ws.close()
    other = Workspace.open(home=tmp_path / "other", create=True)  # another workspace with the same namespace
    graph(other).add_node("stranger", "entity", properties={"name": "Stranger Things"})
    names(other)
    other.close()
    shutil.copy(path_of(other), mine)
    ws = Workspace.open(home=home)
    assert name_index.load(ws.index_files, DEFAULT) is None
    assert not names(ws).get("stranger things") and names(ws).as_dict() == rebuilt(ws)


def test_a_change_the_names_do_not_know_reads_every_node_again(home):
    ws = Workspace.open(home=home)
    held = names(ws)
    feed = name_index.NameFeed(DEFAULT)
    unknown = Change(seq=held.counter + 1, at="", actor="", op="nodes.rename", target="*")
    assert feed.apply(held, ws.store, [unknown]) is False
    harmless = [Change(seq=held.counter + 1, at="", actor="", op=op, target="*")
                for op in ("edges.put", "vectors.put", "record.put", "tombstones.put")]
    assert feed.apply(held, ws.store, harmless) is True and held.as_dict() == rebuilt(ws)


def test_a_principal_finds_only_the_names_of_graphs_it_reads(home):
    ws = Workspace.open(home=home)
    everyone = ContextGraph(workspace=ws)  # unnamed: the whole workspace, the names of every namespace
    assert proximity.mentioned_nodes(everyone, "initech payroll and acme") == [
        "graph:hr/initech", "acme", "graph:hr/acme"]
    assert names(ws, None).source is None  # built now, then saved like the others
    reader = ContextGraph(workspace=ws, principal="reader")  # reads graph:default only
    assert proximity.mentioned_nodes(reader, "initech payroll and acme") == ["acme"]
    again = Workspace.open(home=home)
    assert names(again, None).source is not None and names(again, None).as_dict() == rebuilt(again, None)
    assert proximity.mentioned_nodes(ContextGraph(workspace=again, principal="reader"), "initech and acme") == ["acme"]


def test_drop_caches_zeroes_the_file_and_a_holder_builds_anew(home):
    ws = Workspace.open(home=home)
    held = names(ws)
    path = path_of(ws)
    with open(path, "rb") as fh:
        assert fh.read(len(MAGIC)) == MAGIC
    other = Workspace.open(home=home)
    mapped = names(other)
    assert mapped.intact()
    ws.drop_caches()
    assert not path.exists() and not mapped.intact() and held.source is not None
    fresh = names(other)  # the scrubbed mapping is dropped, the names read again and saved
    assert fresh is not mapped and fresh.source is None and fresh.as_dict() == rebuilt(other) and path.exists()
