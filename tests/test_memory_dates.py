"""Time in memory search (issue 11 s5, memory/dates.py): memories that state when something happened, and dates
the query names resolved against each memory's date and its relative expressions."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from agentcontext.engine.fusion import FusionWeights
from agentcontext.memory import AgentMemory
from agentcontext.memory.dates import (LAST_MONTH, LAST_YEAR, NO_MONTH, RECENT, TIMED, asks_when, date_matches,
                                       month_numbers, named_dates, time_refs)
from agentcontext.vector_store import VectorStore

OFF = replace(FusionWeights(), timed=0.0, when=0.0, date=0.0)


def test_time_expressions_and_named_dates():
    assert time_refs("I went to a support group yesterday and it was powerful.") == TIMED | RECENT
    assert time_refs("My colleagues and I went to a convention last month.") == TIMED | LAST_MONTH
    assert time_refs("I painted that lake sunrise last year!") == TIMED | LAST_YEAR
    assert time_refs("I've had them for 3 years now, since 2019.") == TIMED
    assert time_refs("Wow, that looks great! Thanks!") == 0 and time_refs(None) == 0
    assert asks_when("When did Caroline go to the support group?") and asks_when("How long has Nate had turtles?")
    assert not asks_when("What did Caroline research?")
    assert named_dates("What did John attend in March 2023?") == [(2023, 3)]
    assert named_dates("Who did Maria have dinner with on May 3, 2023?") == [(2023, 5)]
    assert named_dates("What did Melanie paint in 2022?") == [(2022, None)]
    assert named_dates("What may Jon open next?") == []  # "may" the verb is no month
    assert month_numbers("2023-03-05T10:00:00") == (2023 * 12 + 2, 2023 * 12 + 1)  # and a week before: February
    assert month_numbers("not a date") == (NO_MONTH, NO_MONTH) == month_numbers(None)


def test_dates_resolve_relative_expressions_against_the_memory_date():
    months = [month_numbers(d) for d in ("2023-04-18", "2023-03-10", "2023-04-18", "2023-04-03", "")]
    own = np.array([m for m, _ in months], dtype=np.int32)
    before = np.array([b for _, b in months], dtype=np.int32)
    refs = np.array([time_refs(t) for t in ("We went last month.", "A fine day.", "A fine day.",
                                            "I ran a race last Saturday.", "last month")], dtype=np.uint8)
    # March 2023: "last month" written in April, a memory of March itself, a race in the week before 3 April;
    # not a plain April memory, not a memory without a date
    assert date_matches([(2023, 3)], own, before, refs).tolist() == [1, 1, 0, 1, 0]
    assert date_matches([(2022, None)], own, before, refs).tolist() == [0, 0, 0, 0, 0]
    assert date_matches([(None, 4)], own, before, refs).tolist() == [1, 0, 1, 1, 0]


@pytest.fixture(scope="module")
def memory():
    m = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=None)
    m.batch_store([
        {"content": "My colleagues and I went to a tech convention together.", "created_at": "2023-06-20T10:00:00",
         "metadata": {"n": "june"}},
        {"content": "My colleagues and I went to a tech convention together last month.",
         "created_at": "2023-04-18T10:00:00", "metadata": {"n": "april, last month"}},
        {"content": "The support group was such a powerful place, everyone was so kind.",
         "created_at": "2023-05-08T10:00:00", "metadata": {"n": "chat"}},
        {"content": "I went to the support group yesterday, everyone was so kind.",
         "created_at": "2023-05-08T10:00:00", "metadata": {"n": "event"}},
    ])
    yield m
    m.workspace.close()


def order(memory: AgentMemory, query: str, weights: FusionWeights) -> list[str]:
    memory.weights = weights
    try:
        return [r["metadata"]["n"] for r in memory.retrieve(query, max_results=4)]
    finally:
        memory.weights = FusionWeights()


def test_a_named_month_finds_the_memory_whose_event_fell_in_it(memory):
    query = "What did I attend with my colleagues in March 2023?"
    found = memory.retrieve(query, max_results=4)
    assert found[0]["metadata"]["n"] == "april, last month"  # its "last month" is March 2023
    assert found[0]["signals"]["date"] == 1.0 and "date" not in found[1]["signals"]
    # without the date signal the two conventions are near ties; the date signal is what sets "april" apart
    memory.weights = OFF
    try:
        off = {r["metadata"]["n"]: r["score"] for r in memory.retrieve(query, max_results=4)}
    finally:
        memory.weights = FusionWeights()
    assert abs(off["june"] - off["april, last month"]) < 0.01
    assert found[0]["score"] - found[1]["score"] > 0.05


def test_a_memory_that_states_when_gains_its_weights_in_cosine_units():
    """``timed`` for every query, ``when`` on top for a question that asks when: exactly their weights on the fused
    value (the logit of the score, divided by the calibration's scale) when the lifts are ungated, their weights
    times the gate of the memory's content value when gated (engine/fusion.py); a memory without a time expression:
    none."""
    m = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=None)
    texts = {"chat": "That support group sounds like a powerful place to be.",
             "event": "Yesterday I joined a meeting for trans people, it was powerful."}
    m.batch_store([{"content": t, "created_at": "2023-05-08T10:00:00", "metadata": {"n": n}} for n, t in texts.items()])
    try:
        for w in (replace(FusionWeights(), when=0.05, lift_gate=None), replace(FusionWeights(), when=0.05)):
            for query, gain in (("When did Caroline go to the support group?", w.timed + w.when),
                                ("Where did Caroline find a support group?", w.timed)):
                m.weights = w
                on = {r["metadata"]["n"]: r for r in m.retrieve(query, max_results=2)}
                m.weights = replace(w, timed=0.0, when=0.0, date=0.0)
                off = {r["metadata"]["n"]: r for r in m.retrieve(query, max_results=2)}
                assert on["event"]["signals"]["timed"] == 1.0 and "timed" not in on["chat"]["signals"]
                content = (logit(off["event"]["score"]) - w.calibration.offset) / w.calibration.scale
                gate = float(w.gate(np.array([content]))[0])
                assert gate == 1.0 if w.lift_gate is None else 0.0 < gate < 1.0
                assert logit(on["event"]["score"]) - logit(off["event"]["score"]) == pytest.approx(
                    w.calibration.scale * gain * gate, abs=1e-3), query
                assert on["chat"]["score"] == pytest.approx(off["chat"]["score"])
    finally:
        m.workspace.close()


def logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


def test_search_adds_time_only_where_it_can_matter_and_ranks_as_if_everywhere(memory):
    """search() reads the time signals of the rows within their weights of the k-th best only (top_with_time); the
    ranking is the one every row's signals give."""
    from agentcontext.engine.fusion import fused_value
    from agentcontext.memory.search import gather, search

    index = memory._index()
    for query in ("What did I attend with my colleagues in March 2023?", "When did I go to the support group?",
                  "colleagues"):
        for k in (1, 2, 4):
            hits = search(memory.workspace, index, memory.namespace, query, k, None)
            sig = gather(memory.workspace, index, memory.namespace, query, None)
            full = fused_value(sig.values, FusionWeights())
            assert [h.id for h in hits] == [index.ids[i] for i in np.argsort(-full, kind="stable")[:k]], (query, k)


def test_the_pooled_top_k_equals_the_full_ranking_on_many_memories():
    """With many memories most rows never get their time signals read (only the first k, and the rows that state a
    time or whose own month the query names, within the weights of the floor): the ranking is still the full one,
    for every weighting, with and without filters (the candidate rows a subset)."""
    from agentcontext.engine.fusion import fused_value
    from agentcontext.memory.search import gather, search

    rng = np.random.default_rng(7)
    phrases = ["we went out", "I went there last month", "it rained yesterday", "back in 2022 it was fun",
               "in March we moved", "a quiet evening", "next month we fly", "last year was hard"]
    items = []
    for i in range(400):
        vector = rng.standard_normal(384).astype(np.float32)
        month = 1 + i % 12
        items.append({"content": f"{phrases[i % len(phrases)]} with item {i}", "user_id": f"u{i % 3}",
                      "vector": vector / np.linalg.norm(vector),
                      "created_at": f"{2022 + i % 2}-{month:02d}-{1 + i % 27:02d}T10:00:00"})
    m = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=None)
    try:
        m.batch_store(items)
        index = m._index()
        for weights in (FusionWeights(), replace(FusionWeights(), when=0.3, date=0.5, timed=0.2)):
            for query in ("What happened in March 2023?", "When did it rain?", "what did we do in 2022",
                          "which item in May", "a quiet evening"):
                for rows in (None, np.flatnonzero(np.arange(len(index)) % 3 == 1)):
                    for k in (1, 5, 20):
                        hits = search(m.workspace, index, m.namespace, query, k, rows, weights)
                        sig = gather(m.workspace, index, m.namespace, query, rows)
                        full = fused_value(sig.values, weights)
                        want = [index.ids[int(sig.rows[i])] for i in np.argsort(-full, kind="stable")[:k]]
                        assert [h.id for h in hits] == want, (query, k, weights)
    finally:
        m.workspace.close()


