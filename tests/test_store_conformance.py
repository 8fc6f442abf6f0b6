"""Store conformance: every backend must pass these (SQLite file, SQLite in memory; PostgreSQL joins here)."""
from __future__ import annotations

import numpy as np
import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Edge, Node, content_hash


def _sqlite_file(tmp_path):
    from agentcontext.store import SQLiteStore

    return SQLiteStore(tmp_path / "s.db")


def _sqlite_memory(tmp_path):
    from agentcontext.store import SQLiteStore

    return SQLiteStore(":memory:")


def _postgres(tmp_path, request):
    from agentcontext.store import open_store

    return open_store(request.getfixturevalue("pg_url"))  # the session's real server, a fresh schema


BACKENDS = {"sqlite-file": _sqlite_file, "sqlite-memory": _sqlite_memory, "postgres": _postgres}


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path):
    make = BACKENDS[request.param]
    s = make(tmp_path, request) if request.param == "postgres" else make(tmp_path)
    yield s
    s.close()


def node(i, ns="ns:a", **kw):
    base = dict(id=f"n{i}", kind="doc", namespace=ns, key=f"k{i}", title=f"Title {i}", content=f"body {i}")
    base.update(kw)
    return Node(**base)


def test_put_get_version_and_noop(store):
    assert store.put_nodes([node(1), node(2)]) == [1, 1]
    assert store.put_nodes([node(1)]) == [1]  # unchanged: no new version
    assert store.put_nodes([node(1, title="New")]) == [2]
    got = store.get_node("n1")
    assert got.title == "New" and got.version == 2 and got.content_hash
    assert [v.title for v in store.node_versions("n1")] == ["Title 1", "New"]
    assert store.node_version("n1", 1).title == "Title 1"
    with pytest.raises(ValidationError):
        store.put_nodes([node(3), node(3)])


def test_find_filters_and_pagination(store):
    store.put_nodes([node(i, tags=["t:even"] if i % 2 == 0 else ["t:odd"], kind="a" if i < 5 else "b")
                     for i in range(10)])
    assert [n.key for n in store.find_nodes(namespace="ns:a", tags=["t:even"])] == ["k0", "k2", "k4", "k6", "k8"]
    assert store.count_nodes("ns:a", kind="a") == 5
    assert store.count_by_kind("ns:a") == {"a": 5, "b": 5}
    page = store.find_nodes(namespace="ns:a", order="key", offset=2, limit=3)
    assert [n.key for n in page] == ["k2", "k3", "k4"]
    assert [n.key for n in store.find_nodes(key_prefix="k1")] == ["k1"]
    assert [n.key for n in store.find_nodes(keys=["k3", "k7"])] == ["k3", "k7"]


