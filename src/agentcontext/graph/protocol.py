"""``GraphLike``: what the parts of the graph service use of the ``ContextGraph`` they are given.

``ContextGraph`` (context_graph.py) composes its parts (analytics, persistence, cross-graph links,
conversations, the entity table) and hands itself to them; they type it with this protocol and
never import context_graph.py, so the files of the service form no circle.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol, TypeVar

from ..engine.traversal import CSR
from ..store.base import Store
from ..workspace import Workspace

T = TypeVar("T")


class GraphLike(Protocol):
    name: str
    namespace: str  # where the graph writes its own nodes (``graph:<name>``)
    scope: str | list[str] | None  # what it reads: its namespace, None for the whole workspace, or the namespaces
    # a principal who may not read everything reads whole
    graph_id: str
    actor: str
    principal: str | None  # who acts (None = the owner); every call is checked for it
    workspace: Workspace

    def acting_as(self, principal: str | None) -> "GraphLike": ...

    def check(self, level: str, action: str, target: str = "") -> None: ...

    def readable(self) -> bool: ...

    @property
    def restricted(self) -> bool: ...  # whether the principal sees less than everything

    def sees(self, node: Any) -> bool: ...

    @property
    def store(self) -> Store: ...

    def store_id(self, node_id: str) -> str: ...

    def user_id(self, store_id: str) -> str: ...

    def resolve(self, node_id: str) -> str | None: ...

    def require(self, node_id: str) -> str: ...

    def cached(self, what: str, build: Callable[[], T]) -> T: ...

    def csr(self, as_of: Any = None) -> CSR: ...

    def stats(self) -> dict[str, Any]: ...

    def clear(self) -> None: ...

    def add_node(self, node_id: str, node_type: str = ..., content: str | None = None,
                 properties: dict[str, Any] | None = None, **more: Any) -> None: ...

    def add_nodes(self, nodes: Iterable[dict[str, Any]]) -> int: ...

    def add_edge(self, source_id: str, target_id: str, edge_type: str = ..., weight: float = 1.0,
                 properties: dict[str, Any] | None = None, **more: Any) -> None: ...

    def add_edges(self, edges: Iterable[dict[str, Any]]) -> int: ...

    def find_nodes(self, node_type: str | None = None, skip: int = 0, limit: int | None = None,
                   as_of: Any = None) -> list[dict[str, Any]]: ...

    def find_edges(self, edge_type: str | None = None, skip: int = 0, limit: int | None = None,
                   source_id: str | None = None, target_id: str | None = None, **more: Any) -> list[dict[str, Any]]: ...
