"""``AgentMemory``: memories as nodes of the workspace graph, with hybrid retrieval and retention.

Writes land whole (one store transaction per call); vectors are computed first and cached by the
hash of the embedded text, so a killed ``batch_store`` leaves either none or all of its memories.

Access: a memory store is checked under its namespace, ``memory:<name>`` (access.py). Every call is checked
for the store's ``principal`` (None = the owner): reading needs ``read``, storing, updating, forgetting and
importing need ``write``; denials and successful writes are audited. The CLI, MCP and the web console
open the store with ``workspace_memory(ws, namespace, principal)`` and only pass the principal on.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from .. import access, copies
from ..embed.cache import embed_texts
from ..errors import ConflictError, NotFoundError, ValidationError, refuse_unknown
from ..engine import rerank as reranking
from ..graph.protocol import GraphLike
from ..engine.fusion import FusionWeights
from ..engine.retrieval_config import RetrievalConfig
from ..ids import check_id
from ..model import Node
from ..seams import Scope, principal_of
from ..vector_store import VectorStore
from ..workspace import Workspace
from . import io as memory_io
from . import chain
from .index import MemoryIndex, memory_index
from .items import supplied_in_full
from .plan import collector_paused, embed_missing, plan_items, rewritten
from .links import entity_ids, graph_view, link_memories, link_stored, link_texts, relink_text
from .purge import about, purge_memories
from .records import (CONV, KIND, now_iso, to_memory)
from .retention import Retention
from .configured import ConfiguredRecall
from .select import tagged, to_forget

_RETENTION = re.compile(r"^(\d+)_days?$")


def parse_retention(policy: str | int | None) -> int | None:
    """``"90_days"`` -> 90; ``"unlimited"``/None -> None."""
    if policy is None or policy == "unlimited":
        return None
    if isinstance(policy, int) and not isinstance(policy, bool):
        if policy <= 0:
            raise ValidationError("retention must be a positive number of days", retention=policy)
        return policy
    match = _RETENTION.match(str(policy))
    if not match or int(match.group(1)) <= 0:
        raise ValidationError(f"retention_policy {policy!r} is not understood; use 'N_days' (e.g. '30_days') or "
                              "'unlimited'", retention_policy=str(policy))
    return int(match.group(1))


# What one stored item may hold (batch_store's documented keys); anything else is refused, never dropped.
ITEM_KEYS = ("content", "text", "metadata", "conversation_id", "user_id", "id", "created_at", "updated_at", "vector",
             "embedding", "context_vector")
_ITEM_KEYS = frozenset(ITEM_KEYS)
STORE_KEYWORDS = ("id", "created_at", "updated_at", "vector", "embedding", "context_vector")  # store(**kwargs)
RETRIEVE_KEYWORDS = ("query", "max_results", "min_score", "conversation_id", "user_id", "filters", "type", "count_use")
EXTRA_FACTS = "put extra facts in metadata={...}"
FILTER_HINT = "filter on metadata with filters={key: value}"


class AgentMemory(ConfiguredRecall):
    """Vector-backed persistent memory (seed 003): store, retrieve, forget, conversations, export."""

    def __init__(self, vector_store: VectorStore | None = None, max_memory_size: int = 10000,
                 retention_policy: str | int | None = "unlimited", *, namespace: str = "default",
                 workspace: Workspace | None = None, context_turns: bool = True,
                 weights: FusionWeights | None = None, actor: str = "", entity_graph: GraphLike | None = None,
                 principal: str | None = None, rerank: bool | None = None,
                 embedding_model: str | None = None, scope: Scope | None = None,
                 config: RetrievalConfig | None = None, ranker: str | None = None, places: bool = False) -> None:
        """``scope`` (the facade's) is the workspace and the principal at once; ``workspace=`` and ``principal=``
        (or its older name ``actor=``) say them one at a time. ``places``: each memory stored or edited through
        this object gets the glosses of the places it names (memory/places.py; the ``places`` extra) in its
        embedded and indexed text, never in its content."""
        if scope is not None:
            workspace, principal = scope.workspace, scope.principal
        if workspace is None:
            vector_store = vector_store if vector_store is not None else VectorStore(embedding_model=embedding_model)
            workspace = vector_store.workspace
        self.vector_store = vector_store
        self.workspace = workspace
        if max_memory_size is not None and int(max_memory_size) <= 0:
            raise ValidationError("max_memory_size must be positive", max_memory_size=max_memory_size)
        self.namespace = namespace if namespace.startswith("memory:") else f"memory:{namespace}"
        self.retention = Retention(workspace.store, self.namespace, parse_retention(retention_policy),
                                   int(max_memory_size) if max_memory_size is not None else None, self._purge, actor)
        self.context_turns = context_turns
        self.places = bool(places)
        # Who acts: checked on every call (``actor`` is the older name of the same thing).
        self.principal = principal_of(principal, actor)
        # With a graph, a stored memory whose metadata lists ``entities`` is linked to those entity nodes (links.py).
        self.entity_graph = entity_graph
        self.configure(config, weights, rerank, ranker)  # what retrieval reads (memory/configured.py)

    # --- plumbing --------------------------------------------------------------------------
    @property
    def actor(self) -> str:
        """The older name of ``principal``, as audit rows spell who acted ("" for the owner)."""
        return self.principal or ""

    @property
    def db(self) -> Any:
        """The workspace's store of record (``store`` is the seed's method that stores a memory)."""
        return self.workspace.store

    @property
    def max_memory_size(self) -> int | None:
        return self.retention.max_size

    @property
    def retention_days(self) -> int | None:
        return self.retention.days

    @property
    def dimension(self) -> int:
        return self.vector_store.dimension if self.vector_store is not None else self.workspace.embedder.dimension

    def _index(self) -> MemoryIndex:
        return memory_index(self.workspace, self.namespace, self.dimension)

    def check(self, level: str, action: str, target: str = "") -> None:
        """Raise AccessDeniedError (audited) unless the principal holds ``level`` on this store's namespace."""
        access.require(self.workspace, self.principal, self.namespace, level, action, target)

    def _audit(self, action: str, target: str, detail: dict[str, Any] | None = None) -> None:
        access.record(self.workspace, self.principal, action, target, detail)

    # --- writes ----------------------------------------------------------------------------
    def store(self, content: str | Sequence[Any], metadata: dict[str, Any] | None = None,
              conversation_id: str | None = None, user_id: str | None = None, **kwargs: Any) -> str | dict[str, Any]:
        """A string stores one memory and returns its id; a list stores them all and returns stats."""
        self.check("write", "memory.store")
        refuse_unknown("store", set(kwargs) - set(STORE_KEYWORDS),
                       ("content", "metadata", "conversation_id", "user_id", *STORE_KEYWORDS), EXTRA_FACTS)
        if isinstance(content, (list, tuple)):
            items = [self._item(x, metadata, conversation_id, user_id, i) for i, x in enumerate(content)]
            ids = self.batch_store(items)
            return {"stored": len(ids), "ids": ids, "total": self.count()}
        return self.batch_store([{"content": content, "metadata": metadata, "conversation_id": conversation_id,
                                  "user_id": user_id, **kwargs}])[0]

    @staticmethod
    def _item(x: Any, metadata: dict | None, conversation_id: str | None, user_id: str | None,
              index: int = 0) -> dict[str, Any]:
        if isinstance(x, str):
            return {"content": x, "metadata": metadata, "conversation_id": conversation_id, "user_id": user_id}
        if isinstance(x, dict):
            if not _ITEM_KEYS.issuperset(x):
                refuse_unknown(f"memory item {index}", set(x) - _ITEM_KEYS, ITEM_KEYS, EXTRA_FACTS)
            item = dict(x)
            item.setdefault("conversation_id", conversation_id)
            item.setdefault("user_id", user_id)
            if metadata and not item.get("metadata"):
                item["metadata"] = metadata
            return item
        raise ValidationError(f"cannot store a {type(x).__name__}; pass text or a dict with 'content'")

    def batch_store(self, items: Sequence[Any], progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Store many memories in one transaction; returns their ids in order.

        Each item is text or a dict with ``content`` (or ``text``) and optional ``metadata``,
        ``conversation_id``, ``user_id``, ``id``, ``created_at``, ``vector`` (precomputed embedding) and
        ``context_vector`` (precomputed embedding of the previous turn's text, a newline, then this one's; used
        for a turn that follows another in its conversation, so nothing is embedded when both are supplied).
        With an ``entity_graph``, memories whose metadata lists ``entities`` are linked to those entities, and
        every memory to the graph's known entities its text names (memory/links.py)."""
        self.check("write", "memory.store")
        with collector_paused(len(items)):  # a dict of known keys is read as it is (a key left out reads as None)
            items = [x if type(x) is dict and _ITEM_KEYS.issuperset(x) else self._item(x, None, None, None, i)
                     for i, x in enumerate(items)]
        access.require_chosen_ids(self.workspace, self.principal, [str(x["id"]) for x in items if x.get("id")],
                                  "memory.store", "a memory id", "leave id out: the store assigns one")
        linking = self.entity_graph is not None and any(entity_ids(x.get("metadata")) for x in items)
        if linking and self.entity_graph is not None:  # links are graph writes: checked first,
            view = graph_view(self, self.entity_graph)  # as the memory's writer, and so are the ids of the
            view.check("write", "graph.node.add")  # entity nodes they may make (before any memory is written)
            for entity in sorted({e for x in items for e in entity_ids(x.get("metadata"))}):
                check_id(view.store_id(entity), "metadata entity")
        ids = self._write(items, progress, audit="memory.store")
        if linking:
            link_memories(self, self.entity_graph, [(i, x.get("metadata")) for i, x in zip(ids, items)])
        if self.entity_graph is not None:  # text links are edges of the memory's own namespace: no graph write
            link_texts(self, self.entity_graph, [(i, str(x.get("content", x.get("text")) or ""))
                                                 for i, x in zip(ids, items)])
        return ids

    def link_mentions(self) -> dict[str, Any]:
        """Link the memories already stored to the known entities of ``entity_graph`` their text names (new
        entities since they were stored, or memories stored without a graph); ``scanned`` and ``linked``."""
        if self.entity_graph is None:
            raise ValidationError("link_mentions needs a graph of known entities: AgentMemory(entity_graph=graph) "
                                  "or AgentContext(knowledge_graph=graph)")
        return link_stored(self, self.entity_graph)

    def _write(self, items: list[dict[str, Any]], progress: Callable[[int, int], None] | None = None,
               audit: str | None = None) -> list[str]:
        """Store the items (dicts) in one transaction (with the audit row of ``audit``, when given), then apply
        retention and the cap; returns their ids."""
        if not items:
            return []
        if all(supplied_in_full(item) for item in items) or not self.context_turns and all(
                item.get("vector", item.get("embedding")) is not None for item in items):
            # Nothing to embed: the conversations' heads are read once, under the write lock (no relink). The batch's
            # nodes and rows are freed before the collector resumes, so its next pass does not walk them (~1 us a
            # memory of 10,000)
            with collector_paused(len(items)):
                ids, texts = self._land_supplied(items, audit)
        else:
            with collector_paused(len(items)):
                nodes, last, first, pair_texts, supplied, assumed = self._plan(items)
            self._embed(nodes, pair_texts, supplied, progress)
            with collector_paused(len(items)), self.db.transaction():  # the vectors and memories: one commit
                # The heads are read again under the write lock: a writer that appended meanwhile is linked to.
                chain.relink(self.db, lambda: self.workspace.embedder, self.namespace, first, assumed,
                             self.places)
                self._land(nodes, last, first, supplied, audit)
            ids, texts = [n.id for n in nodes], [n.embed_text for n in nodes if n.embed_text]
        if self.rerank:  # the reranking model's vectors of these memories, cached before a retrieve needs them
            reranking.prepare(self.db, texts)
        self.retention.touch(ids)
        self.retention.enforce(len(ids))
        return ids

    def _land_supplied(self, items: list[dict[str, Any]], audit: str | None) -> tuple[list[str], list[str]]:
        """Plan and land items whose vectors are all supplied, in one transaction; their ids and texts to embed."""
        with self.db.transaction():
            nodes, last, first, _, supplied, _ = self._plan(items)
            self._land(nodes, last, first, supplied, audit)
        return [n.id for n in nodes], [n.embed_text for n in nodes if n.embed_text]

    def _plan(self, items: list[dict[str, Any]]) -> tuple:
        """The nodes of ``items`` (linked to their conversations' heads as read now), each conversation's last and
        first node, the pair texts to embed, the vectors supplied (by hash) and the heads assumed (plan.py)."""
        return plan_items(items, self.namespace, self.context_turns, self.db, lambda: self.dimension, self.places)

    def _land(self, nodes: list[Node], last: dict[str, Node | None], first: dict[str, Node],
              supplied: dict[str, np.ndarray], audit: str | None) -> None:
        """Inside the write transaction: the nodes, their vectors, the conversations' heads and the audit row."""
        ids = [n.id for n in nodes]
        self.db.put_nodes(nodes, actor=self.actor)  # first: text the store refuses fails before any vector
        if supplied:
            self.db.put_vectors(supplied, self.workspace.model_name)
        chain.set_heads(self.db, self.namespace, {c: last[c].id for c in first}, self.actor)
        if audit is not None:
            self._audit(audit, f"{self.namespace}/{ids[0]}" if len(ids) == 1 else self.namespace,
                        {} if len(ids) == 1 else {"stored": len(ids)})

    def _embed(self, nodes: list[Node], pair_texts: list[str], supplied: dict[str, np.ndarray],
               progress: Callable[[int, int], None] | None) -> None:
        embed_missing(self.db, self.workspace.embedder, nodes, pair_texts, supplied, progress)

    def update(self, memory_id: str, content: str | None = None, metadata: dict[str, Any] | None = None,
               expected_version: int | None = None) -> bool:
        """Change the text and/or merge metadata; the id stays, the store keeps the previous version.

        ``expected_version``: write only if the memory is still at that version (read, compared and written in one
        store transaction), else ``ConflictError``. Returns False when there is no such memory."""
        self.check("write", "memory.update")
        with self.db.transaction():
            node = self.db.get_node(memory_id)
            if node is None or node.kind != KIND or node.namespace != self.namespace:
                return False
            if expected_version is not None and node.version != expected_version:
                raise ConflictError(f"memory {memory_id} is at version {node.version}, not {expected_version}: it "
                                    "changed since it was read; read it again and edit that version",
                                    memory_id=memory_id, current_version=node.version,
                                    expected_version=expected_version)
            meta = dict((node.props or {}).get("metadata") or {})
            meta.update(metadata or {})
            self._rewrite(node, content if content is not None else node.content, meta, now_iso())
        if content is not None and content != node.content and self.entity_graph is not None:
            relink_text(self, self.entity_graph, memory_id, content)
        self._audit("memory.update", f"{self.namespace}/{memory_id}")
        return True

    def _rewrite(self, node: Node, content: str, metadata: dict[str, Any], updated_at: str) -> None:
        """Write a new version of ``node`` with exactly this content and metadata."""
        new, texts = rewritten(self.db, self.namespace, node, content, metadata, updated_at, self.places)
        embed_texts(self.db, self.workspace.embedder, texts)
        self.db.put_nodes([new], actor=self.actor)
        self.retention.touch([node.id])

    # --- reads -----------------------------------------------------------------------------
    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        self.check("read", "memory.read")
        node = self.db.get_node(memory_id)
        if node is None or node.kind != KIND or node.namespace != self.namespace:
            return None
        self.retention.touch([memory_id])
        return to_memory(node)

    def retrieve(self, query: str, max_results: int = 5, min_score: float | None = None,
                 conversation_id: str | None = None, user_id: str | None = None,
                 filters: dict[str, Any] | None = None, type: str | None = None, count_use: bool = True,
                 **unexpected: Any) -> list[dict[str, Any]]:
        """Best memories for ``query`` (hybrid: dense + context + BM25 + mentions), best first.

        ``conversation_id``/``user_id`` restrict exactly; ``filters`` (a mapping) and ``type`` are metadata
        equality filters (any other keyword is a ``ValidationError``, never a filter). Each result carries
        ``score``, the ``signals`` behind it and ``config``, the echo of the retrieval configuration that ran.
        ``count_use``: the results count as used (the LRU order of the ``max_memory_size`` cap), the best one
        most recently; a caller that re-ranks a larger pool (``ContextRetriever``) passes False and calls
        ``used`` on what it returns.
        ``score`` is an absolute relevance in [0, 1], comparable across queries: a logistic calibration
        (fitted on the LoCoMo development split) of dense cosine + keyword coverage + neighbouring turns'
        keywords + speaker mention, each absolute (engine/fusion.py). 0.5 means the signals are as typical
        of a memory that answers the query as of one that does not; an unrelated memory scores near 0.
        ``min_score`` (default: the configuration's) applies to it."""
        refuse_unknown("retrieve", unexpected, RETRIEVE_KEYWORDS, FILTER_HINT)
        return [r.as_memory() for r in self.results(query, max_results, min_score, conversation_id, user_id,
                                                     filters, type, count_use)]

    def used(self, memory_ids: Sequence[str]) -> None:
        """Count ``memory_ids`` (best first) as used now for the LRU cap: the first is the most recently used."""
        self.retention.touch(reversed(list(memory_ids)))

    def get_conversation_history(self, conversation_id: str, max_items: int = 100) -> list[dict[str, Any]]:
        """The last ``max_items`` memories of a conversation, oldest first."""
        self.check("read", "memory.read")
        nodes = self.db.find_nodes(namespace=self.namespace, kind=KIND, tags=[CONV + str(conversation_id)],
                                      order="key")
        return [to_memory(n) for n in nodes[-max_items:]] if max_items else []

    def conversation(self, conversation_id: str, max_items: int = 100) -> list[dict[str, Any]]:
        return self.get_conversation_history(conversation_id, max_items)

    def list_memories(self, conversation_id: str | None = None, user_id: str | None = None,
                      type: str | None = None) -> list[dict[str, Any]]:
        self.check("read", "memory.read")
        return [to_memory(n) for n in self._nodes(conversation_id, user_id, type)]

    def _nodes(self, conversation_id: str | None = None, user_id: str | None = None,
               type: str | None = None) -> list[Node]:
        return tagged(self.db, self.namespace, conversation_id, user_id, type)

    def count(self) -> int:
        self.check("read", "memory.read")
        return self.db.count_nodes(namespace=self.namespace, kind=KIND)

    def find_by_entity(self, entity_id: str) -> list[str]:
        """Ids of memories that name ``entity_id`` in their metadata (``entities``/``entity_id``)."""
        self.check("read", "memory.read")
        return [n.id for n in sorted(about(self.db, entity_id, self.namespace), key=lambda n: (n.key, n.id))]

    # --- deletes, retention, eviction ------------------------------------------------------
    def _purge(self, ids: Sequence[str], reason: str, erasure: str | None = None) -> int:
        """Delete memories and every vector derived from their text (memory/purge.py)."""
        if not ids:
            return 0
        ids = list(ids)
        result = purge_memories(self.db, ids, reason, self.actor, erasure)
        self.retention.forgotten(ids)
        return int(result["nodes"])

    def _forget(self, ids: Sequence[str], reason: str, detail: dict[str, Any]) -> int:
        """Purge memories of this store and audit it, in one transaction."""
        with self.db.transaction():
            count = self._purge(ids, reason)
            self._audit("memory.forget", self.namespace, {**detail, "forgotten": count})
        return count

    def delete_memory(self, memory_id: str) -> bool:
        self.check("write", "memory.forget")
        node = self.db.get_node(memory_id)
        if node is None or node.kind != KIND or node.namespace != self.namespace:
            return False
        return self._forget([memory_id], "delete_memory", {"memory_id": memory_id}) > 0

    def batch_delete(self, memory_ids: Sequence[str]) -> int:
        self.check("write", "memory.forget")
        nodes = self.db.get_nodes(memory_ids)
        mine = [i for i, n in nodes.items() if n.kind == KIND and n.namespace == self.namespace]
        return self._forget(mine, "batch_delete", {"ids": len(mine)})

    def clear_memory(self, conversation_id: str | None = None, user_id: str | None = None) -> int:
        """Delete a conversation's (or user's) memories; with neither, every memory of this store."""
        self.check("write", "memory.forget")
        given = {k: v for k, v in (("conversation_id", conversation_id), ("user_id", user_id)) if v is not None}
        return self._forget([n.id for n in self._nodes(conversation_id, user_id)], "clear_memory", given)

    def forget(self, memory_id: str | None = None, conversation_id: str | None = None,
               days_old: int | float | None = None, user_id: str | None = None) -> int:
        """Delete by id, by conversation/user, or everything older than ``days_old`` (combined: all must match)."""
        self.check("write", "memory.forget")
        if memory_id is None and conversation_id is None and days_old is None and user_id is None:
            raise ValidationError("forget needs memory_id, conversation_id, user_id or days_old; "
                                  "use clear_memory() to delete everything")
        given = {k: v for k, v in (("memory_id", memory_id), ("conversation_id", conversation_id),
                                   ("user_id", user_id), ("days_old", days_old)) if v is not None}
        candidates = to_forget(self.db, self.namespace, memory_id, conversation_id, user_id, days_old)
        if candidates is None:
            return 0
        return self._forget([n.id for n in candidates], "forget", given)

    # --- reports ---------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        self.check("read", "memory.read")
        convs = set()
        users = set()
        for node in self.db.find_nodes(namespace=self.namespace, kind=KIND, with_content=False):
            props = node.props or {}
            if props.get("conversation_id") is not None:
                convs.add(props["conversation_id"])
            if props.get("user_id") is not None:
                users.add(props["user_id"])
        return {
            "namespace": self.namespace, "total_memories": self.count(), "conversations": len(convs),
            "users": len(users), "max_memory_size": self.max_memory_size,
            "retention_days": self.retention_days,
            "evicted": self.retention.evictions(),
            "vector_store": self.vector_store.backend if self.vector_store is not None else "workspace",
        }

    def health(self) -> dict[str, Any]:
        self.check("read", "memory.read")
        integrity = self.db.check_integrity()
        return {"status": "ok" if integrity == "ok" else "degraded", "store": integrity,
                "memories": self.count(), "embedder": self.workspace.model_name,
                "dimension": self.dimension}

    # --- export / import -------------------------------------------------------------------
    def export(self, conversation_id: str | None = None, format: str = "json", destination: Any = None,
               type: str | None = None, user_id: str | None = None) -> Any:
        self.check("read", "memory.export")
        nodes = self._nodes(conversation_id, user_id, type)
        out = memory_io.export_nodes(self.namespace, nodes, format, destination)
        copies.record(self.db, f"memory.export.{format}", destination, [self.namespace], [n.id for n in nodes],
                      self.actor)
        return out

    def import_data(self, data: Any, format: str = "json") -> int:
        """Create new ids and update changed existing ones; returns how many changed. All or nothing: every item
        is checked (and its text embedded) first, then every change lands in one transaction, so a bad item or a
        crash leaves the memory as it was. Imports do not link entities into a graph (seed 003: Markdown
        entities stay provenance). An item whose id an erasure removed, or whose metadata names an erased
        entity, is skipped, never recreated: the count's ``skipped`` lists them."""
        self.check("write", "memory.import")
        items, skipped = memory_io.without_erased(memory_io.parse_import(data, format), self.db)
        access.require_chosen_ids(self.workspace, self.principal, [str(i["id"]) for i in items if i.get("id")],
                                  "memory.import", "a memory id", "import items without ids, or ask a principal "
                                  "who reads everything to import them")
        plan = memory_io.plan_import(items, self.db.get_nodes([i["id"] for i in items if i.get("id")]),
                                     self.namespace, self.places)  # the texts embedded ahead are the glossed ones
        if not plan.new and not plan.changed:
            return memory_io.ImportResult(0, skipped)
        embed_texts(self.db, self.workspace.embedder, plan.texts)  # the slow part, outside the write lock
        with self.db.transaction():
            for node, content, metadata, updated_at in plan.changed:
                self._rewrite(node, content, metadata, updated_at)
            self._write(plan.new)
            self._audit("memory.import", self.namespace, {"imported": len(plan.changed) + len(plan.new)})
        return memory_io.ImportResult(len(plan.changed) + len(plan.new), skipped)

    def require(self, memory_id: str) -> dict[str, Any]:
        """The memory, or NotFoundError (after the read check, so nothing is revealed to a non-reader)."""
        found = self.get_memory(memory_id)
        if found is None:
            raise NotFoundError(f"no memory {memory_id!r} in {self.namespace}", id=memory_id)
        return found


def workspace_memory(ws: Workspace, namespace: str = "default", principal: str | None = None) -> AgentMemory:
    """A workspace's memory store ``memory:<namespace>`` as ``principal`` uses it (no eviction or expiry: limits are
    the application's policy): what the CLI, MCP and the web console call it through."""
    return AgentMemory(workspace=ws, namespace=namespace, max_memory_size=None, retention_policy="unlimited",
                       principal=access.effective_principal(ws, principal))
