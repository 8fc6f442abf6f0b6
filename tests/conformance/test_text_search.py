"""text_search(): ranked, filtered, robust to any query text."""
from __future__ import annotations

from .data import node


def test_text_search_ranks_and_filters(store):
    store.put_nodes([node(1, content="the quick brown fox"), node(2, content="lazy dogs sleep"),
                     node(3, ns="ns:b", content="quick quick fox fox")])
    hits = store.text_search("quick fox", namespace="ns:a")
    assert [h[0] for h in hits] == ["n1"] and hits[0][1] > 0
    assert {h[0] for h in store.text_search("fox")} == {"n1", "n3"}
    assert store.text_search("!!!") == []
    store.retract_nodes(["n1"])
    assert [h[0] for h in store.text_search("fox")] == ["n3"]


def test_text_search_kind_filter_limit_and_stopwords(store):
    store.put_nodes([node(i, kind="a" if i % 2 else "b", content=f"apple number {i}") for i in range(6)])
    assert {h[0] for h in store.text_search("apple", kind="a")} == {"n1", "n3", "n5"}
    assert len(store.text_search("apple", limit=2)) == 2
    assert store.text_search("") == []
    store.put_nodes([node(9, key="design.agents", title="Agents", tags=["intent:design"], content="x")])
    assert store.text_search("agents")[0][0] == "n9"
    scores = [s for _, s in store.text_search("apple number")]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)


def test_text_search_ignores_terms_almost_every_row_has(store):
    store.put_nodes([node(i, content=f"agents handle record {i}" + (" billing" if i % 50 == 0 else ""))
                     for i in range(1200)])
    hits = store.text_search("agents billing", limit=100)
    assert hits and {h[0] for h in hits} == {f"n{i}" for i in range(0, 1200, 50)}
    assert len(store.text_search("agents", limit=5)) == 5  # a lone common term still searches


def test_updates_replace_the_indexed_text_and_query_syntax_is_just_text(store):
    store.put_nodes([node(1, title="Zebra", content="striped horse")])
    store.put_nodes([node(1, title="Okapi", content="forest giraffe")])
    assert store.text_search("zebra") == [] and [h[0] for h in store.text_search("giraffe")] == ["n1"]
    for nasty in ['"', "'", "a AND", "OR NOT", "(x", "x*", "col:val", "a | b & !c", "NEAR(a b)"]:
        assert isinstance(store.text_search(nasty), list)
    assert [h[0] for h in store.text_search("okapi", namespace=["ns:a", "ns:z"], kind=["doc"])] == ["n1"]


def test_phrase_search_finds_the_words_in_a_row(store):
    store.put_nodes([node(1, content="Jane Roe asked for a refund"), node(2, content="Roe, Jane: moved away"),
                     node(3, ns="ns:b", title="jane roe's file", content="x"), node(4, content="janet roes")])
    assert store.phrase_search("Jane Roe") == ["n1", "n3"]
    assert store.phrase_search("jane roe", namespace="ns:a") == ["n1"]
    assert store.phrase_search("jane roe", kind="other") == [] and store.phrase_search("  ") == []
    assert store.phrase_search("jane roe", limit=1) == ["n1"]
    assert store.phrase_search('customer-4471 "quoted"') == []  # any text is safe
    store.retract_nodes(["n1"])
    assert store.phrase_search("Jane Roe") == ["n3"]


def test_common_sets_how_common_a_dropped_term_is(store):
    store.put_nodes([node(i, content=f"shared words {i}" + (" rare" if i < 30 else "") + (" mid" if i < 300 else ""))
                     for i in range(1200)])
    assert len(store.text_search("mid rare", limit=1000)) == 300  # both kept: neither is in half the rows
    assert {h[0] for h in store.text_search("mid rare", limit=1000, common=0.1)} == {f"n{i}" for i in range(30)}
    assert len(store.text_search("mid", limit=1000, common=0.01)) == 300  # a lone term always searches


def test_ids_score_only_those_nodes_on_the_same_scale(store):
    store.put_nodes([node(i, content=f"river delta {'river ' * (i % 3)}{i}") for i in range(40)])
    every = dict(store.text_search("river delta", limit=100))
    some = store.text_search("river delta", limit=100, ids=["n3", "n7", "n30", "missing"])
    assert [h[0] for h in some] == sorted(["n3", "n7", "n30"], key=lambda i: -every[i])
    assert all(abs(s - every[i]) < 1e-6 for i, s in some)
    assert store.text_search("river", ids=[]) == [] and len(store.text_search("river", ids=["n1", "n2"], limit=1)) == 1
