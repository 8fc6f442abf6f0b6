"""check_integrity()."""
from __future__ import annotations

from agentcontext.model import Edge

from .data import node


def test_ok_through_every_kind_of_write(store):
    assert store.check_integrity() == "ok"
    store.put_nodes([node(i, tags=["t"]) for i in range(20)])
    store.put_nodes([node(i, content="again") for i in range(10)])
    store.put_edges([Edge(f"n{i}", "rel", f"n{i + 1}", namespace="ns:a") for i in range(19)])
    store.retract_nodes(["n1", "n2"])
    store.purge_nodes(["n3", "n4"])
    store.put_nodes([node(1)])
    assert store.check_integrity() == "ok"
