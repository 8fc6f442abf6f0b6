"""Small builders the spec modules share."""
from __future__ import annotations

from agentcontext.model import Node


def node(i, ns="ns:a", **kw) -> Node:
    base = dict(id=f"n{i}", kind="doc", namespace=ns, key=f"k{i}", title=f"Title {i}", content=f"body {i}")
    base.update(kw)
    return Node(**base)
