"""The ranking and index engine: one ``top_k``, the live vector index and how it follows the store."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.engine.live import Column, LiveIndex, NodeVectors, follow
from agentcontext.engine.vectors import masked_top_k, top_k
from agentcontext.model import Node, content_hash
from agentcontext.store import SQLiteStore
from agentcontext.workspace import Workspace

MODEL = "test-model"


def unit(seed: int, d: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(d).astype(np.float32)
    return v / np.linalg.norm(v)


def put(store: SQLiteStore, nid: str, text: str, vec: np.ndarray | None, ns: str = "docs", kind: str = "doc",
        **props: object) -> None:
    if vec is not None:
        store.put_vectors({content_hash(text): vec}, MODEL)
    store.put_nodes([Node(id=nid, kind=kind, namespace=ns, key=nid, title=nid, content=text, props=dict(props),
                          embed_text=text)])


def test_top_k_is_the_prefix_of_a_stable_sort():
    rng = np.random.default_rng(1)
    for _ in range(500):
        n = int(rng.integers(1, 40))
        scores = rng.integers(0, 4, n).astype(np.float32)  # many ties
        k = int(rng.integers(0, 45))
        assert top_k(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()
        mask = rng.random(n) < 0.4
        rows = np.flatnonzero(mask)
        expected = rows[np.argsort(-scores[rows], kind="stable")][:k]
        assert masked_top_k(scores, k, mask).tolist() == expected.tolist()


def test_rows_grow_replace_drop_and_filter():
    index = LiveIndex(8, {"cat": Column(np.int32, -1, coded=True), "w": Column(np.float64, 0.0)}, capacity=2)
    index.put(["a", "b", "c"], np.stack([unit(1), unit(2), unit(3)]), {"cat": ["x", "y", None], "w": [1, 2, 3]})
    assert len(index) == 3 and index.capacity >= 3 and index.row == {"a": 0, "b": 1, "c": 2}
    assert index.search(unit(2), 1) == [("b", pytest.approx(1.0, abs=1e-6))]
    index.put(["b"], np.stack([unit(9)]), {"cat": ["x"], "w": [5]})  # replaced in place
    assert len(index) == 3 and index.column("w").tolist() == [1, 5, 3]
    assert index.mask(cat="x").tolist() == [True, True, False]
    assert index.mask(cat="nope").tolist() == [False, False, False]
    assert index.drop(["a", "zzz"]) == 1 and index.dead == 1
    assert not index.vectors[0].any()  # a dropped row keeps nothing of its vector
    assert sorted(i for i, _ in index.search(unit(1), 3)) == ["b", "c"]
    index.put(["a"], np.stack([unit(1)]), {"cat": ["y"], "w": [0]})  # revived
    assert index.dead == 0 and index.search(unit(1), 1)[0][0] == "a"
    with pytest.raises(ValueError, match="dimension"):
        index.put(["d"], np.zeros((1, 4), dtype=np.float32))


def test_node_vectors_follow_the_change_log_and_rebuild_when_they_must():
    store = SQLiteStore(":memory:")
    put(store, "a", "alpha", unit(1))
    put(store, "b", "beta", unit(2))
    put(store, "x", "elsewhere", unit(3), ns="other")
    feed = NodeVectors(MODEL, namespace="docs")
    index = follow(None, store, feed)
    assert index.ids == ["a", "b"] and index.counter == store.change_counter()
    put(store, "c", "gamma", unit(4))
    put(store, "y", "not mine", unit(5), ns="other")
    same = follow(index, store, feed)
    assert same is index and index.ids == ["a", "b", "c"]  # appended, not rebuilt
    store.retract_nodes(["a"])
    assert follow(index, store, feed) is index and index.search(unit(1), 3)[0][0] != "a"
    assert "a" not in [i for i, _ in index.search(unit(1), 3)]
    # a node stored before its vector waits, and is picked up when the vector arrives
    put(store, "d", "delta", None)
    follow(index, store, feed)
    assert "d" in index.pending and "d" not in [i for i, _ in index.search(unit(6), 5)]
    store.put_vectors({content_hash("delta"): unit(6)}, MODEL)
    follow(index, store, feed)
    assert index.search(unit(6), 1)[0][0] == "d" and not index.pending
    # a vector deletion is not logged per row: the index reloads
    store.delete_vectors([content_hash("gamma")])
    rebuilt = follow(index, store, feed)
    assert rebuilt is not index and sorted(rebuilt.ids) == ["b", "d"]
    # a store whose counter went backwards (another file in its place) is never trusted
    rebuilt.counter = store.change_counter() + 10
    assert follow(rebuilt, store, feed) is not rebuilt


def test_node_vectors_columns_and_embedding_of_nodes_stored_without_a_vector():
    store = SQLiteStore(":memory:")
    put(store, "a", "alpha", unit(1), category="ops")
    put(store, "b", "beta", None, category="hr")
    embedded: list[str] = []

    def embed(nodes):
        embedded.extend(n.id for n in nodes)
        return {n.id: unit(7) for n in nodes}

    feed = NodeVectors(MODEL, namespace="docs", columns={"category": Column(np.int32, -1, coded=True)},
                       values=lambda n: {"category": n.props["category"]}, embed=embed)
    index = follow(None, store, feed)
    assert embedded == ["b"] and sorted(index.ids) == ["a", "b"]
    assert index.search(unit(7), 1, mask=index.mask(category="hr"))[0][0] == "b"
    assert index.search(unit(7), 5, mask=index.mask(category="ops")) == [("a", pytest.approx(float(unit(1) @ unit(7))))]


def test_workspace_live_cache_serves_one_object_and_drop_caches_forgets_it():
    ws = Workspace(SQLiteStore(":memory:"))
    put(ws.store, "a", "alpha", unit(1))
    feed = NodeVectors(MODEL, namespace="docs")
    first = ws.live("t", lambda cur: follow(cur, ws.store, feed))
    put(ws.store, "b", "beta", unit(2))
    assert ws.live("t", lambda cur: follow(cur, ws.store, feed)) is first and first.ids == ["a", "b"]
    ws.drop_caches("t")
    assert ws.live("t", lambda cur: follow(cur, ws.store, feed)) is not first
    counted = ws.cached("c", lambda: object())
    assert ws.peek("c") is counted
    put(ws.store, "c", "gamma", unit(3))
    assert ws.peek("c") is None and ws.held("h", list) is ws.held("h", dict)


def test_faiss_backend_searches_the_same_live_rows():
    pytest.importorskip("faiss")
    from agentcontext import VectorStore

    found = {}
    for backend in ("inmemory", "faiss"):
        vs = VectorStore(backend=backend)
        model = vs.workspace.model_name
        vs.store.put_vectors({content_hash(f"text {i}"): unit(i, 384) for i in range(20)}, model)
        vs.store.put_nodes([Node(id=f"n{i}", kind="doc", namespace="docs", key=f"n{i}", content=f"text {i}",
                                 embed_text=f"text {i}") for i in range(20)])
        vs.store.retract_nodes(["n3"])
        found[backend] = [(r["id"], round(r["score"], 5)) for r in vs.search(unit(3, 384), limit=4)]
    assert found["faiss"] == found["inmemory"] and "n3" not in [i for i, _ in found["faiss"]]


def test_a_service_bound_to_a_bare_store_keeps_one_workspace():
    from agentcontext.decisions.recorder import DecisionRecorder

    store = SQLiteStore(":memory:")
    rec = DecisionRecorder(store)
    assert rec.ws is rec.ws and rec.ws.store is store  # its caches (the decision index) live as long as it does
    ws = Workspace(store)
    assert DecisionRecorder(ws).ws is ws
