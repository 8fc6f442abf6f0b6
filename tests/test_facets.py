"""Issue 29, candidate generation for multi-hop questions: a question's facets (memory/facets.py), their candidates
merged into memory search's order (memory/facet_search.py, ``ranker="facets"``), honoured by the in-process index and
by a store that searches itself (PostgreSQL). Real SQLite files, the real embedding model, the real server."""
from __future__ import annotations

import pytest

from agentcontext.engine.fusion import RELEVANCE, FusionWeights
from agentcontext.engine.retrieval_config import RetrievalConfig
from agentcontext.errors import ValidationError
from agentcontext.memory import AgentMemory
from agentcontext.memory.facet_search import KEEP, POOL, content_only, merge, named, search_with_facets
from agentcontext.memory.facets import clauses, facets, time_phrase_removed
from agentcontext.memory.search import Hit, candidate_rows, search
from agentcontext.vector_store import VectorStore

CHAT = [("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
        ("Melanie", "That sounds amazing! What happened there?"),
        ("Caroline", "People shared their transgender stories; I felt accepted."),
        ("Melanie", "I painted a lake sunrise last year, it reminds me of calm."),
        ("Caroline", "I am planning to study counseling and mental health."),
        ("Melanie", "We went camping with the kids in the mountains last week."),
        ("Caroline", "My friends gave me a necklace from my grandma in Sweden."),
        ("Melanie", "Swimming with the kids is our favourite summer activity."),
        ("Caroline", "Did you go to the pottery workshop?"),
        ("Melanie", "Yes! We made our own plates, it was so fun."),
        ("Caroline", "I read a book about finding yourself, it was inspiring."),
        ("Melanie", "The kids loved the dinosaur exhibit at the museum."),
        ("Caroline", "I bought new running shoes for the marathon."),
        ("Melanie", "My husband and I adopted a puppy named Oscar."),
        ("Caroline", "Sweden was cold but beautiful in winter.")]
QUERIES = ["What did Melanie paint and where did she go camping?",
           "What types of pottery have Melanie and her kids made?",
           "When did Melanie go swimming after the museum trip?",
           "What did Caroline buy in May 2023?"]


def test_the_facets_of_sample_questions():
    texts = lambda q, s=(), k=False: [(f.text, f.speaker, f.kind) for f in facets(q, s, keywords=k)]  # noqa: E731
    assert texts("What do Jon and Gina both have in common?", ["Jon", "Gina"]) == [
        ("have in common", "Jon", "speaker"), ("have in common", "Gina", "speaker")]
    assert texts("When did Melanie go on a hike after the roadtrip?", ["Melanie"]) == [
        ("go on a hike", None, "clause"), ("the roadtrip", None, "clause")]
    assert texts("What types of pottery have Melanie and her kids made?", ["Melanie"]) == [
        ("types of pottery have", None, "clause"), ("her kids made", None, "clause")]
    assert texts("How many times has Melanie gone to the beach in 2023?") == [
        ("times has Melanie gone to the beach", None, "time")]
    assert texts("What activities does Melanie partake in?", ["Melanie"]) == []  # one facet: the question itself
    assert texts("What activities does Melanie partake in?", ["Melanie"], True) == [
        ("activities", None, "keyword"), ("partake", None, "keyword")]
    assert clauses("Did Jon and Gina both participate in dance competitions?", ["Jon", "Gina"]) == []
    assert time_phrase_removed("Where did Caroline move from 4 years ago?") == "Where did Caroline move"
    assert time_phrase_removed("What did John attend with his colleagues in March 2023?") == \
        "What did John attend with his colleagues"
    assert len(facets("a, b, c, d, e, f, g, h and i", keywords=True)) <= 6  # bounded


def _hit(i: str, value: float) -> Hit:
    return Hit(i, float(RELEVANCE(value)), {"dense": value})


def test_the_merge_keeps_the_first_hits_and_lifts_a_facet_candidate():
    question = [_hit(f"q{i}", 0.6 - 0.02 * i) for i in range(20)]
    facet = [_hit("new", 0.9), _hit("q15", 0.65)]  # 0.22 + 0.27 and 0.3 + 0.195: both above q9 (0.42)
    got = merge(question, [facet], 10, keep=KEEP, weight=0.3)
    ids = [h.id for h in got]
    assert ids[:KEEP] == [f"q{i}" for i in range(KEEP)]  # the question's first stay first
    assert "new" in ids and "q15" in ids and len(ids) == 10 and len(set(ids)) == 10
    new = got[ids.index("new")]
    assert new.score <= question[-1].score and new.signals["facet"] == pytest.approx(facet[0].score)
    assert [h.id for h in merge(question, [], 10)] == [h.id for h in question[:10]]  # no facet: as before
    assert RELEVANCE.value(RELEVANCE(0.37)) == pytest.approx(0.37)


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    store = VectorStore(home=tmp_path_factory.mktemp("facets") / ".agentcontext")
    m = AgentMemory(vector_store=store, max_memory_size=None)
    m.batch_store([{"content": t, "conversation_id": "c", "user_id": s, "metadata": {"speaker": s},
                    "created_at": f"2023-05-{1 + i // 4:02d}T10:00:00"} for i, (s, t) in enumerate(CHAT)])
    yield m
    store.close()


def _in_process(mem: AgentMemory):
    index = mem._index()
    rows = candidate_rows(index, None, None, None)
    return lambda text, k, weights: search(mem.workspace, index, mem.namespace, text, k, rows, weights)


def test_a_facets_memory_merges_the_facets_candidates(chat):
    mem = AgentMemory(workspace=chat.workspace, max_memory_size=None, ranker="facets")
    assert mem.ranker == "facets" and mem.config.echo["ranker"] == "facets"
    assert RetrievalConfig(ranker="facets").ranker == "facets"
    run = _in_process(mem)
    changed = 0
    for q in QUERIES:
        got = mem.results(q, max_results=10, count_use=False)
        want = search_with_facets(run, q, 10, mem.weights, lambda hits: ["Melanie", "Caroline"])
        assert [r.id for r in got] == [h.id for h in want]
        linear = [r.id for r in chat.results(q, max_results=10, count_use=False)]
        assert [r.id for r in got][:KEEP] == linear[:KEEP]
        changed += [r.id for r in got] != linear
    assert changed  # honoured, not accepted and ignored
    one = "What activities does Melanie partake in?"  # no facet: memory search's order
    assert [r.id for r in mem.results(one, max_results=10, count_use=False)] == \
        [r.id for r in chat.results(one, max_results=10, count_use=False)]


def test_an_unknown_ranker_names_the_facets_one():
    with pytest.raises(ValidationError, match="ranker must be one of linear, learned, facets"):
        RetrievalConfig(ranker="facet")


def test_the_speakers_a_question_names_leave_its_clauses():
    assert named("What did Melanie paint and where did she go camping?", ["Caroline", "Melanie", "", "Melanie"]) == \
        ["Melanie"]
    seen: list[str] = []

    def run(text, k, weights):
        seen.append(text)
        return [Hit(str(i), 0.5 - i / 100, {}) for i in range(k)]
    search_with_facets(run, "What types of pottery have Melanie and her kids made?", 10, FusionWeights(),
                       lambda hits: ["Melanie"])
    assert seen[1:] == ["types of pottery have", "her kids made"]


def test_content_only_weights_drop_every_lift():
    w = content_only(FusionWeights())
    assert (w.mention, w.timed, w.when, w.date, w.answer, w.near) == (0.0,) * 6 and w.dense == 1.0 and POOL >= 10


@pytest.mark.postgres
def test_a_postgresql_store_ranks_with_the_facets_as_the_index_does(pg_server, chat):
    """A store that searches itself: the facets' searches run on the server; the order equals the merge over the
    server's searches, and the in-process index's order on the same memories (the two stores' linear searches agree:
    "What did Caroline buy in May 2023?" differed until the in-process word counts held the summary's date words)."""
    from agentcontext.memory import server_search
    from agentcontext.store import open_store
    from agentcontext.workspace import Workspace

    ws = Workspace(open_store(pg_server.url("facets")))
    try:
        linear = AgentMemory(workspace=ws, max_memory_size=None)
        linear.batch_store([{"content": t, "conversation_id": "c", "user_id": s, "metadata": {"speaker": s},
                             "created_at": f"2023-05-{1 + i // 4:02d}T10:00:00"} for i, (s, t) in enumerate(CHAT)])
        mem = AgentMemory(workspace=ws, max_memory_size=None, ranker="facets")
        local = AgentMemory(workspace=chat.workspace, max_memory_size=None, ranker="facets")

        def run(text, k, weights):
            return server_search.search(ws, mem.namespace, text, k, None, None, None, {}, weights)

        def contents(results):
            return [r.content for r in results]

        for q in QUERIES:
            got = mem.results(q, max_results=10, count_use=False)
            want = search_with_facets(run, q, 10, mem.weights, lambda hits: ["Melanie", "Caroline"])
            assert [r.id for r in got] == [h.id for h in want]
            assert contents(linear.results(q, max_results=10, count_use=False)) == \
                contents(chat.results(q, max_results=10, count_use=False))
            assert contents(got) == contents(local.results(q, max_results=10, count_use=False))
    finally:
        ws.close()


def test_a_principal_without_read_gets_no_facet_search(tmp_path):
    """The facets' searches run behind the question's access check: a principal without read on the memory is
    refused (AccessDeniedError, audited) before any search, facets or not."""
    from agentcontext.errors import AccessDeniedError
    from agentcontext import access

    store = VectorStore(home=tmp_path / ".agentcontext")
    owner = AgentMemory(vector_store=store, max_memory_size=None)
    owner.store("Melanie painted a sunrise and went camping with her kids")
    access.grant(store.workspace, "reader", "memory:default", "read")  # someone else exists: every call checked
    stranger = AgentMemory(vector_store=store, max_memory_size=None, ranker="facets", principal="stranger")
    with pytest.raises(AccessDeniedError):
        stranger.retrieve("What did Melanie paint and where did she go camping?")
    reader = AgentMemory(vector_store=store, max_memory_size=None, ranker="facets", principal="reader")
    assert reader.retrieve("What did Melanie paint and where did she go camping?")
    assert "denied" in [r["outcome"] for r in store.workspace.store.audit(principal="stranger")]
