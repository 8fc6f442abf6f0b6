"""Export and import of memories as JSON text, a dict, or Markdown files (see ``markdown.py``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embed.cache import embed_texts
from ..errors import ValidationError
from ..model import Node, to_utc_iso
from . import markdown
from .records import KIND, build_node, now_iso, to_memory

if TYPE_CHECKING:
    from .service import AgentMemory

FORMATS = ("json", "dict", "markdown")
SCHEMA = "agentcontext.memory.v1"


def export_nodes(memory: "AgentMemory", nodes: list[Node], format: str, destination: Any) -> Any:
    if format not in FORMATS:
        raise ValidationError(f"unknown export format {format!r}; use json, dict or markdown", format=format)
    if format == "markdown":
        if destination is not None:
            return markdown.write_folder(nodes, Path(destination))
        if len(nodes) != 1:
            raise ValidationError(f"the selection holds {len(nodes)} memories; Markdown text is returned for exactly "
                                  "one, so narrow it (type=, conversation_id=) or pass destination= for a folder",
                                  count=len(nodes))
        return markdown.render(nodes[0])
    data = {"schema": SCHEMA, "namespace": memory.namespace, "memories": [to_memory(n) for n in nodes]}
    for item in data["memories"]:
        item.pop("memory_id", None)
        item.pop("timestamp", None)
    if format == "dict":
        return data
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if destination is not None:
        markdown.atomic_write(Path(destination), text)
    return text


def _parse_items(data: Any, format: str) -> list[dict[str, Any]]:
    if format == "json":
        if isinstance(data, Path) or (isinstance(data, str) and not data.lstrip().startswith(("{", "["))):
            data = Path(data).read_text(encoding="utf-8")
        try:
            data = json.loads(data) if isinstance(data, (str, bytes)) else data
        except json.JSONDecodeError as exc:
            raise ValidationError(f"import data is not valid JSON: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("memories")
    if not isinstance(data, list):
        raise ValidationError("import data must be a list of memories or a dict with a 'memories' list")
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        if isinstance(raw, str):
            raw = {"content": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("content"), str) or not raw["content"].strip():
            raise ValidationError(f"memory {i}: needs a non-empty 'content' string", index=i)
        if raw.get("metadata") is not None and not isinstance(raw["metadata"], dict):
            raise ValidationError(f"memory {i}: 'metadata' must be a mapping", index=i)
        for field in ("created_at", "updated_at"):
            if raw.get(field) is not None:
                to_utc_iso(raw[field])
        mid = raw.get("id")
        if mid is not None:
            if mid in seen:
                raise ValidationError(f"memory id {mid!r} appears twice in the import", id=mid)
            seen.add(mid)
        items.append(raw)
    return items


def import_any(memory: "AgentMemory", data: Any, format: str) -> int:
    """Validate everything, then create new ids and update changed existing ones; returns how many changed."""
    if format not in FORMATS:
        raise ValidationError(f"unknown import format {format!r}; use json, dict or markdown", format=format)
    if format == "markdown":
        items = markdown.read_items(Path(data) if not isinstance(data, Path) else data)
    else:
        items = _parse_items(data, format)
    return apply_items(memory, items)


def apply_items(memory: "AgentMemory", items: list[dict[str, Any]]) -> int:
    """All or nothing: every item is checked (and its text embedded) first, then every change lands in one
    transaction, so a bad item or a crash leaves the memory exactly as it was."""
    ids = [i["id"] for i in items if i.get("id")]
    existing = memory.db.get_nodes(ids)
    for mid, node in existing.items():
        if node.kind != KIND or node.namespace != memory.namespace:
            raise ValidationError(f"id {mid!r} belongs to a {node.kind} in {node.namespace}, not to this memory store",
                                  id=mid)
    new: list[dict[str, Any]] = []
    rewrites: list[tuple[Node, str, dict[str, Any], str]] = []
    texts: list[str] = []
    for item in items:
        node = existing.get(item.get("id") or "")
        props = (node.props or {}) if node is not None else {}
        meta = item.get("metadata") or {}
        # Checks the text and metadata exactly as the write will, before anything is written.
        text = build_node(memory.namespace, item["content"], meta, item.get("conversation_id"),
                          item.get("user_id")).embed_text or ""
        if node is None:
            texts.append(text)
            new.append({k: item.get(k) for k in ("id", "content", "metadata", "conversation_id", "user_id",
                                                  "created_at", "updated_at")})
            continue
        if node.content == item["content"] and (props.get("metadata") or {}) == meta:
            continue
        file_updated = item.get("updated_at")
        updated = str(file_updated) if file_updated is not None and str(file_updated) != str(
            props.get("updated_at")) else now_iso()
        texts.append(text)
        rewrites.append((node, item["content"], dict(meta), updated))
    if not new and not rewrites:
        return 0
    embed_texts(memory.db, memory.workspace.embedder, texts)  # the slow part, outside the write lock
    with memory.db.transaction():
        for node, content, meta, updated in rewrites:
            memory._rewrite(node, content, meta, updated)
        if new:
            memory.batch_store(new)
    return len(rewrites) + len(new)
