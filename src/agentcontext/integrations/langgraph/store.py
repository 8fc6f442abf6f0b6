"""``AgentContextStore``: LangGraph's long-term memory store (``BaseStore``) on an agentcontext store.

Items are memories of the memory store ``memory:<name>`` (``items.py``): ``get``/``search``/``list_namespaces``
need ``read`` on it and ``put``/``delete`` need ``write`` for the store's principal. ``index`` turns on semantic
search: with agentcontext's embedder (leave ``embed`` out) a result's score is calibrated as memory recall's, from
meaning (cosine) and the query's keywords the item holds, in [0, 1]; with your own ``embed`` (and ``dims``) it is
the cosine similarity, as LangGraph's own stores give.
TTL is in minutes (``ttl={"default_ttl": ..., "refresh_on_read": True}``); expired items are never returned and
``sweep_ttl()`` purges them.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import re
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterable, Iterator

from langgraph.store.base import (BaseStore, GetOp, IndexConfig, ListNamespacesOp, Op, PutOp, Result, SearchOp,
                                  TTLConfig)
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import _compare_values, _does_match

from ...engine.fusion import FusionWeights, keyword_coverage, keyword_query
from ...errors import ValidationError
from ...memory.records import TYPE, now_iso
from ...model import Node
from ...workspace import Workspace
from . import items
from .common import MemoryRoom, opened
from .sweeper import Sweeper
from .vectors import embedder_for, vectors

_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def _at(value: Any, key: str) -> Any:
    """The value at a filter key: the top-level key itself, else a dotted path into nested objects."""
    if key in value:
        return value[key]
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value

WEIGHTS = FusionWeights()  # our hybrid score, as memory recall's: RELEVANCE(cosine + keyword weight * coverage)


class AgentContextStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items live in ``ws`` as memories of ``memory:<name>``, used as
    ``principal`` (None: the workspace owner)."""

    supports_ttl = True

    def __init__(self, ws: Workspace, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 name: str = "default", principal: str | None = None) -> None:
        self.room = MemoryRoom(ws, name, principal)
        self.ws = ws
        self.index_config = dict(index) if index else None
        self.ttl_config = ttl
        self.embedder, self.hybrid = embedder_for(ws, self.index_config) if self.index_config else (None, False)
        # kept: LangGraph's own store reads the caller's embeddings object (any LangChain Embeddings) this way
        self.embeddings = getattr(self.embedder, "embeddings", self.embedder)  # the caller's embed, as given
        config = self.index_config or {}
        self.fields = list(config.get("fields") or config.get("text_fields") or ["$"])  # text_fields: SQLite's name
        self._sweeper = Sweeper(lambda: AgentContextStore.sweep_ttl(self))

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                         name: str = "default", principal: str | None = None) -> Iterator["AgentContextStore"]:
        """A store on ``url`` (``sqlite:///path``, a path, ``:memory:`` or ``postgresql://...``), closed on exit."""
        with opened(url) as ws:
            yield cls(ws, index=index, ttl=ttl, name=name, principal=principal)

    def setup(self) -> None:
        """Nothing to create: the agentcontext store brings its schema up to date when opened."""

    # --- batch ---------------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread, so embedding and the store's I/O do not block the event loop."""
        return await asyncio.to_thread(self._batch, list(ops))

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        levels = {"write" if isinstance(op, PutOp) else "read" for op in ops}
        for level in sorted(levels):
            self.room.check(level, "langgraph_store_" + ("put" if level == "write" else "read"))
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        if puts:
            self._apply(list(puts.values()))
        return results

    # --- reads ---------------------------------------------------------------------------------------
    def _live(self, *tags: str, with_content: bool = True) -> list[Node]:
        now = now_iso()
        return [n for n in self.room.find(TYPE + items.ITEM, *tags, with_content=with_content)
                if not items.expired(n, now)]

    def _refresh(self, nodes: list[Node], asked: bool | None) -> None:
        refresh = asked if asked is not None else bool((self.ttl_config or {}).get("refresh_on_read", True))
        if refresh:
            fresh = [r for r in (items.refreshed(n) for n in nodes) if r is not None]
            if fresh:
                self.room.store.put_nodes(fresh, actor=self.room.principal)

    def _get(self, op: GetOp) -> Any:
        found = self._live(items.item_tag(op.namespace, op.key))
        if not found:
            return None
        self._refresh(found[:1], op.refresh_ttl)
        return items.to_item(found[0])

    def _search(self, op: SearchOp) -> list[Any]:
        prefix = tuple(op.namespace_prefix)
        nodes = self._live(items.prefix_tag(prefix)) if prefix else self._live()
        if op.filter:
            for k in op.filter:
                if not isinstance(k, str) or not _FILTER_KEY.match(k):
                    raise ValidationError(f"Invalid filter key: {str(k)[:80]!r}; a filter key holds only letters, "
                                          "digits, '_', '-' and '.' (a dot steps into a nested object)")
            nodes = [n for n in nodes if all(_compare_values(_at(n.props["langgraph"]["value"], k), v)
                                             for k, v in op.filter.items())]
        nodes.sort(key=lambda n: n.props["updated_at"], reverse=True)
        if not (op.query and self.embedder is not None):
            kept = nodes[op.offset: op.offset + op.limit]
            self._refresh(kept, op.refresh_ttl)
            return [items.to_item(n, search=True) for n in kept]
        scores = self._scores(op.query, nodes)
        ranked = sorted((n for n in nodes if n.id in scores), key=lambda n: scores[n.id], reverse=True)
        ranked += [n for n in nodes if n.id not in scores]  # nothing to embed: after the scored ones, unscored
        kept = ranked[op.offset: op.offset + op.limit]
        self._refresh(kept, op.refresh_ttl)
        return [items.to_item(n, scores.get(n.id), search=True) for n in kept]

    def _scores(self, query: str, nodes: list[Node]) -> dict[str, float]:
        owners: list[str] = []
        texts: list[str] = []
        for n in nodes:
            data = n.props["langgraph"]
            if data.get("fields") is False:
                continue
            for text in items.index_texts(data["value"], data.get("fields") or self.fields):
                owners.append(n.id)
                texts.append(text)
        if not texts:
            return {}
        q = vectors(self.room.store, self.embedder, [query])[0]
        sims = vectors(self.room.store, self.embedder, texts) @ q
        best: dict[str, float] = {}
        for owner, sim in zip(owners, sims.tolist()):
            best[owner] = max(best.get(owner, -1.0), sim)
        if not self.hybrid:
            return best
        keywords = keyword_query(query)
        return {n.id: float(WEIGHTS.calibration(best[n.id] + WEIGHTS.keyword * keyword_coverage(keywords, n.content)))
                for n in nodes if n.id in best}

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {tuple(n.props["langgraph"]["namespace"]) for n in self._live(with_content=False)}
        if op.match_conditions:
            spaces = {s for s in spaces if all(_does_match(c, s) for c in op.match_conditions)}
        if op.max_depth is not None:
            spaces = {s[: op.max_depth] for s in spaces}
        return sorted(spaces)[op.offset: op.offset + op.limit]

    # --- writes --------------------------------------------------------------------------------------
    def _apply(self, puts: list[PutOp]) -> None:
        self._embed(puts)
        gone: list[str] = []
        nodes: list[Node] = []
        with self.room.store.transaction():  # the writer lock first: two writers of one key make one item
            for op in puts:
                old = self.room.find(items.item_tag(op.namespace, op.key), with_content=False)
                if op.value is None:
                    gone += [n.id for n in old]
                    continue
                fields = None if op.index is None else (False if op.index is False else list(op.index))
                ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
                nodes.append(items.build(self.room, tuple(op.namespace), op.key, dict(op.value), fields, ttl,
                                         old[0] if old else None, self.fields))
            if nodes:
                self.room.store.put_nodes(nodes, actor=self.room.principal)
            self.room.purge(gone, reason="langgraph store delete", scrub=False)
            self.room.audit("langgraph_store_put", {"put": len(nodes), "deleted": len(gone)})
        if gone:
            self.room.store.scrub(strict=False)

    def _embed(self, puts: list[PutOp]) -> None:
        """Embed the indexed text of the items written now, before the write's transaction (vectors are cached in
        the store by text and model), so a search finds them ready (a text it finds without one is embedded then)."""
        if self.embedder is None:
            return
        texts = [t for op in puts if op.value is not None and op.index is not False
                 for t in items.index_texts(dict(op.value), list(op.index) if op.index else self.fields)]
        if texts:
            vectors(self.room.store, self.embedder, texts)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Purge expired items every ``sweep_interval_minutes`` (default: the ttl config's, else 5) on a daemon
        thread, until ``stop_ttl_sweeper``; a store without a ttl config has nothing to sweep."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        interval = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        return self._sweeper.start(float(interval))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        return self._sweeper.stop(timeout)

    def sweep_ttl(self) -> int:
        """Purge the expired items; returns how many went."""
        self.room.check("write", "langgraph_store_sweep")
        now = now_iso()
        gone = [n.id for n in self.room.find(TYPE + items.ITEM, with_content=False) if items.expired(n, now)]
        self.room.purge(gone, reason="langgraph store ttl")
        return len(gone)


class AsyncAgentContextStore(AsyncBatchedBaseStore, AgentContextStore):
    """The same store for ``async`` code, built like LangGraph's ``AsyncSqliteStore``: an ``AsyncBatchedBaseStore``,
    so the calls made in one tick of the event loop run as one batch (one transaction, one scrub) on a worker
    thread. Build it inside a running loop (``async with AsyncAgentContextStore.from_conn_string(url)``); its sync
    methods work from other threads and refuse to run inside the loop, as LangGraph's do."""

    def __init__(self, ws: Workspace, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 name: str = "default", principal: str | None = None) -> None:
        AgentContextStore.__init__(self, ws, index=index, ttl=ttl, name=name, principal=principal)
        # AsyncBatchedBaseStore.__init__ (it calls super().__init__() with no arguments, which ours needs)
        self._loop = asyncio.get_running_loop()
        self._aqueue: asyncio.Queue = asyncio.Queue()
        self._task = None
        self._ensure_task()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, url: str, *, index: IndexConfig | None = None,  # type: ignore[override]
                               ttl: TTLConfig | None = None, name: str = "default",
                               principal: str | None = None) -> AsyncIterator["AsyncAgentContextStore"]:
        with opened(url) as ws:
            yield cls(ws, index=index, ttl=ttl, name=name, principal=principal)

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing to create (as ``AgentContextStore.setup``)."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Refused inside the store's event loop (use ``abatch`` there); from another thread it runs there."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            raise asyncio.InvalidStateError(f"Synchronous calls to {type(self).__name__} detected in the main event "
                                            "loop; use the async methods there (await store.abatch(...), aput, aget)")
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), self._loop).result()

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await asyncio.to_thread(AgentContextStore.sweep_ttl, self)
