"""Issue 29 (evidence across sessions): the bridge stage (memory/bridge.py, ``FusionWeights.bridge``, off by default):
the rare names of the first hits that the query does not hold pull up the other memories naming them. Real SQLite
files and the real embedding model."""
from __future__ import annotations

from dataclasses import replace

import pytest

from agentcontext.engine.fusion import FusionWeights
from agentcontext.memory import AgentMemory
from agentcontext.memory.bridge import BRIDGE, names, rare_names
from agentcontext.vector_store import VectorStore

TURNS = [("Ava", "I adopted a puppy last month, we named him Biscuit."),
         ("Ava", "My sister visited and we baked bread together."),
         ("Ava", "Work has been busy with the quarterly report."),
         ("Ava", "I repainted the kitchen a pale green."),
         ("Ava", "Biscuit learned to sit and fetch this week!"),
         ("Ava", "I finished a novel about sailors in the Arctic."),
         ("Ava", "The bakery on the corner closed for good."),
         ("Ava", "I started running in the mornings before work."),
         ("Ava", "My neighbour plays the violin every evening."),
         ("Ava", "We planted tomatoes and basil on the balcony."),
         ("Ava", "The train to the city was late again today."),
         ("Ava", "I signed up for a pottery class on Thursdays.")]
QUESTION = "What has Ava's puppy been doing?"
BRIDGED = TURNS[4][1]  # names the puppy by its name, not "puppy"


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    store = VectorStore(home=tmp_path_factory.mktemp("bridge") / ".agentcontext")
    m = AgentMemory(vector_store=store, max_memory_size=None)
    m.batch_store([{"content": t, "conversation_id": "c", "user_id": "u4" if t == BRIDGED else "u",
                    "metadata": {"speaker": s}} for s, t in TURNS])
    yield m
    store.close()


def test_rare_names():
    df = {"biscuit": 2, "arctic": 1, "sunday": 40}
    got = rare_names("Biscuit met Ava on Sunday in the Arctic. The end.", {"ava"}, df, 5)
    assert got == {"biscuit": "biscuit", "arctic": "arctic"}  # Ava skipped, Sunday common, The a stopword
    assert rare_names("Biscuit", set(), {"biscuit": 0}, 5) == {}  # a word no memory holds (not indexed) pulls nothing
    assert names("Work was long. Then Biscuit ran! So did Ava? yes Ava") == ["Work", "Then", "Biscuit", "So", "Ava",
                                                                               "Ava"]
    assert names("Work was long. Then Biscuit ran! So did Ava? yes Ava", first=False) == ["Biscuit", "Ava", "Ava"]


def test_the_bridge_pulls_up_the_memory_naming_the_first_hits_name(chat):
    """The question says "puppy"; the turn that names the puppy ("Biscuit") again shares no word with it. With the
    stage it ranks among the first three with the "bridge" signal; the stage is off by default (no such signal)."""
    plain = chat.retrieve(QUESTION, max_results=12)
    assert plain[0]["content"] == TURNS[0][1]
    assert not any("bridge" in h["signals"] for h in plain)
    before = [h["content"] for h in plain].index(BRIDGED)
    chat.weights = replace(FusionWeights(), bridge=BRIDGE)
    try:
        hits = chat.retrieve(QUESTION, max_results=5)
    finally:
        chat.weights = FusionWeights()
    rank = [h["content"] for h in hits]
    assert BRIDGED in rank[:3] and rank.index(BRIDGED) <= before, (rank, before)
    assert hits[rank.index(BRIDGED)]["signals"].get("bridge") == 1.0
    assert hits[0]["content"] == TURNS[0][1]  # the bridged turn stays below the hit that named the name


def test_the_bridge_never_brings_a_memory_the_callers_filter_leaves_out(chat):
    """The bridged turn belongs to another user: a filter to the first hit's user keeps it out, bridge or not."""
    chat.weights = replace(FusionWeights(), bridge=BRIDGE)
    try:
        hits = [h["content"] for h in chat.retrieve(QUESTION, max_results=5, user_id="u")]
        assert hits and hits[0] == TURNS[0][1] and BRIDGED not in hits
        assert BRIDGED in [h["content"] for h in chat.retrieve(QUESTION, max_results=5)]  # unfiltered, it comes
    finally:
        chat.weights = FusionWeights()
