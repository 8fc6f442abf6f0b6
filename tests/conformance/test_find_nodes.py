"""find_nodes(): filters, order, paging, tags and validity, as they stand now and as they stood."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError
from agentcontext.model import Edge

from .data import node


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


def test_orders_offsets_and_light_rows(store):
    for i in (3, 1, 2):
        store.put_nodes([node(i)])
    assert [n.id for n in store.find_nodes(order="recorded")] == ["n3", "n1", "n2"]
    assert [n.id for n in store.find_nodes(order="recorded_desc")] == ["n2", "n1", "n3"]
    assert [n.id for n in store.find_nodes(order="id")] == ["n1", "n2", "n3"]
    assert sorted(n.id for n in store.find_nodes(order="none")) == ["n1", "n2", "n3"]
    assert [n.id for n in store.find_nodes(offset=1)] == ["n2", "n3"]  # an offset without a limit
    light = store.find_nodes(with_content=False)
    assert [n.content for n in light] == ["", "", ""] and light[0].title == "Title 1"
    assert [n.id for n in store.find_nodes(kind=["doc", "other"], namespace=["ns:a", "ns:z"], keys=[])] == []
    with pytest.raises(ValidationError):
        store.find_nodes(order="sideways")


def test_key_order_is_binary_codepoint_order(store):
    keys = ["b", "B", "a", "_x", "é", "a.b", "a_b", "a-b", "Z9", "z"]
    store.put_nodes([node(i, key=k) for i, k in enumerate(keys)])
    assert [n.key for n in store.find_nodes(namespace="ns:a")] == sorted(keys)
    assert [n.key for n in store.find_nodes(key_prefix="a")] == sorted(k for k in keys if k.startswith("a"))
    assert [r[1] for r in store.node_index("ns:a")] == sorted(keys)


def test_valid_time_filters(store):
    store.put_nodes([node(1, valid_from="2020-01-01T00:00:00.000000+00:00",
                          valid_until="2021-01-01T00:00:00.000000+00:00"), node(2)])
    store.put_edges([Edge("n1", "rel", "n2", namespace="ns:a", valid_until="2021-01-01T00:00:00.000000+00:00")])
    assert [n.id for n in store.find_nodes(valid_at="2020-06-01T00:00:00.000000+00:00")] == ["n1", "n2"]
    assert [n.id for n in store.find_nodes(valid_at="2022-06-01T00:00:00.000000+00:00")] == ["n2"]
    assert store.edges(src="n1", valid_at="2022-06-01T00:00:00.000000+00:00") == []
    assert store.timed_edges("ns:a") == [("n1", "n2", "rel", None, "2021-01-01T00:00:00.000000+00:00")]


def test_tags_as_of_are_the_tags_then(store):
    store.put_nodes([node(1, tags=["old"])])
    then = store.get_node("n1").recorded_at
    store.put_nodes([node(1, tags=["new"])])
    assert [n.id for n in store.find_nodes(tags=["old"], as_of=then)] == ["n1"]
    assert store.find_nodes(tags=["new"], as_of=then) == []
    assert [n.id for n in store.find_nodes(tags=["new"])] == ["n1"]


def test_retracted_nodes_are_not_found_but_were(store):
    store.put_nodes([node(1), node(2)])
    then = store.get_node("n2").recorded_at
    store.retract_nodes(["n2"])
    assert [n.id for n in store.find_nodes()] == ["n1"]
    assert [n.id for n in store.find_nodes(as_of=then)] == ["n1", "n2"]