def test_retract_keeps_history_and_as_of(store):
    store.put_nodes([node(1), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a")])
    before = store.edges(src="n1")[0].recorded_at
    assert store.retract_nodes(["n1"]) == 1
    assert store.get_node("n1") is None
    assert store.get_node("n1", include_retracted=True).retracted_at
    assert store.edges(src="n1") == []
    assert [n.id for n in store.find_nodes(namespace="ns:a", as_of=before)] == ["n1", "n2"]
    assert len(store.edges(src="n1", as_of=before)) == 1
    store.put_nodes([node(1)])  # revive
    assert store.get_node("n1").version == 3


def test_edges_idempotent_and_intervals(store):
    store.put_nodes([node(1), node(2), node(3)])
    e = Edge("n1", "depends_on", "n2", namespace="ns:a", weight=0.5)
    assert store.put_edges([e]) == 1
    assert store.put_edges([Edge("n1", "depends_on", "n2", namespace="ns:a", weight=0.5)]) == 0
    store.put_edges([Edge("n1", "depends_on", "n3", namespace="ns:a", position=1)])
    assert [x.dst for x in store.edges(src="n1")] == ["n2", "n3"]
    assert store.adjacency("ns:a", types=["depends_on"]) == [("n1", "n2", "depends_on", 0.5, 0),
                                                               ("n1", "n3", "depends_on", 1.0, 1)]
    assert store.retract_edges([e.id]) == 1
    assert [x.dst for x in store.edges(src="n1")] == ["n3"]
    assert store.count_edges("ns:a") == 1 and store.count_edges_by_type("ns:a") == {"depends_on": 1}
    assert [x.dst for x in store.edges(dst="n3", min_weight=0.9)] == ["n3"]


def test_text_search_ranks_and_filters(store):
    store.put_nodes([node(1, content="the quick brown fox"), node(2, content="lazy dogs sleep"),
                     node(3, ns="ns:b", content="quick quick fox fox")])
    hits = store.text_search("quick fox", namespace="ns:a")
    assert [h[0] for h in hits] == ["n1"] and hits[0][1] > 0
    assert {h[0] for h in store.text_search("fox")} == {"n1", "n3"}
    assert store.text_search("!!!") == []
    store.retract_nodes(["n1"])
    assert [h[0] for h in store.text_search("fox")] == ["n3"]


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


def test_purge_leaves_tombstone_and_nothing_else(store):
    store.put_nodes([node(1, content="secret text", embed_text="secret text"), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a")])
    store.put_vectors({content_hash("secret text"): np.ones(3, dtype=np.float32)}, "m")
    out = store.purge_nodes(["n1"], reason="gdpr")
    assert out["nodes"] == 1 and out["versions"] == 1 and out["edges"] == 1 and out["vectors"] == 1
    assert store.get_node("n1", include_retracted=True) is None and store.node_versions("n1") == []
    assert store.text_search("secret") == [] and store.get_vectors([content_hash("secret text")], "m") == {}
    assert store.tombstone("n1")["reason"] == "gdpr"
    assert [t["id"] for t in store.tombstones("ns:a")] == ["n1"]


def test_transaction_all_or_nothing(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_nodes([node(1)])
            store.put_edges([Edge("n1", "rel", "n9", namespace="ns:a")])
            raise RuntimeError("boom")
    assert store.get_node("n1") is None and store.edges(src="n1") == []


def test_records_audit_changes(store):
    c0 = store.change_counter()
    store.put_record("pack", "lib:x", {"a": 1})
    assert store.get_record("pack", "lib:x") == {"a": 1}
    assert store.list_records("pack", prefix="lib:") == [("lib:x", {"a": 1})]
    assert store.delete_record("pack", "lib:x") and store.get_record("pack", "lib:x") is None
    store.append_audit("alice", "doc.put", "lib:x/a", "ok", {"v": 1})
    store.append_audit("bob", "doc.put", "lib:x/a", "denied")
    assert [a["principal"] for a in store.audit(principal="bob")] == ["bob"]
    store.put_nodes([node(1)])
    changes = store.changes_since(c0)
    assert store.change_counter() > c0 and [c.op for c in changes][-1] == "node.put"
    assert store.check_integrity() == "ok"


def test_same_transaction_same_moment(store):
    with store.transaction():
        store.put_nodes([node(1)])
        store.put_edges([Edge("n1", "rel", "n1", namespace="ns:a")])
    assert store.get_node("n1").recorded_at == store.edges(src="n1")[0].recorded_at


def test_node_index_and_contents(store):
    store.put_nodes([node(2, tokens=7), node(1)])
    rows = store.node_index("ns:a")
    assert [r[0] for r in rows] == ["n1", "n2"] and rows[1][7] == 7
    old = store.node_versions("n1")[0].recorded_at
    store.put_nodes([node(1, content="changed")])
    assert store.get_contents(["n1", "n2"]) == {"n1": "changed", "n2": "body 2"}
    assert store.get_contents(["n1"], as_of=old) == {"n1": "body 1"}


def test_key_order_is_binary_codepoint_order(store):
    keys = ["b", "B", "a", "_x", "é", "a.b", "a_b", "a-b", "Z9", "z"]
    store.put_nodes([node(i, key=k) for i, k in enumerate(keys)])
    assert [n.key for n in store.find_nodes(namespace="ns:a")] == sorted(keys)
    assert [n.key for n in store.find_nodes(key_prefix="a")] == sorted(k for k in keys if k.startswith("a"))
    assert [r[1] for r in store.node_index("ns:a")] == sorted(keys)


def test_nested_transaction_joins_the_outer_one(store):
    with store.transaction():
        store.put_nodes([node(1)])
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.put_nodes([node(2)])
                raise RuntimeError("inner")
        store.put_nodes([node(3)])
    assert sorted(store.get_nodes(["n1", "n2", "n3"])) == ["n1", "n2", "n3"]  # no savepoint: the outer decides
    assert len({store.get_node(i).recorded_at for i in ["n1", "n2", "n3"]}) == 1
    with pytest.raises(RuntimeError):
        with store.transaction():
            with store.transaction():
                store.put_nodes([node(4)])
            raise RuntimeError("outer")
    assert store.get_node("n4") is None


def test_as_of_sees_old_versions_and_intervals(store):
    store.put_nodes([node(1, tags=["x", "y"]), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", weight=0.5)])
    t1 = store.edges(src="n1")[0].recorded_at
    store.put_nodes([node(1, title="Second", tags=["x"])])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", weight=0.9)])  # same edge, new interval
    assert store.get_node("n1", as_of=t1).title == "Title 1" and store.get_node("n1").title == "Second"
    assert [n.id for n in store.find_nodes(tags=["x", "y"])] == []
    assert [e.weight for e in store.edges(src="n1", as_of=t1)] == [0.5]
    assert [e.weight for e in store.edges(src="n1")] == [0.9]
    history = store.edge_history("ns:a")
    assert [(e.weight, e.retracted_at is None) for e in history] == [(0.5, False), (0.9, True)]
    assert store.node_index("ns:a", as_of=t1)[0][3] == "Title 1"
    assert store.get_node("n3", as_of=t1) is None


def test_valid_time_filters(store):
    store.put_nodes([node(1, valid_from="2020-01-01T00:00:00.000000+00:00",
                          valid_until="2021-01-01T00:00:00.000000+00:00"), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", valid_until="2021-01-01T00:00:00.000000+00:00")])
    assert [n.id for n in store.find_nodes(valid_at="2020-06-01T00:00:00.000000+00:00")] == ["n1", "n2"]
    assert [n.id for n in store.find_nodes(valid_at="2022-06-01T00:00:00.000000+00:00")] == ["n2"]
    assert store.edges(src="n1", valid_at="2022-06-01T00:00:00.000000+00:00") == []
    assert store.timed_edges("ns:a") == [("n1", "n2", "rel", None, "2021-01-01T00:00:00.000000+00:00")]


def test_retract_outbound_only_and_revive(store):
    store.put_nodes([node(1), node(2), node(3)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a"), Edge("n3", "rel", "n1", namespace="ns:a")])
    assert store.retract_nodes(["n1", "missing"], edges="outbound") == 1
    assert store.retract_nodes(["n1"]) == 0  # already withdrawn
    assert store.edges(src="n1") == [] and [e.src for e in store.edges(dst="n1")] == ["n3"]
    assert store.node_ids("ns:a") == ["n2", "n3"] and store.node_ids("ns:a", include_retracted=True) == [
        "n1", "n2", "n3"]
    assert store.namespaces() == ["ns:a"] and store.count_nodes() == 2


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


def test_text_search_kind_filter_limit_and_stopwords(store):
    store.put_nodes([node(i, kind="a" if i % 2 else "b", content=f"apple number {i}") for i in range(6)])
    assert {h[0] for h in store.text_search("apple", kind="a")} == {"n1", "n3", "n5"}
    assert len(store.text_search("apple", limit=2)) == 2
    assert store.text_search("") == []
    store.put_nodes([node(9, key="design.agents", title="Agents", tags=["intent:design"], content="x")])
    assert store.text_search("agents")[0][0] == "n9"
    scores = [s for _, s in store.text_search("apple number")]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)


def test_records_audit_changes_paging(store):
    for k in ["lib:b", "lib:a", "pkg:c", "lib:a2"]:
        store.put_record("pack", k, {"k": k})
    store.put_record("pack", "lib:a", {"k": "again"})
    assert [k for k, _ in store.list_records("pack")] == ["lib:a", "lib:a2", "lib:b", "pkg:c"]
    assert store.get_record("pack", "lib:a") == {"k": "again"} and not store.delete_record("pack", "nope")
    for i in range(3):
        store.append_audit("alice", "doc.read", f"t{i}", "ok")
    rows = store.audit(principal="alice")
    assert [r["target"] for r in store.audit(limit=2)] == ["t1", "t2"]  # the latest, oldest first
    assert [r["target"] for r in store.audit(since=rows[2]["at"])] == ["t2"]
    c0 = store.change_counter()
    store.put_nodes([node(1), node(2)])
    assert [c.target for c in store.changes_since(c0, limit=1)] == ["n1"]


def test_briefs_tombstones_and_integrity(store):
    store.put_nodes([node(1, props={"a": 1}), node(2)])
    assert store.node_briefs(["n1", "n2", "zz"]) == {"n1": ("doc", "body 1", {"a": 1}), "n2": ("doc", "body 2", {})}
    store.put_tombstones([{"id": "old", "namespace": "ns:a", "kind": "doc", "purged_at": "2020", "reason": "r"}])
    store.purge_nodes(["n2"], reason="erase", actor="bob")
    assert [t["id"] for t in store.tombstones("ns:a")] == ["old", "n2"]
    assert store.tombstone("n2")["actor"] == "bob" and store.tombstone("n1") is None
    assert store.check_integrity() == "ok"


def test_delete_vectors_every_model(store):
    h = content_hash("x")
    store.put_vectors({h: np.ones(2, dtype=np.float32)}, "m1")
    store.put_vectors({h: np.ones(3, dtype=np.float32), content_hash("y"): np.ones(3, dtype=np.float32)}, "m2")
    c0 = store.change_counter()
    assert store.delete_vectors([h, h, content_hash("nope")]) == 2
    assert store.get_vectors([h], "m1") == {} and list(store.get_vectors([content_hash("y")], "m2")) == [
        content_hash("y")]
    assert store.change_counter() > c0 and store.delete_vectors([h]) == 0


def test_edge_columns_and_edges_touching(store):
    store.put_nodes([node(1), node(2), node(3)])
    store.put_edges([Edge("n1", "b", "n3", namespace="ns:a", position=1, weight=0.2),
                     Edge("n1", "a", "n2", namespace="ns:a", position=2, valid_until="2030"),
                     Edge("n2", "a", "n3", namespace="ns:b"),
                     Edge("n3", "a", "n1", namespace="ns:a")])
    store.retract_edges([Edge("n3", "a", "n1").id])
    assert sorted(store.edge_columns("ns:a")) == [("n1", "n2", "a", 1.0, 2, None, "2030"),
                                                  ("n1", "n3", "b", 0.2, 1, None, None)]
    assert len(store.edge_columns()) == 3
    assert store.edges_touching(["n1", "n2"]) == [("n1", "n3", "b", 0.2, "ns:a", None, None),
                                                  ("n1", "n2", "a", 1.0, "ns:a", None, "2030"),
                                                  ("n2", "n3", "a", 1.0, "ns:b", None, None)]
    assert [r[0] for r in store.edges_touching(["n3"], side="dst", types=["a"])] == ["n2"]
    assert store.edges_touching(["n1"], min_weight=0.5) == [("n1", "n2", "a", 1.0, "ns:a", None, "2030")]
    with pytest.raises(ValidationError):
        store.edges_touching(["n1"], side="both")


def test_tags_as_of_are_the_tags_then(store):
    store.put_nodes([node(1, tags=["old"])])
    then = store.get_node("n1").recorded_at
    store.put_nodes([node(1, tags=["new"])])
    assert [n.id for n in store.find_nodes(tags=["old"], as_of=then)] == ["n1"]
    assert store.find_nodes(tags=["new"], as_of=then) == []
    assert [n.id for n in store.find_nodes(tags=["new"])] == ["n1"]


def test_text_search_ignores_terms_almost_every_row_has(store):
    store.put_nodes([node(i, content=f"agents handle record {i}" + (" billing" if i % 50 == 0 else ""))
                     for i in range(1200)])
    hits = store.text_search("agents billing", limit=100)
    assert hits and {h[0] for h in hits} == {f"n{i}" for i in range(0, 1200, 50)}
    assert len(store.text_search("agents", limit=5)) == 5  # a lone common term still searches


def test_audit_limit_keeps_the_latest(store):
    for i in range(5):
        store.append_audit("alice", f"act{i}", "t", "ok")
    assert [a["action"] for a in store.audit(limit=2)] == ["act3", "act4"]
    assert len(store.audit()) == 5
