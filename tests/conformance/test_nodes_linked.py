"""VECTOR_SEARCH: nodes_linked(), the neighbourhood a ranking in the store reads around its candidates."""
from __future__ import annotations

import pytest

from agentcontext.errors import ValidationError
from agentcontext.store import Capability

from . import needs
from .data import node


@needs(Capability.VECTOR_SEARCH)
def test_nodes_linked_reads_the_named_nodes_and_two_levels_of_followers(store):
    # a chain n1 <- n2 <- n3 <- n4 <- n5 (each names the one before in prev), n6 a second follower of n2,
    # n7 in another namespace naming n2, n8 a doc naming n2, n9 retracted naming n3
    store.put_nodes([node(1, kind="memory"), node(2, kind="memory", props={"prev": "n1"}),
                     node(3, kind="memory", props={"prev": "n2"}), node(4, kind="memory", props={"prev": "n3"}),
                     node(5, kind="memory", props={"prev": "n4"}), node(6, kind="memory", props={"prev": "n2"}),
                     node(7, ns="ns:b", kind="memory", props={"prev": "n2"}), node(8, props={"prev": "n2"}),
                     node(9, kind="memory", props={"prev": "n3"})])
    store.retract_nodes(["n9"])
    named, followers = store.nodes_linked(["n3", "n3", "nope", "n7", "n8"], "prev", "ns:a", "memory")
    assert sorted(named) == ["n2", "n3"]  # n3 and the turn it names, nothing of another namespace or kind
    assert named["n3"].content == "body 3" and named["n2"].props == {"prev": "n1"}
    # followers of n2 and n3 (n3, n6, n4), then of those (n4 again, n5), once each, in insertion order
    assert [n.id for n in followers] == ["n3", "n4", "n5", "n6"] and all(n.content == "" for n in followers)
    assert store.nodes_linked([], "prev", "ns:a", "memory") == ({}, [])
    named, followers = store.nodes_linked(["n5"], "prev", "ns:a", "memory")
    assert sorted(named) == ["n4", "n5"] and [n.id for n in followers] == ["n5"]  # nothing follows the last turn
    with pytest.raises(ValidationError):
        store.nodes_linked(["n1"], "prev') OR 1=1 --", "ns:a", "memory")
