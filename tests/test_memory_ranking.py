"""Memory search's ranking signals beyond time (issue 11 s5): a speaker the query names is the mention signal's, so
the dense query leaves the name out, and a turn is not found for holding the name rather than for what is asked."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from agentcontext.engine.fusion import FusionWeights, without_names
from agentcontext.memory import AgentMemory
from agentcontext.vector_store import VectorStore

TURNS = [("Caroline", "Hey Melanie! Thanks Melanie, so good to see you Melanie."),
         ("Melanie", "I love pottery, it calms me down."),
         ("Caroline", "I went to a support group yesterday."),
         ("Melanie", "We went camping with the kids last weekend."),
         ("Caroline", "Melanie, you are such a good friend.")]
QUERY = "What activities does Melanie enjoy?"


@pytest.fixture(scope="module")
def chat():
    m = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=None)
    m.batch_store([{"content": t, "conversation_id": "c", "metadata": {"speaker": s}} for s, t in TURNS])
    yield m
    m.workspace.close()


def test_without_names_drops_the_named_speakers_words_only():
    assert without_names("What are Melanie's pets' names?", ["Melanie"]) == "What are pets' names?"
    assert without_names("Did Jon and Gina both visit Rome?", ["Jon", "Gina"]) == "Did and both visit Rome?"
    assert without_names("Melanie", ["Melanie"]) == "Melanie"  # nothing would be left: the query as asked
    assert without_names("Who is the boss?", ["The Boss"]) == "Who is the"  # a stopword in a name stays
    assert without_names("What did Caroline do?", []) == "What did Caroline do?"


def test_the_dense_query_leaves_out_a_named_speaker_when_the_mention_is_weighed(chat):
    ws = chat.workspace
    stripped, asked = ws.embed_query("What activities does enjoy?"), ws.embed_query(QUERY)
    own = {r["content"]: r for r in chat.retrieve(QUERY, max_results=5)}
    chat.weights = replace(FusionWeights(), mention=0.0)  # no mention signal: the name is part of the meaning
    try:
        kept = {r["content"]: r for r in chat.retrieve(QUERY, max_results=5)}
    finally:
        chat.weights = FusionWeights()
    vectors = {n.content: v for n in ws.store.find_nodes(kind="memory")
               for v in [ws.store.get_vectors([n.embed_hash], ws.model_name)[n.embed_hash]]}
    for text, hit in own.items():
        assert hit["signals"]["dense"] == pytest.approx(float(np.dot(vectors[text], stripped)), abs=1e-5)
        assert kept[text]["signals"]["dense"] == pytest.approx(float(np.dot(vectors[text], asked)), abs=1e-5)
    greeting = TURNS[0][1]  # holds the name three times and nothing the query asks about
    assert own[greeting]["signals"]["dense"] < kept[greeting]["signals"]["dense"] - 0.1
    ranked = list(own)
    assert set(ranked[:2]) == {TURNS[1][1], TURNS[3][1]} and ranked.index(greeting) > 2


def test_each_hit_reports_its_own_time_signal_when_every_memory_comes_back(chat):
    for query in (QUERY, "When did Caroline go to the support group?"):
        for hit in chat.retrieve(query, max_results=10):
            states_time = any(w in hit["content"] for w in ("yesterday", "last weekend"))
            assert ("timed" in hit["signals"]) == states_time, (query, hit["content"])


def test_the_mention_lifts_a_memory_as_much_as_its_content_is_relevant(chat):
    """Issue 13 s4, a score means relevant: the mention (and time) lifts count in proportion to the gate of the
    memory's content value (FusionWeights.lift_gate, engine/fusion.py), so the speaker a query names still comes first,
    but the less relevant the memory, the less the mention adds to its score; ungated it adds its whole weight."""
    def logit(p: float) -> float:
        return float(np.log(p / (1.0 - p)))

    w = FusionWeights()
    # scores below 1 (an unrelated query, "What does Melanie know about tax law?", scores every memory about 0.02
    # since the name left the keyword query: its order is noise, test_a_named_speakers_unrelated_memories_...)
    for query in ("What hobbies does Melanie have?", "Where is Melanie's bread recipe?"):
        gains = []
        for weights in (w, replace(w, lift_gate=None)):
            chat.weights = weights
            on = {r["content"]: r for r in chat.retrieve(query, max_results=5)}
            chat.weights = replace(weights, mention=1e-12, timed=0.0, date=0.0)  # (0 would put the name back in)
            off = {r["content"]: r for r in chat.retrieve(query, max_results=5)}
            chat.weights = FusionWeights()
            assert max(on.values(), key=lambda h: h["score"])["metadata"]["speaker"] == "Melanie"
            for text in (TURNS[1][1], TURNS[3][1]):  # Melanie's
                content = (logit(off[text]["score"]) - w.calibration.offset) / w.calibration.scale
                lift = (w.mention + (w.timed if "timed" in on[text]["signals"] else 0.0))
                gate = float(weights.gate(np.array([content]))[0])
                assert logit(on[text]["score"]) - logit(off[text]["score"]) == pytest.approx(
                    w.calibration.scale * lift * gate, abs=1e-3), (query, text)
                gains.append(gate)
        gated, ungated = gains[:2], gains[2:]
        assert ungated == [1.0, 1.0] and all(0.0 < g < 1.0 for g in gated)


CHAT_B = [("Caroline", "Hey Melanie! So good to see you again."),
          ("Melanie", "I love pottery, it calms me down after work."),
          ("Caroline", "I went to a support group yesterday."),
          ("Melanie", "We went camping with the kids last weekend."),
          ("Caroline", "That sounds amazing, what did you eat?"),
          ("Melanie", "Just marshmallows by the fire, the kids loved it."),
          ("Caroline", "I am thinking about adopting a dog."),
          ("Melanie", "Oh, my sister has a golden retriever, he is lovely."),
          ("Melanie", "I painted a sunset last month and hung it in the hall.")]
RELEVANT = 0.5  # the calibrated score of a memory as typical of evidence as of the other turns (engine/fusion.py)


def test_a_named_speakers_unrelated_memories_score_below_relevant_and_related_ones_above(tmp_path):
    """Issue 13 s4 / 11 s5, a score means relevant: a query naming a speaker lifts that speaker's memories only as
    much as they are related to what it asks. The speaker's name is in the text index with each of their memories, so
    the name is left out of the keyword query as well as the dense one (else every memory of theirs shares a keyword
    with the question and the gate opens: 0.99 for each of Melanie's turns below)."""
    store = VectorStore(home=tmp_path / ".agentcontext")  # a real SQLite file and the real embedding model
    try:
        m = AgentMemory(vector_store=store, max_memory_size=None)
        m.batch_store([{"content": t, "conversation_id": "c", "metadata": {"speaker": s}} for s, t in CHAT_B])
        for query in ("What does Melanie know about tax law?", "Has Melanie ever repaired a diesel engine?",
                      "What is Melanie's opinion on cryptocurrency regulation?"):
            hits = m.retrieve(query, max_results=len(CHAT_B))
            assert len(hits) == len(CHAT_B)
            assert all(h["score"] < RELEVANT for h in hits), [(h["content"], round(h["score"], 3)) for h in hits]
            assert not any("keyword" in h["signals"] for h in hits), query  # the name is no keyword
        for query, answer in (("Where did Melanie go with the kids?", CHAT_B[3][1]),
                              ("What does Melanie do to relax?", CHAT_B[1][1]),
                              ("What did Melanie paint?", CHAT_B[8][1])):
            top = m.retrieve(query, max_results=3)
            assert top[0]["content"] == answer and top[0]["score"] > RELEVANT, (query, top)
            assert top[0]["signals"].get("mention") == 1.0
    finally:
        store.close()


TEAM_LOG = ["The team went bowling after work and Priya won.",
            "Our team lunch moved to the Thai place on Elm Street.",
            "The team offsite is in Lisbon this spring.",
            "Marco joined the team as a designer.",
            "The team agreed to stop meetings on Wednesdays.",
            "Half the team caught the flu after the conference.",
            "The team photo is on the wall by the kitchen.",
            "We planted tomatoes in the office garden.",
            "The espresso machine on the third floor is broken again.",
            "We shipped firmware version 2.1 to the routers on Monday.",
            "The database migration to PostgreSQL finished overnight without errors.",
            "Invoices for the Berlin client are due on the fifth."]


def test_a_memory_sharing_only_a_common_keyword_scores_below_relevant_and_a_related_one_above(tmp_path):
    """Issue 11 s5 (b), a score means relevant: the keyword signal is the share of the question's keywords the best
    text hit holds, each weighted by its idf (engine/fusion.py ``keyword_coverage``). "team", in half of these
    memories, was a third of the keywords of "What does the team think of the vintage synthesizer?" unweighted, so
    the best text hit (any "team" memory) had keyword content 0.33 whatever else it said: main scored "Marco joined
    the team as a designer." 0.75 for it, and the pension and opera questions' best memories 0.52 and 0.66."""
    store = VectorStore(home=tmp_path / ".agentcontext")  # a real SQLite file and the real embedding model
    try:
        m = AgentMemory(vector_store=store, max_memory_size=None)
        m.batch_store([{"content": t} for t in TEAM_LOG])
        for query in ("What does the team think of the vintage synthesizer?",
                      "How does the team feel about the pension reform?",
                      "What does the team think of the new opera season?"):
            hits = m.retrieve(query, max_results=len(TEAM_LOG))
            shared = [h for h in hits if "keyword" in h["signals"]]
            assert shared and all("team" in h["content"].lower() for h in shared), query  # one common keyword
            assert all(h["score"] < RELEVANT for h in hits), (query, [(h["content"], h["score"]) for h in hits])
        for query, answer in (("Which firmware version did the team ship to the routers?", TEAM_LOG[9]),
                              ("Did the team finish the PostgreSQL database migration?", TEAM_LOG[10]),
                              ("Where is the team offsite this spring?", TEAM_LOG[2])):
            top = m.retrieve(query, max_results=3)
            assert top[0]["content"] == answer and top[0]["score"] > RELEVANT, (query, top)
    finally:
        store.close()


FILM_CHAT = [("Nate", "Hey Joanna, how was your week?"),
             ("Joanna", "Busy! I started a pottery class with my neighbour."),
             ("Joanna", "And great news: the film I wrote the script for was shown on the big screen at the festival!"),
             ("Nate", "Wow, congratulations! When?"),
             ("Joanna", "The Sunday after my birthday."),
             ("Nate", "I went to the cinema yesterday and the screen was enormous."),
             ("Nate", "Last week I watched an old film on my laptop."),
             ("Nate", "Yesterday I saw a documentary on a giant screen at the museum."),
             ("Nate", "Last month my cousin's short film was shown at a school."),
             ("Nate", "I adopted a third turtle this morning."),
             ("Nate", "Last night the big screen at the sports bar showed the final."),
             ("Nate", "My brother's film club met on Tuesday to watch a classic."),
             ("Nate", "Two years ago I saw my first film at a drive-in."),
             ("Nate", "Last month I won a regional video game tournament."),
             ("Nate", "On Friday we watched the fireworks from the roof."),
             ("Nate", "The festival poster is hanging in my kitchen since last year.")]


def test_a_when_question_lifts_the_turns_around_its_best_hit_and_less_the_further_they_are(tmp_path):
    """Issue 11 s5 (a): the event is named in one turn, its time in the exchange around it ("When?" - "The Sunday
    after my birthday."), which shares no word with the question and says no time expression memory/dates.py reads.
    For a question that asks when, the turns within ``near_turns`` (3) of the best hit rank at least ``near ** d``
    (0.8 ** d) times its value, ``d`` links away (engine/fusion.py, memory/search.py ``near_best``): Nate's "When?"
    next to the event is 3rd of 16 (12th without the lift), the reply two turns away is lifted too, by less."""
    store = VectorStore(home=tmp_path / ".agentcontext")  # a real SQLite file and the real embedding model
    try:
        m = AgentMemory(vector_store=store, max_memory_size=None)
        m.batch_store([{"content": t, "conversation_id": "c", "metadata": {"speaker": s}} for s, t in FILM_CHAT])
        question, event = "When was Joanna's film shown on the big screen?", FILM_CHAT[2][1]
        asked, answer = FILM_CHAT[3][1], FILM_CHAT[4][1]  # one and two links after the event
        hits = m.retrieve(question, max_results=16)
        assert hits[0]["content"] == event and "near" not in hits[0]["signals"]
        rank = {h["content"]: i for i, h in enumerate(hits)}
        found = {h["content"]: h for h in hits}
        assert rank[asked] <= 2 and found[asked]["signals"].get("near") == 1.0, [h["content"] for h in hits]
        # the reply to "When?" is lifted too: by the answer stage (memory/answers.py: 0.75 of the best, above near ** 2)
        assert found[answer]["signals"].get("answer") == 1.0 and "near" not in found[answer]["signals"]
        assert found[asked]["score"] >= found[answer]["score"]  # near ** 1 of the best, then answer 0.75
        lifted = {h["content"] for h in hits if "near" in h["signals"]}  # only turns within three of the best hit
        assert lifted <= {t for _, t in FILM_CHAT[:6]} - {event}
        assert all(found[t]["score"] <= hits[0]["score"] for t in lifted)
        # without the lift "When?" is out of the first ten (and without the answer stage, memory/answers.py, which
        # lifts the reply to "When?" too)
        m.weights = replace(FusionWeights(), near=0.0, answer=0.0)
        try:
            plain = {h["content"]: h for h in m.retrieve(question, max_results=16)}
            assert asked not in [h["content"] for h in m.retrieve(question, max_results=10)]
            assert plain[answer]["score"] < found[answer]["score"]
        finally:
            m.weights = FusionWeights()
        where = m.retrieve("Where was Joanna's film shown?", max_results=7)  # a question that does not ask when
        assert where[0]["content"] == event and not any("near" in h["signals"] for h in where)
        # the reply to "When?" may come up as an answer (memory/answers.py), not by the near lift
        assert all(h["signals"].get("answer") == 1.0 for h in where if h["content"] == answer)
        m.weights = replace(FusionWeights(), answer=0.0)
        try:
            assert answer not in {h["content"] for h in m.retrieve("Where was Joanna's film shown?", max_results=7)}
        finally:
            m.weights = FusionWeights()
    finally:
        store.close()


def test_the_near_lift_never_brings_a_turn_the_callers_filter_leaves_out(tmp_path):
    """The turns around a when-question's best hit are linked across speakers and conversations; with a ``user_id``
    or ``conversation_id`` filter the lift only raises turns that pass it (memory/search.py ``near_best`` keeps to
    the candidate rows), so a filter is never widened by it."""
    store = VectorStore(home=tmp_path / ".agentcontext")
    try:
        m = AgentMemory(vector_store=store, max_memory_size=None)
        m.batch_store([{"content": t, "conversation_id": "c" if i < 8 else "d", "user_id": s,
                        "metadata": {"speaker": s}} for i, (s, t) in enumerate(FILM_CHAT)])
        question = "When was Joanna's film shown on the big screen?"
        joanna = {t for s, t in FILM_CHAT if s == "Joanna"}
        hits = m.retrieve(question, max_results=10, user_id="Joanna")
        assert hits and hits[0]["content"] == FILM_CHAT[2][1]
        assert {h["content"] for h in hits} <= joanna  # Nate's "When?" next to the event is not lifted in
        assert any("near" in h["signals"] for h in hits)  # the lift ran: Joanna's own turns around the event
        in_d = {t for i, (_, t) in enumerate(FILM_CHAT) if i >= 8}
        assert {h["content"] for h in m.retrieve(question, max_results=10, conversation_id="d")} <= in_d
    finally:
        store.close()
