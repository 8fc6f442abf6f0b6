"""How LangGraph checkpoints and pending writes are laid out as memory nodes (one node each), found by exact tags:
a thread, a thread's checkpoint namespace, one checkpoint, one write."""
from __future__ import annotations

from typing import Any, Sequence

from ...memory.records import new_id
from ...model import Node
from .common import MemoryRoom, pack, tag, unpack

CHECKPOINT = "langgraph_checkpoint"
WRITE = "langgraph_write"


def thread_tag(thread_id: str) -> str:
    return tag("lgt", thread_id)


def ns_tag(thread_id: str, checkpoint_ns: str) -> str:
    return tag("lgn", thread_id, checkpoint_ns)


def checkpoint_tag(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return tag("lgc", thread_id, checkpoint_ns, checkpoint_id)


def write_tag(thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int) -> str:
    return tag("lgw", thread_id, checkpoint_ns, checkpoint_id, task_id, idx)


def typed(value: tuple[str, bytes]) -> list[str]:
    return [value[0], pack(value[1])]


def untyped(value: Sequence[str]) -> tuple[str, bytes]:
    return value[0], unpack(value[1])


def subjects(config: dict[str, Any], metadata: dict[str, Any] | None, keys: Sequence[str]) -> list[str]:
    """What a checkpoint is about: its thread and the values of the subject keys (``user_id``) found in its
    config or metadata; an erasure of any of them removes it."""
    found = [str(config["configurable"]["thread_id"])]
    for source in (config.get("configurable") or {}, config.get("metadata") or {}, metadata or {}):
        found += [str(source[k]) for k in keys if isinstance(source.get(k), (str, int)) and source.get(k) != ""]
    return found


def checkpoint_node(room: MemoryRoom, old: Node | None, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                    parent_id: str | None, checkpoint: tuple[str, bytes], metadata: tuple[str, bytes],
                    run_id: Any, entities: Sequence[str]) -> Node:
    data = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id,
            "parent_id": parent_id, "checkpoint": typed(checkpoint), "metadata": typed(metadata),
            "run_id": str(run_id) if run_id is not None else None}
    tags = [thread_tag(thread_id), ns_tag(thread_id, checkpoint_ns),
            checkpoint_tag(thread_id, checkpoint_ns, checkpoint_id)]
    return room.node(old.id if old is not None else new_id(), CHECKPOINT, "", entities, data, tags, state=True)


def write_node(room: MemoryRoom, old: Node | None, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
               task_id: str, idx: int, channel: str, value: tuple[str, bytes], task_path: str,
               entities: Sequence[str]) -> Node:
    data = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id,
            "task_id": task_id, "idx": idx, "channel": channel, "value": typed(value), "task_path": task_path}
    tags = [thread_tag(thread_id), checkpoint_tag(thread_id, checkpoint_ns, checkpoint_id),
            write_tag(thread_id, checkpoint_ns, checkpoint_id, task_id, idx)]
    return room.node(old.id if old is not None else new_id(), WRITE, "", entities, data, tags, state=True)


def copied(room: MemoryRoom, node: Node, target: str) -> Node:
    """A checkpoint or write node of another thread as a new node of ``target``."""
    data = {**node.props["langgraph"], "thread_id": target}
    entities = [target, *(e for e in node.props["metadata"]["entities"] if e != node.props["langgraph"]["thread_id"])]
    ns, cid = data["checkpoint_ns"], data["checkpoint_id"]
    if node.props["metadata"]["type"] == CHECKPOINT:
        tags = [thread_tag(target), ns_tag(target, ns), checkpoint_tag(target, ns, cid)]
    else:
        tags = [thread_tag(target), checkpoint_tag(target, ns, cid),
                write_tag(target, ns, cid, data["task_id"], data["idx"])]
    return room.node(new_id(), node.props["metadata"]["type"], "", entities, data, tags, state=True)