def test_time_bits_of_ascii_texts_lowered_are_the_case_insensitive_patterns_bits():
    """``time_refs`` matches an ASCII text lowered with case-sensitive patterns (twice as fast): the bits are those
    of the case-insensitive patterns on every LoCoMo dev turn, on mixed-case and random texts, and a text that is
    not ASCII (where Unicode folds "ſ" to "s" and "K", Kelvin, to "k") is matched as before."""
    import json
    import random
    import re

    from agentcontext.eval_locomo import turn_text, turns
    from agentcontext.memory import dates

    from .test_locomo import DEV

    patterns = [(re.compile(p.pattern, re.IGNORECASE), bit) for p, bit in
                ((dates._RECENT, RECENT), (dates._LAST_MONTH, LAST_MONTH), (dates._NEXT_MONTH, dates.NEXT_MONTH),
                 (dates._LAST_YEAR, LAST_YEAR))]
    timed = re.compile(dates._TIMED.pattern, re.IGNORECASE)

    def reference(text: str) -> int:
        if not text or not timed.search(text):
            return 0
        return TIMED | sum(bit for p, bit in patterns if p.search(text))

    rng = random.Random(7)
    texts = [turn_text(t) for s in json.loads(DEV.read_text()) for t in turns(s)]
    pieces = ("Yesterday", "LAST MONTH", "next Month", "Last Year", "a few WEEKS ago", "ON FRIDAY", "in MAY 2023",
              "since", "Sinces", "xlast year", "last years", "1999", "20234", "the other day", "_today", "lately!")
    words = pieces + ("we", "went", "there", "and", "it", "was", "fun", "ſince", "K", "ago", "la", "st")
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    texts += ["ſince we met", "LAST YEAR", "laſt year", "Mañana, last week", "it was \u212aind of yesterday"]
    assert sum(1 for t in texts if reference(t)) > 1000
    assert [time_refs(t) for t in texts] == [reference(t) for t in texts]
    assert time_refs("ſince we met") == TIMED and time_refs("laſt year") == TIMED | LAST_YEAR  # Unicode folding
