"""How a LangGraph store item is laid out as a memory node, and the reads the store answers from those nodes."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from langgraph.store.base import Item, SearchItem
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ...memory.records import new_id, now_iso
from ...model import Node
from .common import MemoryRoom, tag

ITEM = "langgraph_item"


def item_tag(namespace: Sequence[str], key: str) -> str:
    return tag("lgi", *namespace, "\x1e", key)


def prefix_tag(prefix: Sequence[str]) -> str:
    return tag("lgp", *prefix)


def expiry(ttl: float | None) -> str | None:
    return (datetime.now(timezone.utc) + timedelta(minutes=ttl)).isoformat() if ttl else None


def expired(node: Node, now: str) -> bool:
    at = (node.props.get("langgraph") or {}).get("expires_at")
    return bool(at) and at <= now


def index_texts(value: dict[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts an item's index fields hold (``$`` is the whole value as JSON)."""
    texts: list[str] = []
    for field in fields:
        if field == "$":
            texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
        else:
            texts.extend(t for t in get_text_at_path(value, tokenize_path(field)) if t)
    return texts


def build(room: MemoryRoom, namespace: tuple[str, ...], key: str, value: dict[str, Any], fields: list[str] | None,
          ttl: float | None, old: Node | None, store_fields: Sequence[str] = ("$",)) -> Node:
    """The node for a put: a new memory, or a new version of the item's node (keeping its id and creation). Its
    text (what recall and the text index read) is the indexed fields' text, or the value as JSON."""
    now = now_iso()
    created = (old.props or {}).get("created_at") if old is not None else now
    data = {"namespace": list(namespace), "key": key, "value": value, "fields": fields, "ttl": ttl,
            "expires_at": expiry(ttl)}
    tags = [item_tag(namespace, key), *(prefix_tag(namespace[:n]) for n in range(1, len(namespace) + 1))]
    texts = index_texts(value, [f for f in (fields or store_fields) if f != "$"]) if fields is not False else []
    content = "\n".join(texts) or json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return room.node(old.id if old is not None else new_id(), ITEM, content, namespace, data, tags,
                     created=created, updated=now)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def to_item(node: Node, score: float | None = None, search: bool = False) -> Item:
    props = node.props or {}
    data = props["langgraph"]
    args = dict(namespace=tuple(data["namespace"]), key=data["key"], value=data["value"],
                created_at=_when(props["created_at"]), updated_at=_when(props["updated_at"]))
    return SearchItem(**args, score=score) if search else Item(**args)


def refreshed(node: Node) -> Node | None:
    """The node with its TTL restarted, or None when it has no TTL."""
    data = (node.props or {}).get("langgraph") or {}
    if not data.get("ttl"):
        return None
    props = {**node.props, "langgraph": {**data, "expires_at": expiry(data["ttl"])}}
    return Node(id=node.id, kind=node.kind, namespace=node.namespace, key=node.key, content=node.content,
                props=props, tags=list(node.tags))
