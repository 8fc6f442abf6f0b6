"""The seams between services: one ``Scope`` (workspace + principal) and the small protocols services type
their collaborators with, so that no service probes another with ``getattr``.

A service is handed what it needs, typed by what it uses of it:

- ``Scope``: the workspace a service works in and the principal it acts for (None = the owner). The facade
  (``AgentContext``) builds one and hands it to each service; ``scope_of`` reads it off a collaborator.
- ``InWorkspace`` / ``Scoped``: anything that lives in a workspace (and acts for a principal): a memory, a
  graph, an agentcontext ``VectorStore``.
- ``MemoryLike``: what retrieval, reasoning and erasure use of an ``AgentMemory`` (memory/service.py ranks
  above them, so they type it with this protocol and never import it).
- ``ErasableMemory``: a caller's own memory object an erasure can still drive (``find_by_entity``,
  ``batch_delete``).
- ``RetrieverLike``: what reasoning uses of a ``ContextRetriever``; ``Configured``: one that carries its
  ``RetrievalConfig``; ``RecallsResults``: a memory that returns ``RetrievedContext`` (ours), not dicts.
- ``SearchableVectors`` / ``ErasableVectors``: a caller's vector backend (``search(query=, limit=)``;
  ``delete(ids)`` or ``delete_vectors(ids)`` for an erasure).
- ``GraphHandle``: what the decision layer uses of a ``ContextGraph`` (decisions/ ranks below graph/);
  ``PurgeableGraph``: a caller's own graph an erasure can drive.
- ``SearchableVectors``: a caller's vector backend as a retrieval source (``search(query=, limit=)``);
  ``ErasableVectors`` / ``DeletesVectors`` / ``NamedBackend``: the same backend in an erasure (``delete(ids)``
  or ``delete_vectors(ids)``, and the name it gives itself).
- ``Completes`` / ``Generates`` / ``NamesModel`` / ``NamesProvider``: an LLM provider (``complete(messages)``,
  or semantica's ``generate(prompt)``; its ``model`` and ``provider`` names when it has them).
- ``Checked``: a collaborator that checks access for its principal (``check(level, action, target)``).

The protocols are ``runtime_checkable``: a service tells a caller's own object from ours with ``isinstance``
against the declared shape where it is handed over (our own services are typed, not checked); ``conforms`` is the
same check without typing's per-call cost on Python 3.11, for checks on a call's path.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Generic, Iterable, Protocol, Sequence, runtime_checkable

from .store.base import Store
from .workspace import Workspace


@dataclass(frozen=True)
class Scope:
    """Where a service works and for whom: built once by the facade, handed to each service."""

    workspace: Workspace
    principal: str | None = None  # who acts (None = the workspace's owner)

    @property
    def store(self) -> Store:
        return self.workspace.store

    def acting_as(self, principal: str | None) -> "Scope":
        return self if principal == self.principal else Scope(self.workspace, principal)


def principal_of(principal: str | None, actor: str | None = "") -> str | None:
    """One name for who acts: ``principal``; ``actor`` is the older keyword of the public API for the same."""
    return principal if principal is not None else (actor or None)


@runtime_checkable
class InWorkspace(Protocol):
    workspace: Workspace


@runtime_checkable
class Scoped(Protocol):
    workspace: Workspace
    principal: str | None


@runtime_checkable
class Checked(Protocol):
    def check(self, level: str, action: str, target: str = "") -> None: ...


@runtime_checkable
class GraphHandle(Protocol):
    """What the decision layer uses of a ``ContextGraph`` it is bound to (decisions/ ranks below graph/, so it
    types the graph with this; ``graph/protocol.py``'s ``GraphLike`` is the fuller shape the graph's own parts
    use)."""

    workspace: Workspace
    namespace: str  # where the graph keeps its nodes; decisions live beside them
    scope: str | list[str] | None  # what it reads (None: the whole workspace)
    principal: str | None
    node_embeddings: bool  # whether its Node2Vec embeddings are on
    embeddings: Any  # graph/embeddings.py's NodeEmbeddings

    def store_id(self, node_id: str) -> str: ...

    def user_id(self, store_id: str) -> str: ...

    def resolve(self, node_id: str) -> str | None: ...

    def acting_as(self, principal: str | None) -> "GraphHandle": ...

    def search_nodes(self, query: str, limit: int = 10) -> list[dict[str, Any]]: ...


@runtime_checkable
class MemoryLike(Protocol):
    """What the services below memory use of an ``AgentMemory``."""

    namespace: str
    workspace: Workspace
    principal: str | None
    retention: Any  # memory/retention.py's Retention (forgotten(ids) after a purge)

    @property
    def db(self) -> Store: ...

    def check(self, level: str, action: str, target: str = "") -> None: ...

    def retrieve(self, query: str, max_results: int = 5, min_score: float | None = None,
                 **filters: Any) -> list[dict]: ...

    def used(self, memory_ids: Sequence[str]) -> None: ...

    def find_by_entity(self, entity_id: str) -> list[str]: ...

    def batch_delete(self, memory_ids: Sequence[str]) -> int: ...


@runtime_checkable
class RecallsResults(Protocol):
    """A memory that returns its retrieval as engine/retrieved.py's ``RetrievedContext`` (``AgentMemory``); a
    caller's own memory object gives ``retrieve``'s dicts, which the retriever reads as its candidates."""

    def results(self, query: str, max_results: int = 5, min_score: float | None = None,
                **filters: Any) -> list[Any]: ...


@runtime_checkable
class ErasableMemory(Protocol):
    """A caller's own memory object an erasure drives: the ids about an entity, then their deletion."""

    def find_by_entity(self, entity_id: str) -> Iterable[Any]: ...

    def batch_delete(self, memory_ids: Sequence[str]) -> Any: ...


