"""``AgentContextSaver``: a LangGraph checkpointer (``BaseCheckpointSaver``) on an agentcontext store.

Checkpoints and pending writes are thread-state records of ``memory:<name>`` (kind ``memory_state``, kept out of
recall; ``threads.py``), about their thread and the
``subject_keys`` (``user_id``) of their config, so ``agentcontext erase <user>`` or ``delete_thread`` removes
them with every version and vector. Reads need ``read`` on ``memory:<name>``, writes need ``write``.
"""
from __future__ import annotations

import asyncio
import random
from contextlib import contextmanager
from typing import Any, AsyncIterator, Iterator, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (WRITES_IDX_MAP, BaseCheckpointSaver, ChannelVersions, Checkpoint,
                                       CheckpointMetadata, CheckpointTuple, SerializerProtocol, get_checkpoint_id,
                                       get_checkpoint_metadata, writes_sort_key)

from ...errors import ValidationError
from ...memory.records import TYPE
from ...model import Node
from ...workspace import Workspace
from . import threads as t
from .common import MemoryRoom, opened


class AgentContextSaver(BaseCheckpointSaver[str]):
    """Checkpoints of LangGraph threads kept in ``ws`` as memories of ``memory:<name>``, used as ``principal``."""

    def __init__(self, ws: Workspace, *, name: str = "default", principal: str | None = None,
                 subject_keys: Sequence[str] = ("user_id",), serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.ws = ws
        self.room = MemoryRoom(ws, name, principal)
        self.subject_keys = tuple(subject_keys)

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, *, name: str = "default", principal: str | None = None,
                         subject_keys: Sequence[str] = ("user_id",)) -> Iterator["AgentContextSaver"]:
        """A saver on ``url`` (``sqlite:///path``, a path, ``:memory:`` or ``postgresql://...``), closed on exit."""
        with opened(url) as ws:
            yield cls(ws, name=name, principal=principal, subject_keys=subject_keys)

    def setup(self) -> None:
        """Nothing to create: the agentcontext store brings its schema up to date when opened."""

    # --- reads ---------------------------------------------------------------------------------------
    def _tuple(self, node: Node) -> CheckpointTuple:
        data = node.props["langgraph"]
        thread_id, ns, cid = data["thread_id"], data["checkpoint_ns"], data["checkpoint_id"]
        writes = [w.props["langgraph"] for w in self.room.find(TYPE + t.WRITE, t.checkpoint_tag(thread_id, ns, cid),
                                                                with_content=False, state=True)]
        writes.sort(key=lambda w: writes_sort_key(w["task_path"], w["task_id"], w["idx"]))
        parent = data.get("parent_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}},
            checkpoint=self.serde.loads_typed(t.untyped(data["checkpoint"])),
            metadata=self.serde.loads_typed(t.untyped(data["metadata"])),
            parent_config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
            if parent else None,
            pending_writes=[(w["task_id"], w["channel"], self.serde.loads_typed(t.untyped(w["value"])))
                            for w in writes],
        )

    def _checkpoints(self, *tags: str) -> list[Node]:
        nodes = self.room.find(TYPE + t.CHECKPOINT, *tags, with_content=False, state=True)
        return sorted(nodes, key=lambda n: n.props["langgraph"]["checkpoint_id"], reverse=True)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self.room.check("read", "langgraph_checkpoint_get")
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        cid = get_checkpoint_id(config)
        found = self._checkpoints(t.checkpoint_tag(thread_id, ns, cid) if cid else t.ns_tag(thread_id, ns))
        return self._tuple(found[0]) if found else None

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        self.room.check("read", "langgraph_checkpoint_list")
        conf = (config or {}).get("configurable") or {}
        tags = [t.thread_tag(str(conf["thread_id"]))] if conf.get("thread_id") is not None else []
        if tags and conf.get("checkpoint_ns") is not None:
            tags = [t.ns_tag(str(conf["thread_id"]), conf["checkpoint_ns"])]
        want_id = conf.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        nodes = self._checkpoints(*tags)
        if not tags:  # every thread: newest first within each thread, threads in a stable order
            nodes.sort(key=lambda n: n.props["langgraph"]["thread_id"])
        for node in nodes:
            data = node.props["langgraph"]
            if want_id and data["checkpoint_id"] != want_id:
                continue
            if before_id and data["checkpoint_id"] >= before_id:
                continue
            if filter:
                metadata = self.serde.loads_typed(t.untyped(data["metadata"]))
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            if limit is not None and limit <= 0:
                return
            if limit is not None:
                limit -= 1
            yield self._tuple(node)

    # --- writes --------------------------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        self.room.check("write", "langgraph_checkpoint_put")
        conf = config["configurable"]
        if conf.get("thread_id") is None:
            raise ValidationError("a checkpoint's config needs configurable.thread_id")
        thread_id, ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        meta = get_checkpoint_metadata(config, metadata)
        blob, meta_blob = self.serde.dumps_typed(checkpoint), self.serde.dumps_typed(meta)
        with self.room.store.transaction():  # the writer lock first: a checkpoint id names one node
            old = self.room.find(t.checkpoint_tag(thread_id, ns, checkpoint["id"]), with_content=False, state=True)
            node = t.checkpoint_node(self.room, old[0] if old else None, thread_id, ns, checkpoint["id"],
                                     conf.get("checkpoint_id"), blob, meta_blob, meta.get("run_id"),
                                     t.subjects(config, meta, self.subject_keys))
            self.room.store.put_nodes([node], actor=self.room.principal)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self.room.check("write", "langgraph_checkpoint_put_writes")
        conf = config["configurable"]
        thread_id, ns, cid = str(conf["thread_id"]), conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        entities = t.subjects(config, None, self.subject_keys)
        blobs = [(channel, WRITES_IDX_MAP.get(channel, i), self.serde.dumps_typed(value))
                 for i, (channel, value) in enumerate(writes)]
        with self.room.store.transaction():  # the writer lock first: (task, idx) names one write
            nodes = []
            for channel, idx, blob in blobs:
                old = self.room.find(t.write_tag(thread_id, ns, cid, task_id, idx), with_content=False, state=True)
                if old and idx >= 0:
                    continue
                nodes.append(t.write_node(self.room, old[0] if old else None, thread_id, ns, cid, task_id, idx,
                                          channel, blob, task_path, entities))
            if nodes:
                self.room.store.put_nodes(nodes, actor=self.room.principal)

    def delete_thread(self, thread_id: str) -> None:
        """Purge every checkpoint and write of the thread (every version; no byte of them stays in the files)."""
        self.room.check("write", "langgraph_delete_thread", str(thread_id))
        gone = [n.id for n in self.room.find(t.thread_tag(str(thread_id)), with_content=False, state=True)]
        self.room.purge(gone, reason="langgraph delete_thread")
        self.room.audit("langgraph_delete_thread", {"thread_id": str(thread_id), "nodes": len(gone)})

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Purge the checkpoints written by these runs, with their writes."""
        self.room.check("write", "langgraph_delete_for_runs")
        runs = {str(r) for r in run_ids}
        doomed = [n for n in self._checkpoints() if n.props["langgraph"].get("run_id") in runs]
        self._purge_checkpoints(doomed, "langgraph delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another."""
        self.room.check("write", "langgraph_copy_thread", str(target_thread_id))
        nodes = self.room.find(t.thread_tag(str(source_thread_id)), with_content=False, state=True)
        copies = [t.copied(self.room, n, str(target_thread_id)) for n in nodes]
        if copies:
            self.room.store.put_nodes(copies, actor=self.room.principal)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (and its writes); ``delete``: remove all."""
        if strategy not in ("keep_latest", "delete"):
            raise ValidationError(f"prune strategy {strategy!r} is not one of 'keep_latest', 'delete'")
        self.room.check("write", "langgraph_prune")
        for thread_id in thread_ids:
            nodes = self._checkpoints(t.thread_tag(str(thread_id)))
            kept: set[str] = set()
            doomed = []
            for n in nodes:  # newest first
                ns = n.props["langgraph"]["checkpoint_ns"]
                if strategy == "keep_latest" and ns not in kept:
                    kept.add(ns)
                else:
                    doomed.append(n)
            self._purge_checkpoints(doomed, "langgraph prune")

    def _purge_checkpoints(self, nodes: list[Node], reason: str) -> None:
        ids = []
        for n in nodes:
            d = n.props["langgraph"]
            ids.append(n.id)
            ids += [w.id for w in self.room.find(TYPE + t.WRITE, t.checkpoint_tag(d["thread_id"], d["checkpoint_ns"],
                                                                                   d["checkpoint_id"]),
                                                 with_content=False, state=True)]
        self.room.purge(ids, reason=reason)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """As the SQLite saver: zero-padded counter and a random tie-breaker, so versions sort as strings."""
        current_v = 0 if current is None else current if isinstance(current, int) else int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # --- async: the same calls on a worker thread (the store serialises its connection with a lock) ----------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for item in found:
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
