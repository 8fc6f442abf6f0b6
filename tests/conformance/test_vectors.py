"""put_vectors(), get_vectors(), delete_vectors(), missing_vectors(), load_vectors()."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import content_hash

from .data import held, node


def test_vectors_cache_and_missing(store):
    store.put_nodes([node(1, embed_text="alpha"), node(2, embed_text="beta"), node(3)])
    missing = dict(store.missing_vectors("m"))
    assert set(missing.values()) == {"alpha", "beta"}
    store.put_vectors({content_hash("alpha"): np.ones(4, dtype=np.float32)}, "m")
    assert list(dict(store.missing_vectors("m")).values()) == ["beta"]
    store.put_vectors({content_hash("beta"): np.zeros(4, dtype=np.float32)}, "m")
    ids, matrix = store.load_vectors("m", namespace="ns:a")
    assert ids == ["n1", "n2"] and matrix.shape == (2, 4) and matrix.dtype == np.float32
    got = store.get_vectors([content_hash("alpha")], "m")
    assert np.allclose(got[content_hash("alpha")], 1.0)


def test_shared_vector_survives_purge_and_dimensions_must_agree(store):
    store.put_nodes([node(1, embed_text="same"), node(2, embed_text="same"), node(3, embed_text="other")])
    store.put_vectors({content_hash("same"): np.arange(3, dtype=np.float32),
                       content_hash("other"): np.ones(2, dtype=np.float32)}, "m")
    with pytest.raises(ValidationError):
        store.load_vectors("m")
    assert store.purge_nodes(["n1"])["vectors"] == 0  # n2 still uses it
    assert np.array_equal(store.get_vectors([content_hash("same")], "m")[content_hash("same")], [0, 1, 2])
    store.purge_nodes(["n3"])
    ids, matrix = store.load_vectors("m")
    assert ids == ["n2"] and matrix.tolist() == [[0.0, 1.0, 2.0]]
    none_ids, empty = store.load_vectors("other-model")
    assert none_ids == [] and empty.shape == (0, 0) and empty.dtype == np.float32


def test_delete_vectors_every_model(store):
    h = content_hash("x")
    store.put_vectors({h: np.ones(2, dtype=np.float32)}, "m1")
    store.put_vectors({h: np.ones(3, dtype=np.float32), content_hash("y"): np.ones(3, dtype=np.float32)}, "m2")
    c0 = store.change_counter()
    assert store.delete_vectors([h, h, content_hash("nope")]) == 2
    assert store.get_vectors([h], "m1") == {} and list(store.get_vectors([content_hash("y")], "m2")) == [
        content_hash("y")]
    assert store.change_counter() > c0 and store.delete_vectors([h]) == 0


def test_values_round_trip_exactly_at_the_stores_precision_and_replace(store):
    rng = np.random.default_rng(1)
    vecs = {content_hash(f"t{i}"): rng.standard_normal(384).astype(np.float32) for i in range(1200)}
    assert store.put_vectors(vecs, "m") == 1200
    got = store.get_vectors(list(vecs), "m")  # more hashes than one statement takes
    assert len(got) == 1200 and all(np.array_equal(got[h], held(store, v)) and got[h].dtype == np.float32
                                    for h, v in vecs.items())
    h = next(iter(vecs))
    store.put_vectors({h: np.full(384, 0.5, dtype=np.float32)}, "m")  # the same key again: replaced
    assert np.all(store.get_vectors([h], "m")[h] == 0.5) and store.put_vectors({}, "m") == 0
    with pytest.raises(ValidationError):
        store.put_vectors({h: np.zeros((2, 2), dtype=np.float32)}, "m")


def test_load_filters_and_skips_retracted(store):
    store.put_nodes([node(1, embed_text="a"), node(2, kind="memory", embed_text="b"),
                     node(3, ns="ns:b", embed_text="c"), node(4, embed_text="d")])
    store.put_vectors({content_hash(t): np.full(2, i, dtype=np.float32) for i, t in enumerate("abcd")}, "m")
    store.retract_nodes(["n4"])
    assert store.load_vectors("m")[0] == ["n1", "n2", "n3"]
    assert store.load_vectors("m", namespace=["ns:a"], kind="memory")[0] == ["n2"]
    assert store.count_vectors("m") == 3 and store.count_vectors("m", namespace=["ns:a"], kind="memory") == 1
    assert store.count_vectors("m2") == 0
    assert store.missing_vectors("m2", namespace="ns:b") == [(content_hash("c"), "c")]