@runtime_checkable
class Configured(Protocol):
    """A collaborator that carries the retrieval configuration it runs with (engine/retrieval_config.py's
    ``RetrievalConfig``): a ``ContextRetriever`` a service is built over hands its configuration on."""

    config: Any


@runtime_checkable
class RetrieverLike(Protocol):
    """What reasoning uses of a ``ContextRetriever``."""

    memory_store: Any  # a MemoryLike, or None
    knowledge_graph: Any  # a graph.protocol.GraphLike, or None

    def retrieve(self, query: str, max_results: int = 5, **options: Any) -> list[Any]: ...


@runtime_checkable
class SearchableVectors(Protocol):
    def search(self, *, query: str, limit: int) -> list[dict[str, Any]]: ...


@runtime_checkable
class ErasableVectors(Protocol):
    """A vector backend that deletes by id (FAISS-style adapters without it are reported ``unsupported``)."""

    def delete(self, ids: Sequence[str]) -> Any: ...


@runtime_checkable
class DeletesVectors(Protocol):
    """The same under the other name backends use."""

    def delete_vectors(self, ids: Sequence[str]) -> Any: ...


@runtime_checkable
class NamedBackend(Protocol):
    backend: str  # how a vector backend names itself in a receipt ("faiss", "external")


@runtime_checkable
class PurgeableGraph(Protocol):
    """A caller's own graph object an erasure can still drive."""

    def purge_node(self, node_id: str, reason: str = "", at: Any = None) -> dict[str, Any]: ...


@runtime_checkable
class NamesModel(Protocol):
    model: str  # the model an LLM provider talks to


@runtime_checkable
class NamesProvider(Protocol):
    provider: str  # the provider's name ("openai", "anthropic", ...)


@runtime_checkable
class Completes(Protocol):
    def complete(self, messages: Any, **options: Any) -> Any: ...


@runtime_checkable
class Generates(Protocol):
    def generate(self, prompt: str, **options: Any) -> Any: ...


_TYPING_NAMES = frozenset({"_is_protocol", "_is_runtime_protocol"})


@functools.lru_cache(maxsize=None)
def _members(proto: type) -> tuple[str, ...]:
    """The names a protocol declares (its annotations and methods, its bases' too): a pure function of the class."""
    names: set[str] = set()
    for base in proto.__mro__:
        if base in (Protocol, Generic, object):
            continue
        names |= set(base.__dict__.get("__annotations__", {}))
        names |= {n for n in base.__dict__ if not n.startswith("__")}
    return tuple(sorted(n for n in names if n not in _TYPING_NAMES and not n.startswith("_abc_")))


def conforms(obj: Any, proto: type) -> bool:
    """``isinstance(obj, proto)`` for a runtime-checkable protocol, without typing's per-call cost on Python 3.11
    (it gathers the protocol's members again at every check: tens of microseconds): whether ``obj`` has every
    member the protocol declares."""
    return all(hasattr(obj, name) for name in _members(proto))


def workspace_of(obj: Any) -> Workspace | None:
    """The workspace ``obj`` lives in, or None for a caller's own object outside any workspace."""
    return obj.workspace if conforms(obj, InWorkspace) else None


def store_of(obj: Any) -> Store | None:
    """The store of record ``obj`` lives in (a Store itself, or anything in a workspace), else None."""
    if isinstance(obj, Store):
        return obj
    ws = workspace_of(obj)
    return ws.store if ws is not None else None


def principal_held(obj: Any) -> str | None:
    """The principal ``obj`` acts for (None: the owner, or an object that acts for no one)."""
    return obj.principal if conforms(obj, Scoped) else None


def scope_of(obj: Any) -> Scope | None:
    ws = workspace_of(obj)
    return None if ws is None else Scope(ws, principal_held(obj))
