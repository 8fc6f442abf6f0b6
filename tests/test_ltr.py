"""Issue 29: the learned ranker (engine/ltr.py, memory/learned.py, ``AgentMemory(ranker="learned")``): the shipped
trees score deterministically, a memory without it ranks as before, a damaged weights file is refused with our error,
and the links a store that searches itself reads from the memories' ``prev`` equal the in-process index's. Real
SQLite files and the real embedding model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from agentcontext.engine import ltr
from agentcontext.engine.retrieval_config import RetrievalConfig
from agentcontext.errors import ValidationError
from agentcontext.memory import AgentMemory
from agentcontext.memory.dates import asks_when
from agentcontext.memory.learned import _links_by_props
from agentcontext.memory.search import candidate_rows, search
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
        ("Melanie", "The kids loved the dinosaur exhibit at the museum.")]
QUERIES = ["What activities does Melanie do with her kids?", "When did Caroline go to the support group?",
           "What did Melanie make at the pottery workshop?"]


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    store = VectorStore(home=tmp_path_factory.mktemp("ltr") / ".agentcontext")
    m = AgentMemory(vector_store=store, max_memory_size=None)
    m.batch_store([{"content": t, "conversation_id": "c", "user_id": s, "metadata": {"speaker": s},
                    "created_at": f"2023-05-{1 + i // 4:02d}T10:00:00"} for i, (s, t) in enumerate(CHAT)])
    yield m
    store.close()


def test_the_shipped_trees_load_and_score_the_same_every_time():
    trees = ltr.load()
    again = ltr.parse(json.loads(ltr.WEIGHTS.read_text(encoding="utf-8")))
    rng = np.random.default_rng(7)
    x = rng.normal(size=(50, len(ltr.FEATURES)))
    first = trees.score(x)
    assert np.array_equal(first, trees.score(x)) and np.array_equal(first, again.score(x))
    assert np.isfinite(first).all() and np.ptp(first) > 0  # the trees say something
    order, scores = ltr.ranked(trees, x)
    assert np.array_equal(scores, first[order]) and (np.diff(scores) <= 0).all()


def test_a_learned_memory_ranks_deterministically_and_reports_the_model(chat, tmp_path):
    learned = AgentMemory(workspace=chat.workspace, max_memory_size=None, ranker="learned")
    assert learned.ranker == "learned" and learned.config.echo["ranker"] == "learned"
    for q in QUERIES:
        a = learned.results(q, max_results=5, count_use=False)
        b = learned.results(q, max_results=5, count_use=False)
        assert [r.id for r in a] == [r.id for r in b] and len(a) == 5
        if asks_when(q):  # a question that asks when keeps the linear order (memory/learned.py)
            assert all("learned" not in r.signals for r in a)
            assert [r.id for r in a] == [r.id for r in chat.results(q, max_results=5, count_use=False)]
            continue
        assert all("learned" in r.signals for r in a)
        assert [r.signals["learned"] for r in a] == sorted((r.signals["learned"] for r in a), reverse=True)


def test_a_memory_without_the_ranker_ranks_as_before(chat):
    assert chat.ranker == "linear" and chat.config.echo["ranker"] == "linear"
    index = chat._index()
    for q in QUERIES:
        got = chat.results(q, max_results=5, count_use=False)
        linear = search(chat.workspace, index, chat.namespace, q, 5, candidate_rows(index, None, None, None),
                        chat.weights)
        assert [r.id for r in got] == [h.id for h in linear]
        assert all("learned" not in r.signals for r in got)


def test_an_unknown_ranker_is_refused():
    with pytest.raises(ValidationError, match="ranker must be one of linear, learned"):
        RetrievalConfig(ranker="neural")


@pytest.mark.parametrize("damage", ["checksum", "truncated", "format", "shape", "node"])
def test_a_damaged_weights_file_is_refused_with_our_error(tmp_path, damage):
    doc = json.loads(ltr.WEIGHTS.read_text(encoding="utf-8"))
    path = tmp_path / "ltr.json"
    text = json.dumps(doc)
    if damage == "checksum":
        doc["trees"]["value"][0][0] += 1.0
        text = json.dumps(doc)
    elif damage == "truncated":
        text = text[: len(text) // 2]
    elif damage == "format":
        doc["format"] = "something-else"
        text = json.dumps(doc)
    elif damage == "shape":
        doc["trees"]["value"] = doc["trees"]["value"][:-1]
        doc["sha256"] = ltr.digest(doc["trees"])
        text = json.dumps(doc)
    else:  # a node naming a feature the ranker does not have, checksum made to match
        doc["trees"]["feature"][0][0] = len(ltr.FEATURES) + 3
        doc["sha256"] = ltr.digest(doc["trees"])
        text = json.dumps(doc)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match="learned ranker's weights|damaged or not ours"):
        ltr.load(path)


def test_links_read_from_the_memories_prev_equal_the_index_links(chat):
    index = chat._index()
    hits = search(chat.workspace, index, chat.namespace, QUERIES[0], 10, candidate_rows(index, None, None, None),
                  chat.weights)
    ids = [h.id for h in hits]
    nodes = chat.workspace.store.get_nodes(ids)
    by_index = ltr.link_matrix([index.row[i] for i in ids], index.prev, index.next)
    assert np.array_equal(_links_by_props(chat.workspace.store, ids, {}), by_index)
    assert np.array_equal(_links_by_props(chat.workspace.store, ids, nodes), by_index)
    assert (by_index < ltr.FAR).sum() > len(ids)  # some hits are within three turns of each other


@pytest.mark.postgres
def test_a_postgresql_store_ranks_with_the_learned_ranker(pg_server):
    """A store that searches itself (no in-process index): the learned order over the server's first 80, its links
    read from the memories' ``prev``; deterministic, and the linear memory on the same store ranks as before."""
    from agentcontext.memory import server_search
    from agentcontext.memory.learned import learned
    from agentcontext.store import open_store
    from agentcontext.workspace import Workspace

    ws = Workspace(open_store(pg_server.url("ltr")))
    try:
        linear = AgentMemory(workspace=ws, max_memory_size=None)
        linear.batch_store([{"content": t, "conversation_id": "c", "user_id": s, "metadata": {"speaker": s},
                             "created_at": f"2023-05-{1 + i // 4:02d}T10:00:00"} for i, (s, t) in enumerate(CHAT)])
        mem = AgentMemory(workspace=ws, max_memory_size=None, ranker="learned")
        for q in QUERIES:
            got = mem.results(q, max_results=5, count_use=False)
            assert [r.id for r in got] == [r.id for r in mem.results(q, max_results=5, count_use=False)]
            hits = server_search.search(ws, mem.namespace, q, ltr.POOL, None, None, None, {}, mem.weights)
            want = learned(ws.store, q, hits, ws.store.get_nodes([h.id for h in hits]))[:5]
            assert [r.id for r in got] == [h.id for h in want]
            assert all(("learned" in r.signals) != asks_when(q) for r in got)
            plain = linear.results(q, max_results=5, count_use=False)
            five = server_search.search(ws, mem.namespace, q, 5, None, None, None, {}, mem.weights)
            assert [r.id for r in plain] == [h.id for h in five] and all("learned" not in r.signals for r in plain)
    finally:
        ws.close()
