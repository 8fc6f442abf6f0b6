"""Issue 29 (elliptical turns): a turn whose previous turn asks a question ranks at least ``FusionWeights.answer``
times the value of the turn the question followed up on, when that one is among the best k (memory/answers.py).
Real SQLite files and the real embedding model."""
from __future__ import annotations

from dataclasses import replace

import pytest

from agentcontext.engine.fusion import FusionWeights
from agentcontext.memory import AgentMemory
from agentcontext.memory.answers import asks, lifted
from agentcontext.vector_store import VectorStore

ICE_CREAM = [("Joanna", "Hey Nate, what did you get up to this weekend?"),
             ("Nate", "I made coconut milk ice cream at home for the first time!"),
             ("Joanna", "Looks delish! Glad you tried something new. What did you think of it?"),
             ("Nate", "Super good! It was rich and creamy - might be my new favorite snack!"),
             ("Joanna", "I should try that some time."),
             ("Nate", "I bought a new controller for my video games."),
             ("Nate", "My turtles love the new tank I set up for them."),
             ("Nate", "I think the tournament next month will be tough."),
             ("Nate", "I made dinner for my friends on Friday, pasta with tomato sauce."),
             ("Nate", "I made a playlist of my favourite game soundtracks."),
             ("Nate", "The ice on the lake near my place finally melted."),
             ("Nate", "I think about moving to a bigger apartment."),
             ("Nate", "I made a little shelf for my turtle food."),
             ("Nate", "Coconut water is what I drink after a long gaming session.")]
QUESTION = "What did Nate think of the coconut milk ice cream he made?"
REPLY = ICE_CREAM[3][1]


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    store = VectorStore(home=tmp_path_factory.mktemp("answers") / ".agentcontext")
    m = AgentMemory(vector_store=store, max_memory_size=None)
    m.batch_store([{"content": t, "conversation_id": "c", "user_id": s, "metadata": {"speaker": s}}
                   for s, t in ICE_CREAM])
    yield m
    store.close()


def test_asks_and_lifted():
    assert asks("What did you think of it?") and asks("Is that your third one? Wow") and not asks("Super good!")
    assert not asks("") and not asks(None)
    assert lifted(0.75, 0.2, 1.0) == 0.75 and lifted(0.75, 0.9, 1.0) == 0.9
    assert lifted(0.75, -0.1, -0.5) == -0.1  # a source of value <= 0 lifts nothing


def test_the_reply_to_a_question_is_found_through_the_turn_the_question_followed(chat):
    """The reply names nothing the question names ("Super good! It was rich and creamy"); the turn two before it
    does. With the answer stage it is among the first three, with the "answer" signal, below its source; without it,
    out of the first five."""
    hits = chat.retrieve(QUESTION, max_results=5)
    assert hits[0]["content"] == ICE_CREAM[1][1]
    rank = [h["content"] for h in hits]
    assert REPLY in rank[:3], rank
    reply = hits[rank.index(REPLY)]
    assert reply["signals"].get("answer") == 1.0 and reply["score"] <= hits[0]["score"]
    assert not any("answer" in h["signals"] for h in hits if h["content"] != REPLY)  # only a reply to a question
    chat.weights = replace(FusionWeights(), answer=0.0)
    try:
        assert REPLY not in [h["content"] for h in chat.retrieve(QUESTION, max_results=5)]
    finally:
        chat.weights = FusionWeights()


def test_the_answer_stage_never_brings_a_turn_the_callers_filter_leaves_out(chat):
    """The reply is Nate's, the question Joanna's: with a ``user_id`` filter the stage lifts only turns that pass it
    (answer_best keeps to the candidate rows)."""
    hits = chat.retrieve(QUESTION, max_results=5, user_id="Joanna")
    assert hits and all(h["content"] in {t for s, t in ICE_CREAM if s == "Joanna"} for h in hits)
    assert not any("answer" in h["signals"] for h in hits)
    nate = chat.retrieve(QUESTION, max_results=5, user_id="Nate")
    assert REPLY in [h["content"] for h in nate][:3]
