"""A conversation item of the OpenAI Agents SDK (a Responses API input item, a JSON object) as a memory: the words a
person would recall it by become the memory's text, the speaker its title, and the item itself, unchanged, is kept in
the memory's metadata so ``get_items`` returns exactly what ``add_items`` was given."""
from __future__ import annotations

import json
from typing import Any

from ...errors import ValidationError

ITEM = "session_item"  # the metadata key holding the item
TYPE = "session_item"  # the memories' metadata type (tag ``type:session_item``)


def check_item(item: Any, index: int) -> dict[str, Any]:
    """The item as stored: a JSON object (what the SDK's own sessions accept); anything else raises."""
    if not isinstance(item, dict):
        raise ValidationError(f"session item {index} must be a dict (a Responses API input item), got "
                              f"{type(item).__name__}", index=index)
    try:
        json.dumps(item)
    except (TypeError, ValueError) as exc:  # the SDK's sessions raise TypeError too: keep the type callers catch
        raise TypeError(f"session item {index} is not JSON-serialisable: {exc}") from exc
    return item


def _parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "refusal", "transcript"):
                    if isinstance(part.get(key), str):
                        out.append(part[key])
            elif isinstance(part, str):
                out.append(part)
    return out


def item_text(item: dict[str, Any]) -> str:
    """The words of an item: a message's text, a tool call's name and arguments, a tool result's output, a
    reasoning summary; the item's JSON when it has no words of its own (a memory needs text)."""
    texts = _parts(item.get("content"))
    if item.get("type") == "function_call":
        texts.append(f"{item.get('name', '')}({item.get('arguments', '')})")
    if isinstance(item.get("output"), (str, list)):
        texts += _parts(item["output"])
    if isinstance(item.get("summary"), list):
        texts += _parts(item["summary"])
    text = "\n".join(t for t in texts if t.strip())
    return text if text.strip() else json.dumps(item, ensure_ascii=False, sort_keys=True)


def speaker(item: dict[str, Any]) -> str:
    role = item.get("role")
    if isinstance(role, str) and role:
        return role
    kind = item.get("type")
    return kind if isinstance(kind, str) and kind else "item"


def to_memory(item: dict[str, Any], user_id: str | None) -> dict[str, Any]:
    """The ``batch_store`` item for one conversation item (its conversation is set by the caller)."""
    metadata: dict[str, Any] = {"type": TYPE, "speaker": speaker(item), ITEM: item}
    if user_id is not None:
        metadata["entities"] = [user_id]  # an erasure of the user finds these memories (erasure/subject.py)
    return {"content": item_text(item), "metadata": metadata, "user_id": user_id}


def from_memory(memory: dict[str, Any]) -> dict[str, Any] | None:
    """The item a memory holds (None for a memory of the conversation not written by a session)."""
    item = (memory.get("metadata") or {}).get(ITEM)
    return item if isinstance(item, dict) else None
