"""VECTOR_SEARCH: nearest() and similarities(), dense search in the store, and term_counts() (only stores that
declare it)."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import content_hash
from agentcontext.store import Capability

from . import needs
from .data import held, node


def unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def fill(store, n: int = 60, dim: int = 16) -> np.ndarray:
    rng = np.random.default_rng(3)
    vectors = unit(rng, n, dim)
    store.put_nodes([node(i, ns="ns:a" if i % 3 else "ns:b", kind="memory" if i % 2 else "doc",
                          title="Ann" if i % 4 else "Bob", tags=[f"c:{i % 5}"], embed_text=f"text {i}",
                          props={"metadata": {"type": "x" if i % 6 == 0 else "y"}}) for i in range(n)])
    store.put_vectors({content_hash(f"text {i}"): vectors[i] for i in range(n)}, "m")
    return vectors


def exact(vectors: np.ndarray, query: np.ndarray, keep, k: int) -> list[str]:
    scores = vectors @ query  # vectors as the store holds them (data.held)
    rows = [i for i in np.argsort(-scores, kind="stable") if keep(i)]
    return [f"n{i}" for i in rows[:k]]


@needs(Capability.VECTOR_SEARCH)
def test_nearest_ranks_by_inner_product_under_every_filter(store):
    vectors = held(store, fill(store))
    query = vectors[7] + 0.05
    hits = store.nearest(query, "m", 5)
    assert [h[0] for h in hits] == exact(vectors, query, lambda i: True, 5)
    assert hits[0][1] == pytest.approx(float(vectors[7] @ query), abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    cases = {
        "namespace": ({"namespace": "ns:b"}, lambda i: i % 3 == 0),
        "kind": ({"kind": "memory", "namespace": ["ns:a", "ns:b"]}, lambda i: i % 2 == 1),
        "tags": ({"tags": ["c:2"]}, lambda i: i % 5 == 2),
        "props": ({"props": {"metadata": {"type": "x"}}}, lambda i: i % 6 == 0),
        "titles": ({"titles": ["Bob"]}, lambda i: i % 4 == 0),
        "no titles": ({"titles": []}, lambda i: False),
    }
    for name, (filters, keep) in cases.items():
        assert [h[0] for h in store.nearest(query, "m", 4, **filters)] == exact(vectors, query, keep, 4), name


@needs(Capability.VECTOR_SEARCH)
def test_nearest_skips_retracted_other_models_and_dimensions(store):
    vectors = fill(store, n=12)
    query = vectors[4]
    store.retract_nodes(["n4"])
    assert "n4" not in [h[0] for h in store.nearest(query, "m", 12)]
    assert len(store.nearest(query, "m", 100)) == 11 and store.nearest(query, "m", 0) == []
    assert store.nearest(query, "other-model", 5) == []
    assert store.nearest(np.ones(8, dtype=np.float32), "m", 5) == []  # no vector of that dimension
    store.purge_nodes(["n5"])
    assert "n5" not in [h[0] for h in store.nearest(vectors[5], "m", 12)]
    with pytest.raises(ValidationError):
        store.nearest(np.ones((2, 16), dtype=np.float32), "m", 3)


@needs(Capability.VECTOR_SEARCH)
def test_nodes_sharing_a_text_share_its_vector(store):
    store.put_nodes([node(1, embed_text="same"), node(2, embed_text="same"), node(3, embed_text="other")])
    store.put_vectors({content_hash("same"): np.array([1, 0], dtype=np.float32),
                       content_hash("other"): np.array([0, 1], dtype=np.float32)}, "m")
    hits = store.nearest(np.array([1, 0], dtype=np.float32), "m", 3)
    assert [h[0] for h in hits] == ["n1", "n2", "n3"] and [round(s, 5) for _, s in hits] == [1.0, 1.0, 0.0]


@needs(Capability.VECTOR_SEARCH)
def test_similarities_are_computed_in_the_store(store):
    vectors = held(store, fill(store, n=6))
    hashes = [content_hash(f"text {i}") for i in range(6)]
    got = store.similarities(vectors[2], "m", [*hashes, hashes[0], "no-such-hash"])
    assert set(got) == set(hashes)
    assert all(got[h] == pytest.approx(float(vectors[i] @ vectors[2]), abs=1e-5) for i, h in enumerate(hashes))
    assert store.similarities(vectors[2], "m", []) == {} and store.similarities(vectors[2], "x", hashes) == {}
    assert store.similarities(np.ones(3, dtype=np.float32), "m", hashes) == {}  # another dimension: no score


@needs(Capability.VECTOR_SEARCH)
def test_similarities_of_hashes_holding_separators(store):
    odd = {"a,b": np.array([1, 0], dtype=np.float32), "c\x1fd": np.array([0, 1], dtype=np.float32),
           "e f'": np.array([0.6, 0.8], dtype=np.float32)}
    store.put_vectors(odd, "m")
    query = np.array([1, 0], dtype=np.float32)
    got = store.similarities(query, "m", ["a,b", "e f'", "a", "b"])  # one list of plain text
    assert {h: round(v, 3) for h, v in got.items()} == {"a,b": 1.0, "e f'": 0.6}  # 0.6: 0.60009765625 in float16
    got = store.similarities(query, "m", list(odd))  # one of them holds the unit separator
    assert {h: round(v, 3) for h, v in got.items()} == {"a,b": 1.0, "c\x1fd": 0.0, "e f'": 0.6}


@needs(Capability.VECTOR_SEARCH)
def test_a_new_model_gets_searched_too(store):
    store.put_nodes([node(1, embed_text="a"), node(2, embed_text="b")])
    store.put_vectors({content_hash("a"): np.array([1, 0, 0], dtype=np.float32),
                       content_hash("b"): np.array([0, 1, 0], dtype=np.float32)}, "model-two")
    assert store.nearest(np.array([0, 1, 0], dtype=np.float32), "model-two", 1)[0][0] == "n2"
    assert store.nearest(np.array([0, 1, 0], dtype=np.float32), "m", 1) == []


@needs(Capability.VECTOR_SEARCH)
def test_holds_at_least_counts_a_namespaces_nodes_of_one_kind(store):
    fill(store, n=12)  # ns:a holds n1 n2 n4 n5 n7 n8 n10 n11: memories n1 n5 n7 n11
    assert store.holds_at_least(4, "ns:a", "memory")
    assert not store.holds_at_least(5, "ns:a", "memory")
    assert store.holds_at_least(2, "ns:b", "memory") and not store.holds_at_least(3, "ns:b", "memory")
    assert not store.holds_at_least(1, "ns:c", "memory") and store.holds_at_least(0, "ns:c", "memory")


@needs(Capability.VECTOR_SEARCH)
def test_term_counts_count_the_rows_holding_each_word_as_the_text_search_does(store):
    store.put_nodes([node(i, title="", content=f"record {i}" + (" billing" if i % 4 == 0 else "")
                          + (" invoices" if i == 3 else "")) for i in range(12)])
    store.put_nodes([node(20, title="", content="invoice overdue")])
    store.retract_nodes(["n20"])  # a retracted row is not in the text index
    rows, counts = store.term_counts("Billing records, invoice and the zebra")
    assert rows == 12
    assert counts == {"billing": 3, "records": 12, "invoice": 1, "zebra": 0}  # stemmed as it searches; "the" has none
    assert store.term_counts("the and")[1] == {}
    assert store.term_counts("") == (0, {})


@needs(Capability.VECTOR_DELTA)
def test_vectors_in_the_delta_are_found_and_a_fold_moves_them_once(store):
    vectors = fill(store, n=30)
    pending = store.pending_vectors()
    assert 0 <= pending <= 30
    before = [h[0] for h in store.nearest(vectors[9], "m", 5)]
    receipt = store.fold(chunk=7)
    assert receipt["folded"] == pending and receipt["pending"] == 0 and store.pending_vectors() == 0
    assert store.fold()["folded"] == 0
    assert [h[0] for h in store.nearest(vectors[9], "m", 5)] == before == exact(vectors, vectors[9], lambda i: True, 5)


@needs(Capability.VECTOR_DELTA)
def test_a_pack_keeps_what_is_searched_and_scores_the_rest_nearly_the_same(store):
    vectors = fill(store, n=20)
    rng = np.random.default_rng(11)
    scored = {f"ctx{i}": v / np.linalg.norm(v) for i, v in enumerate(rng.standard_normal((6, 16)).astype(np.float32))}
    store.put_vectors(scored, "m")  # no node's text: only ever scored (a turn's context vector), never searched
    before = [h[0] for h in store.nearest(vectors[4], "m", 5)]
    receipt = store.pack()
    assert receipt["packed"] >= len(scored) and store.pack()["packed"] == 0  # each copy once; then nothing left
    assert [h[0] for h in store.nearest(vectors[4], "m", 5)] == before
    q = vectors[4]
    got = store.similarities(q, "m", list(scored))
    assert set(got) == set(scored)
    assert all(abs(got[h] - float(v @ q)) < 0.02 for h, v in scored.items())
