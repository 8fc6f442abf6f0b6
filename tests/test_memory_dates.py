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
    # without the date signal the two conventions are near ties, and the plain one (no "last month") is first
    assert order(memory, query, OFF)[0] == "june"


def test_a_memory_that_states_when_gains_its_weights_in_cosine_units():
    """``timed`` for every query, ``when`` on top for a question that asks when: exactly their weights on the fused
    value (the logit of the score, divided by the calibration's scale); a memory without a time expression: none."""
    m = AgentMemory(VectorStore(backend="inmemory"), max_memory_size=None)
    texts = {"chat": "That support group sounds like a powerful place to be.",
             "event": "Yesterday I joined a meeting for trans people, it was powerful."}
    m.batch_store([{"content": t, "created_at": "2023-05-08T10:00:00", "metadata": {"n": n}} for n, t in texts.items()])
    w = FusionWeights()
    try:
        for query, gain in (("When did Caroline go to the support group?", w.timed + w.when),
                            ("Where did Caroline find a support group?", w.timed)):
            on = {r["metadata"]["n"]: r for r in m.retrieve(query, max_results=2)}
            m.weights = OFF
            off = {r["metadata"]["n"]: r for r in m.retrieve(query, max_results=2)}
            m.weights = w
            assert on["event"]["signals"]["timed"] == 1.0 and "timed" not in on["chat"]["signals"]
            assert logit(on["event"]["score"]) - logit(off["event"]["score"]) == pytest.approx(
                w.calibration.scale * gain, abs=1e-3), query
            assert on["chat"]["score"] == pytest.approx(off["chat"]["score"])
    finally:
        m.workspace.close()


def logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


def test_search_adds_time_only_where_it_can_matter_and_ranks_as_if_everywhere(memory):
    """search() reads the time signals of the rows within their weights of the k-th best only (top_with_time); the
    ranking is the one every row's signals give."""
    from agentcontext.engine.fusion import fuse
    from agentcontext.memory.search import gather, search, weight_map

    index = memory._index()
    for query in ("What did I attend with my colleagues in March 2023?", "When did I go to the support group?",
                  "colleagues"):
        for k in (1, 2, 4):
            hits = search(memory.workspace, index, memory.namespace, query, k, None)
            sig = gather(memory.workspace, index, memory.namespace, query, None)
            full = fuse(sig.values, weight_map(FusionWeights()))
            assert [h.id for h in hits] == [index.ids[i] for i in np.argsort(-full, kind="stable")[:k]], (query, k)
