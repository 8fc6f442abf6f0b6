"""put_nodes(): versions, no-op writes, authorship."""
from __future__ import annotations

import pytest

from agentcontext.errors import ConflictError, ValidationError

from .data import node


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


def test_every_field_round_trips(store):
    store.put_nodes([node(1, kind="memory", key="a.b", summary="S", content="C é ✓", props={"x": [1, {"y": None}]},
                          tags=["t:1", "t:2"], valid_from="2020-01-01T00:00:00.000000+00:00",
                          valid_until="2030-01-01T00:00:00.000000+00:00", created_by="alice", tokens=12)],
                    actor="bob")
    got = store.get_node("n1")
    assert (got.kind, got.key, got.summary, got.content, got.props, got.tags, got.tokens) == (
        "memory", "a.b", "S", "C é ✓", {"x": [1, {"y": None}]}, ["t:1", "t:2"], 12)
    assert (got.valid_from, got.valid_until, got.created_by) == (
        "2020-01-01T00:00:00.000000+00:00", "2030-01-01T00:00:00.000000+00:00", "alice")
    store.put_nodes([node(2)], actor="bob")
    assert store.get_node("n2").created_by == "bob"  # the actor, when the node names no author
    store.put_nodes([node(2, title="again")], actor="carol")
    assert store.get_node("n2").created_by == "bob"  # a new version keeps the first author


def test_an_explicit_moment_is_recorded(store):
    at = "2024-05-01T12:00:00.000000+00:00"
    store.put_nodes([node(1)], at=at)
    assert store.get_node("n1").recorded_at == at and store.changes_since(0)[-1].at == at


def test_many_nodes_in_one_call(store):
    versions = store.put_nodes([node(i) for i in range(2500)])  # more than one statement's worth of ids
    assert versions == [1] * 2500 and store.count_nodes("ns:a") == 2500
    assert store.put_nodes([node(i) for i in range(2500)]) == [1] * 2500
    assert store.put_nodes([node(i, title="x") if i % 2 else node(i) for i in range(2500)]) == [
        2 if i % 2 else 1 for i in range(2500)]


def test_a_node_never_changes_namespace(store):
    """Namespace injection: a record planted under another namespace's id never becomes that namespace's record."""
    store.put_nodes([node(1, ns="memory:default", content="planted")])
    with pytest.raises(ConflictError) as info:
        store.put_nodes([node(1, ns="lib:hr", content="the real doc")])
    assert "memory:default" not in info.value.message  # the other namespace is not revealed
    store.retract_nodes(["n1"])
    with pytest.raises(ConflictError):  # a retracted row still holds its history
        store.put_nodes([node(1, ns="lib:hr")])
    assert {v.content for v in store.node_versions("n1")} == {"planted"}


def test_an_id_reserved_for_a_namespace_is_refused_elsewhere(store):
    for nid in ("lib:hr/policy", "pkg:acme.a.b.c/x", "graph:hr/alice", "memory:other/m1"):
        with pytest.raises(ValidationError) as info:
            store.put_nodes([node(1, id=nid, ns="memory:default")])
        assert info.value.data["reserved_for"] == nid.split("/")[0]
        assert store.get_node(nid) is None
    assert store.put_nodes([node(1, id="lib:hr/policy", ns="lib:hr")]) == [1]


def test_a_record_of_a_service_never_changes_kind(store):
    """A decision (memory, policy, ...) stays one, and no graph entity becomes one; other kinds may change."""
    store.put_nodes([node(1, ns="graph:default", kind="decision", content="the decision"),
                     node(2, ns="graph:default", kind="entity"), node(3, ns="lib:eng", kind="guide")])
    for nid, kind in (("n1", "entity"), ("n2", "decision"), ("n2", "memory")):
        with pytest.raises(ConflictError):
            store.put_nodes([node(int(nid[1:]), ns="graph:default", kind=kind, content="planted")])
    assert store.get_node("n1").content == "the decision" and store.get_node("n2").kind == "entity"
    assert store.put_nodes([node(2, ns="graph:default", kind="person")]) == [2]  # an entity gets a type
    assert store.put_nodes([node(3, ns="lib:eng", kind="decision")]) == [2]  # a doc's kind is its manifest's


@pytest.mark.parametrize("field", ["key", "title", "summary", "content", "kind", "namespace"])
def test_a_text_field_that_is_not_a_string_is_refused_naming_the_node(store, field):
    """Not the driver's NOT NULL error: our ValidationError naming the node and the field, and nothing written
    (the batch's good nodes neither)."""
    bad = node(2)
    setattr(bad, field, None)
    with pytest.raises(ValidationError, match=f"node 'n2'.*{field}"):
        store.put_nodes([node(1), bad])
    assert store.get_nodes(["n1", "n2"], include_retracted=True) == {}
