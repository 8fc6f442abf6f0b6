"""nodes_naming(): the reverse of a link kept in props."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError

from .data import node


def test_nodes_naming_finds_followers_in_insertion_order(store):
    store.put_nodes([node(1), node(2, props={"prev": "n1"}), node(3, props={"prev": "n2"}),
                     node(4, props={"prev": "n1"}, kind="memory"), node(5, ns="ns:b", props={"prev": "n1"}),
                     node(6, props={"prev": 7}), node(7, props={"other": "n1"})])
    found = store.nodes_naming("prev", ["n1", "n2", "n1"])
    assert [n.id for n in found] == ["n2", "n3", "n4", "n5"] and found[0].props == {"prev": "n1"}
    assert all(n.content == "" for n in found)  # light rows
    assert [n.id for n in store.nodes_naming("prev", ["n1"], namespace="ns:a", kind="memory")] == ["n4"]
    assert store.nodes_naming("prev", []) == [] and store.nodes_naming("prev", ["nope"]) == []
    store.retract_nodes(["n2"])
    assert [n.id for n in store.nodes_naming("prev", ["n1"])] == ["n4", "n5"]
    many = store.nodes_naming("prev", [f"x{i}" for i in range(1500)] + ["n2"])  # more than one statement holds
    assert [n.id for n in many] == ["n3"]
    with pytest.raises(ValidationError):
        store.nodes_naming("prev') OR 1=1 --", ["n1"])
